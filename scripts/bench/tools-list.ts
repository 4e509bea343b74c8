/**
 * Benchmark: `tools/list` with 200 tools, Postern against the floor, side by
 * side in one run. Postern (`postern mcp` → daemon, 200 read tools in the
 * accepted catalog) is listed once; that exact listing is then served by a
 * bare SDK server in its own process (no catalog, no shim hop, the result
 * built once) — the floor for the same bytes through the same client. Both go
 * through the official SDK 2.x client over real stdio, alternating within
 * each round; medians and their ratio are reported. Needs `npm run build`.
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { systemClock } from '../../src/clock/index.js';
import { install } from '../../test/helpers/daemon.js';
import { report } from './report.js';
import { median } from './stats.js';

const TOOLS = 200;
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 5);
const LISTS = Number(process.env['BENCH_LISTS'] ?? 40);
const clock = systemClock;

const obj = (props: Record<string, unknown>, required: string[] = []) => ({ type: 'object', properties: props, required });
const inst = await install({ secrets: [{ name: 'api-token', kind: 'http_bearer', value: 'bench-token-0123456789' }] });
const tools: Record<string, unknown> = {};
for (let i = 0; i < TOOLS; i++) {
  tools[`read_item_${i}`] = {
    description: `Read item set ${i}: returns the items of one project, newest first.`,
    effect: 'read',
    approval: 'none',
    revisions: [{ revision: 1, input: obj({ project: { type: 'string', maxLength: 64 }, since: { type: 'string', maxLength: 32 } }, ['project', 'since']), http: { target: 'local', method: 'GET', path: `/items/${i}/{project}/{since}` } }],
  };
}
await inst.acceptCatalog({ targets: { local: { http: { origin: 'http://127.0.0.1:9', credential: 'api-token', auth: 'bearer', allow_private: true } } }, tools });
await inst.startDaemon();

const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin' };
async function connect(transport: StdioClientTransport): Promise<Client> {
  const client = new Client({ name: 'bench-list', version: '1.0.0' });
  await client.connect(transport);
  return client;
}
const postern = await connect(new StdioClientTransport({ command: process.execPath, args: [resolve(import.meta.dirname, '../../dist/cli/main.js'), 'mcp'], env: { ...env, POSTERN_HOME: inst.sb.home }, stderr: 'inherit' }));
const listing = await postern.listTools();
if (listing.tools.length !== TOOLS + 1) throw new Error(`expected ${TOOLS + 1} tools, got ${listing.tools.length}`);
const file = join(inst.sb.dir, 'listing.json');
writeFileSync(file, JSON.stringify(listing));
const bare = `
import { readFileSync } from 'node:fs';
import { Server } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
const listing = JSON.parse(readFileSync(process.env.LISTING, 'utf8'));
const server = new Server({ name: 'bare-list', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
server.setRequestHandler('tools/list', () => listing);
await server.connect(new StdioServerTransport());
`;
const floor = await connect(new StdioClientTransport({ command: process.execPath, args: ['--input-type=module', '-e', bare], cwd: resolve(import.meta.dirname, '../..'), env: { ...env, LISTING: file }, stderr: 'inherit' }));
if ((await floor.listTools()).tools.length !== TOOLS + 1) throw new Error('the bare server does not serve the listing');

async function times(c: Client): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < LISTS; i++) {
    const t0 = clock.monotonicMs();
    await c.listTools();
    out.push(clock.monotonicMs() - t0);
  }
  return out;
}
const runs = { floor: [] as number[], postern: [] as number[] };
for (let r = 0; r < ROUNDS; r++) {
  runs.floor.push(...(await times(floor)));
  runs.postern.push(...(await times(postern)));
}
const f = median(runs.floor);
const p = median(runs.postern);
const bytes = Buffer.byteLength(JSON.stringify(listing));
console.log(`tools/list, ${TOOLS} tools (${(bytes / 1024).toFixed(0)} KiB), SDK 2.x client over stdio, load ${loadavg()[0]!.toFixed(1)}:`);
console.log(`  bare SDK server, same listing: p50 ${f.toFixed(2)} ms`);
console.log(`  postern mcp → daemon:          p50 ${p.toFixed(2)} ms (${(p / f).toFixed(2)}×, +${(p - f).toFixed(2)} ms)`);
report('tools-list', `tools/list, ${TOOLS} tools (${(bytes / 1024).toFixed(0)} KiB), ${ROUNDS} rounds × ${LISTS} lists`, [
  { name: 'tools/list, bare SDK server, same listing', value: f, unit: 'ms' },
  { name: 'tools/list, postern mcp → daemon', value: p, unit: 'ms', baseline: 'bare SDK server', baselineValue: f, ratio: p / f, target: '≤ 5 ms' },
]);
await postern.close();
await floor.close();
await inst.stopDaemon();
if (process.env['BENCH_KEEP'] === undefined) await inst.cleanup();
else console.log(file);
