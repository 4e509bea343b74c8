/**
 * The scripted agent: the official MCP client (`@modelcontextprotocol/client`
 * 2.x) over real stdio to `postern mcp` of this very CLI — the process an
 * agent host would launch, started with the absolute path of the CLI and the
 * demo's `POSTERN_HOME`. It lists tools once and keeps planning against that
 * listing (a long-running agent): a `tools/list_changed`
 * notification is recorded, not acted on, until the story re-lists.
 *
 * Everything the agent received is kept (`received`), so the demo can check
 * that no credential reached it in any form.
 */
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { LISTING_MEMORY_ENV } from '../mcp/remembered-listing.js';
import { VERSION } from '../version.js';

export interface AgentResult {
  readonly isError: boolean;
  readonly structured: Record<string, unknown>;
  readonly text: string;
}

export interface ListedTool {
  readonly name: string;
  readonly revision: number | null;
  readonly required: readonly string[];
}

export interface DemoAgent {
  listTools(): Promise<ListedTool[]>;
  call(name: string, args: Record<string, unknown>, plannedRevision?: number): Promise<AgentResult>;
  /** Resolves at the next `notifications/tools/list_changed` after this call. */
  nextListChanged(): Promise<void>;
  /** Every result and listing the agent received, as JSON text. */
  readonly received: readonly string[];
  close(): Promise<void>;
}

interface AgentLaunch {
  /** `process.execPath`. */
  readonly node: string;
  /** Absolute path of the CLI's main.js. */
  readonly cli: string;
  readonly home: string;
}

const REVISION_META = 'dev.postern/revision';

export async function startAgent(launch: AgentLaunch): Promise<DemoAgent> {
  const transport = new StdioClientTransport({
    command: launch.node,
    args: [launch.cli, 'mcp'],
    // The demo's home is gone when it ends: nothing of it is remembered in the user's own home.
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', POSTERN_HOME: launch.home, [LISTING_MEMORY_ENV]: 'off' },
    stderr: 'pipe',
  });
  const received: string[] = [];
  let waiters: (() => void)[] = [];
  const client = new Client(
    { name: 'postern-demo-agent', version: VERSION },
    {
      listChanged: {
        tools: {
          autoRefresh: false,
          debounceMs: 0,
          onChanged: () => {
            const w = waiters;
            waiters = [];
            for (const resolve of w) resolve();
          },
        },
      },
    },
  );
  // The shim's own messages are not part of the story; drain them so it never blocks.
  transport.stderr?.on('data', () => undefined);
  await client.connect(transport);
  return {
    received,
    async listTools() {
      const { tools } = await client.listTools();
      received.push(JSON.stringify(tools));
      return tools.map((t) => {
        const rev = t._meta?.[REVISION_META];
        const required = (t.inputSchema as { required?: unknown }).required;
        return { name: t.name, revision: typeof rev === 'number' ? rev : null, required: Array.isArray(required) ? required.filter((r): r is string => typeof r === 'string') : [] };
      });
    },
    async call(name, args, plannedRevision) {
      const r = await client.callTool({ name, arguments: args, ...(plannedRevision === undefined ? {} : { _meta: { [REVISION_META]: plannedRevision } }) });
      received.push(JSON.stringify(r));
      const content = Array.isArray(r.content) ? (r.content as { type?: unknown; text?: unknown }[]) : [];
      const text = content.map((c) => (c.type === 'text' && typeof c.text === 'string' ? c.text : '')).join('\n');
      const sc = r.structuredContent;
      return { isError: r.isError === true, structured: typeof sc === 'object' && sc !== null ? (sc as Record<string, unknown>) : {}, text };
    },
    nextListChanged: () => new Promise<void>((resolve) => waiters.push(resolve)),
    async close() {
      await client.close().catch(() => undefined);
    },
  };
}
