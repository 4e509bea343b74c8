/**
 * Benchmark: the HTTP executor's own work per call — executeHttp through the
 * daemon's HttpPool (path and header rules, credential injection, pool key,
 * address checks, reading and decoding the body) against undici direct on
 * the same kept-alive loopback target, in one process, interleaved rounds,
 * process CPU per call (user + system; both ends, the target is in this
 * process). No vault, journal or pipeline: what `execute` adds to undici.
 * The credential carries a source, as a copy from DaemonState.takeCredential does.
 */
import { Pool } from 'undici';
import { executeHttp, HttpPool } from '../../src/executors/http/index.js';
import { report } from './report.js';
import { median } from './stats.js';
import { loopbackTarget } from './target.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 15);
const CALLS = Number(process.env['BENCH_CALLS'] ?? 600);
const TOKEN = 'bench-executor-token-0123456789';

const { origin, server } = await loopbackTarget();
const floor = new Pool(origin);
const pool = new HttpPool();
const source = {};
const signal = new AbortController().signal;
const timeouts = { connectMs: 10_000, headersMs: 30_000, bodyMs: 30_000 };

const variants = {
  direct: async (): Promise<void> => {
    const res = await floor.request({ method: 'GET', path: '/json', headers: { authorization: `Bearer ${TOKEN}` } });
    await res.body.json();
  },
  executor: async (): Promise<void> => {
    // A fresh copy per call, as each call takes its own.
    const credential = Object.freeze({ meta: { name: 'api-token', kind: 'http_bearer' as const, fields: {} }, secret: Object.freeze({ token: Buffer.from(TOKEN) }), source });
    await executeHttp(
      { origin, method: 'GET', path: '/json', query: [], headers: [] },
      { credential, allowPrivate: true, pool, signal, onRequestSent: () => undefined, timeouts, readPastCapBytes: 64, auth: { kind: 'bearer' }, now: () => new Date() },
    );
  },
} as const;

const cpu: Record<keyof typeof variants, number[]> = { direct: [], executor: [] };
for (let i = 0; i < 500; i++) for (const run of Object.values(variants)) await run();
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, run] of Object.entries(variants) as [keyof typeof variants, () => Promise<void>][]) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < CALLS; i++) await run();
    const c = process.cpuUsage(c0);
    cpu[name].push((c.user + c.system) / 1000 / CALLS);
  }
}
await pool.close();
await floor.close();
server.close();

const d = median(cpu.direct);
const e = median(cpu.executor);
console.log(`HTTP executor in-process, ${ROUNDS} rounds × ${CALLS} calls, CPU per call, medians:`);
console.log(`  undici direct, kept alive    ${d.toFixed(3)} ms`);
console.log(`  executeHttp, pooled          ${e.toFixed(3)} ms   +${(e - d).toFixed(3)} ms`);
report('http-executor', 'HTTP executor vs undici direct, CPU per call', [
  { name: 'undici direct CPU per call', value: d, unit: 'ms' },
  { name: 'executeHttp CPU per call', value: e, unit: 'ms', baseline: 'undici direct CPU per call', baselineValue: d, ratio: e / d },
]);
