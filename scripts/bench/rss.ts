/**
 * Benchmark: the daemon's resident memory (VmRSS in /proc/<pid>/status) idle,
 * and after 10k and 20k read calls through one MCP client (`postern mcp` →
 * daemon) against a loopback target, as in http-calls.ts; the growth between
 * the two steps, per call, says whether memory plateaus. The client keeps a
 * few calls in flight (BENCH_RSS_INFLIGHT, default 4) so the steps fit the
 * runner's time budget; BENCH_RSS_CALLS sets the step (default 10,000).
 * Linux only (reads /proc). Needs `npm run build`.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { systemClock } from '../../src/clock/index.js';
import { install } from '../../test/helpers/daemon.js';
import { loopbackTarget } from './target.js';
import { report } from './report.js';

const STEP = Number(process.env['BENCH_RSS_CALLS'] ?? 10_000);
const INFLIGHT = Number(process.env['BENCH_RSS_INFLIGHT'] ?? 4);
const clock = systemClock;

const { origin, server: target } = await loopbackTarget();

const inst = await install({ secrets: [{ name: 'api-token', kind: 'http_bearer', value: 'bench-token-0123456789' }] });
await inst.acceptCatalog({
  targets: { local: { http: { origin, credential: 'api-token', auth: 'bearer', allow_private: true } } },
  tools: { get_json: { description: 'Read JSON.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: { type: 'object', properties: {}, required: [] }, http: { target: 'local', method: 'GET', path: '/json' } }] } },
});
await inst.startDaemon();
const pid = inst.daemon?.pid;
if (pid === undefined) throw new Error('the daemon has no pid');

/** The daemon's resident set, in bytes. */
function rss(): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'));
  if (line === undefined) throw new Error('no VmRSS in /proc status');
  return Number(line.split(/\s+/)[1]) * 1024;
}

const client = new Client({ name: 'bench-rss', version: '1.0.0' });
await client.connect(
  new StdioClientTransport({ command: process.execPath, args: [resolve(import.meta.dirname, '../../dist/cli/main.js'), 'mcp'], env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', POSTERN_HOME: inst.sb.home }, stderr: 'inherit' }),
);
const idle = rss();

/** `n` read calls, INFLIGHT at a time; returns the seconds taken. */
async function calls(n: number): Promise<number> {
  let left = n;
  const t0 = clock.monotonicMs();
  await Promise.all(
    Array.from({ length: INFLIGHT }, async () => {
      while (left-- > 0) {
        const r = (await client.callTool({ name: 'get_json', arguments: {} })) as { isError?: boolean; content?: unknown };
        if (r.isError === true) throw new Error(`get_json failed: ${JSON.stringify(r.content).slice(0, 300)}`);
      }
    }),
  );
  return (clock.monotonicMs() - t0) / 1000;
}

const s1 = await calls(STEP);
const atStep = rss();
const s2 = await calls(STEP);
const atTwo = rss();

await client.close();
await inst.stopDaemon();
await inst.cleanup();
target.close();

const mb = (b: number): number => b / (1024 * 1024);
const perCall = (atTwo - atStep) / STEP;
const k = (n: number): string => `${n / 1000}k`;
console.log(`daemon RSS, read calls through one MCP client (${INFLIGHT} in flight), ${k(STEP)} calls per step (${(STEP / s1).toFixed(0)} and ${(STEP / s2).toFixed(0)} calls/s):`);
console.log(`  idle            ${mb(idle).toFixed(1)} MB`);
console.log(`  after ${k(STEP).padEnd(8)}  ${mb(atStep).toFixed(1)} MB`);
console.log(`  after ${k(2 * STEP).padEnd(8)}  ${mb(atTwo).toFixed(1)} MB   (${perCall.toFixed(0)} bytes per call from ${k(STEP)} to ${k(2 * STEP)})`);
report('rss', `daemon RSS, read calls through one MCP client, ${INFLIGHT} in flight`, [
  { name: 'daemon RSS idle', value: mb(idle), unit: 'MB' },
  { name: `daemon RSS after ${k(STEP)} calls`, value: mb(atStep), unit: 'MB', baseline: 'idle', baselineValue: mb(idle), ratio: atStep / idle },
  { name: `daemon RSS after ${k(2 * STEP)} calls`, value: mb(atTwo), unit: 'MB', baseline: 'idle', baselineValue: mb(idle), ratio: atTwo / idle },
  { name: `RSS growth per call, ${k(STEP)} → ${k(2 * STEP)}`, value: perCall, unit: 'bytes/call', target: 'a plateau' },
], [`${(STEP / s1).toFixed(0)} and ${(STEP / s2).toFixed(0)} calls/s in the two steps`]);
