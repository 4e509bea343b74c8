/**
 * `postern setup HOST --write`, with the daemon running: lists the tools once
 * through the shim itself (in this process, as the client `postern-setup`),
 * so the shim remembers them (src/mcp/remembered-listing.ts) for the
 * agent's very first session — a host started while the daemon is down is
 * then offered the real tools beside `postern_status`, not the stand-in
 * alone. Best effort: the entry is written either way, and what happened is
 * said in one line.
 */
import { PassThrough } from 'node:stream';
import { lineSplitter } from '../../protocol/ndjson.js';
import { listingMemoryPath, LISTING_MEMORY_ENV } from '../../mcp/remembered-listing.js';
import { runShim } from '../../mcp/shim.js';
import { STATUS_TOOL } from '../../mcp/stand-in.js';
import { VERSION } from '../../version.js';

/** How long the daemon may take to answer the listing before setup says so and goes on. */
const LIST_TIMEOUT_MS = 10_000;

type Json = Record<string, unknown>;

/** Lists the tools once through the shim, for the agent socket `socketPath`; the line to print. */
export async function rememberToolsForFirstSession(socketPath: string, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const memoryPath = listingMemoryPath(socketPath, env);
  if (memoryPath === null) return `note: ${LISTING_MEMORY_ENV}=off: the tools are not remembered for sessions that start while the daemon is down`;
  const input = new PassThrough();
  const output = new PassThrough();
  let timer: NodeJS.Timeout | undefined;
  const listed = new Promise<number | 'down' | 'error'>((resolve) => {
    timer = setTimeout(() => resolve('error'), LIST_TIMEOUT_MS);
    output.on('data', lineSplitter(1024 * 1024 * 16, (line) => {
      let m: Json;
      try {
        m = JSON.parse(line.toString('utf8')) as Json;
      } catch {
        return;
      }
      if (m['id'] !== 2) return;
      const tools = (m['result'] as Json | undefined)?.['tools'];
      if (!Array.isArray(tools)) return resolve('error');
      const names = tools.map((t) => (t as Json)['name']);
      // The stand-in's listing (the daemon is not running) holds its own tool first.
      resolve(names[0] === STATUS_TOOL ? 'down' : tools.length);
    }));
  });
  const shim = runShim({ socketPath, input, output, version: VERSION, memoryPath });
  const send = (m: Json): boolean => input.write(`${JSON.stringify(m)}\n`);
  send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'postern-setup', version: VERSION } } });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  send({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} });
  const outcome = await listed;
  clearTimeout(timer);
  input.end();
  await shim;
  if (outcome === 'down') return 'note: the daemon is not running: a host started before any session has listed the tools sees only postern_status until the daemon runs (run `postern setup` again with the daemon running to remember them now)';
  if (outcome === 'error') return 'note: the daemon did not list its tools: they are remembered at the first session that lists them';
  return `remembered the ${outcome} tools the daemon lists, for agent sessions that start while it is down (${memoryPath})`;
}
