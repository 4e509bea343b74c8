/**
 * Every MCP protocol version the SDK speaks is told when Postern's tools
 * change across the daemon going away and coming back. The 2026-07-28 era
 * never sends `initialize`: a host asks to hear of changes with a long-lived
 * `subscriptions/listen`, which `postern mcp` acknowledges while the daemon is
 * down and keeps open across daemon restarts (a daemon that stops ends its
 * listens; the shim keeps that end from the client). Real SDK 2.x clients
 * over stdio against the built CLI, one per version, each told through the
 * SDK's own list-changed handling (it re-lists when told).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { childEnv, CLI } from '../helpers/cli.js';
import { install, type Installation } from '../helpers/daemon.js';

/** The modern era, negotiated through `server/discover` (the SDK keeps it apart from the `initialize` list). */
const MODERN = '2026-07-28';
const VERSIONS = [MODERN, ...SUPPORTED_PROTOCOL_VERSIONS];

interface Watched {
  readonly version: string;
  readonly client: Client;
  /** Resolves with the tool names the client re-listed the next time it is told the tools changed. */
  next(): Promise<string[]>;
}

async function watched(home: string, version: string): Promise<Watched> {
  let waiting: ((names: string[]) => void)[] = [];
  const client = new Client(
    { name: `agent-${version}`, version: '1.0.0' },
    {
      // 2026-07-28 is pinned (negotiated by `server/discover`); a 2025-era version is the only one offered in `initialize`.
      ...(version === MODERN ? { versionNegotiation: { mode: { pin: version } } } : { supportedProtocolVersions: [version] }),
      listChanged: { tools: { debounceMs: 0, onChanged: (_e, tools) => { for (const w of waiting.splice(0)) w((tools ?? []).map((t) => t.name)); } } },
    },
  );
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], env: childEnv(home), stderr: 'pipe' }));
  return { version, client, next: () => new Promise((resolve) => (waiting = [...waiting, resolve])) };
}

describe('postern mcp tells every protocol version that the tools changed, daemon down then up', () => {
  let inst: Installation;
  before(async () => {
    inst = await install({ secrets: [] });
    await inst.acceptCatalog({ version: 1, tools: {} });
  });
  after(() => inst.cleanup());

  it('the SDK lists the versions checked here', () => {
    assert.ok(VERSIONS.length >= 5, VERSIONS.join());
  });

  it('hosts started while the daemon is down: the 2026-07-28 listen is acknowledged, and every version is told once the daemon is back', { timeout: 120_000 }, async () => {
    const clients = await Promise.all(VERSIONS.map((v) => watched(inst.sb.home, v)));
    try {
      for (const c of clients) {
        assert.equal(c.client.getNegotiatedProtocolVersion(), c.version);
        const { tools } = await c.client.listTools(undefined, c.version === MODERN ? { cacheMode: 'bypass' } : undefined);
        assert.deepEqual(tools.map((t) => t.name), ['postern_status'], c.version);
      }
      const modern = clients[0]!.client.autoOpenedSubscription;
      assert.ok(modern !== undefined, 'the 2026-07-28 client holds an open subscription');
      assert.deepEqual(modern.honoredFilter, { toolsListChanged: true });
      await inst.startDaemon();
      for (const c of clients) {
        const told = c.next();
        // The host's next request reaches the daemon; the session is told to list again.
        await c.client.callTool({ name: 'postern_status', arguments: {} });
        assert.ok((await told).includes('postern_call_status'), c.version);
      }
    } finally {
      for (const c of clients) await c.client.close();
      await inst.stopDaemon();
    }
  });

  it('a 2026-07-28 host connected while the daemon runs keeps its subscription across a daemon restart and is told the tools changed', { timeout: 120_000 }, async () => {
    await inst.startDaemon();
    const c = await watched(inst.sb.home, MODERN);
    try {
      assert.ok((await c.client.listTools(undefined, { cacheMode: 'bypass' })).tools.some((t) => t.name === 'postern_call_status'));
      assert.deepEqual(c.client.autoOpenedSubscription?.honoredFilter, { toolsListChanged: true });
      assert.equal(await inst.stopDaemon('SIGTERM'), 0);
      const down = await c.client.callTool({ name: 'postern_call_status', arguments: { idempotency_key: 'k-1' } });
      assert.equal((down.structuredContent as Record<string, unknown> | undefined)?.['error_code'], 'DAEMON_UNAVAILABLE');
      await inst.startDaemon();
      const told = c.next();
      await c.client.callTool({ name: 'postern_status', arguments: {} });
      assert.ok((await told).includes('postern_call_status'));
    } finally {
      await c.client.close();
      await inst.stopDaemon();
    }
  });
});
