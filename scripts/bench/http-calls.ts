/**
 * Benchmark: an HTTP tool call through Postern against what a user would
 * otherwise run, side by side in one run, on the same loopback target:
 *   (a) undici direct, kept alive — the floor;
 *   (b) a naive MCP proxy on the same SDK (scripts/naive-proxy.mjs):
 *       token from the environment, no vault, journal or approval;
 *   (c) Postern, a read tool (no approval);
 *   (d) Postern, a write tool (session grant, idempotency key, intent and
 *       outcome journaled durably before the request and the answer);
 *   (e) 16 sessions of (b) and of (c), then of (d), at once: calls per second.
 * (b)–(d) go through the official SDK 2.x client over real stdio: the naive
 * proxy as its own process, Postern through `postern mcp` to the real daemon.
 * The variants alternate within each round; medians over the rounds are
 * reported with their ratio to the naive proxy, after the same warm-up of
 * both (BENCH_WARMUP calls of each kind: the steady state). With `strace` present the
 * daemon's fsyncs are counted for (d) and (e). Needs `npm run build`.
 */
import { spawn, spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Agent, request } from 'undici';
import { systemClock } from '../../src/clock/index.js';
import { install } from '../../test/helpers/daemon.js';
import { loopbackTarget } from './target.js';
import { report, type Figure } from './report.js';
import { phaseFigures, phasesBetween, printPhases } from './profile.js';
import { latencies, median, processCpuMs, quantile } from './stats.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 5);
const CALLS = Number(process.env['BENCH_CALLS'] ?? 100);
const SESSIONS = 16;
const TOKEN = 'bench-token-0123456789';
const NAIVE = resolve(import.meta.dirname, '../naive-proxy.mjs');
const clock = systemClock;

const { origin, server: target } = await loopbackTarget();

const obj = (props: Record<string, unknown>, required: string[] = []) => ({ type: 'object', properties: props, required });
const inst = await install({ secrets: [{ name: 'api-token', kind: 'http_bearer', value: TOKEN }], config: { approval_timeout_seconds: 60 } });
await inst.acceptCatalog({
  targets: { local: { http: { origin, credential: 'api-token', auth: 'bearer', allow_private: true, idempotency_header: true } } },
  tools: {
    get_json: { description: 'Read JSON.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: obj({}), http: { target: 'local', method: 'GET', path: '/json' } }] },
    create_note: {
      description: 'Create a note.',
      effect: 'write',
      approval: 'session',
      revisions: [{ revision: 1, input: obj({ title: { type: 'string', maxLength: 100 } }, ['title']), http: { target: 'local', method: 'POST', path: '/json', body: { title: '{title}' } } }],
    },
  },
});
await inst.startDaemon();
const daemonPid = inst.daemon?.pid;

// Approves every session's first write for the session, so the measured calls need no human.
const op = await inst.operator();
let approving = true;
const approver = (async () => {
  while (approving) {
    const cards = (await op.request('approvals.list', {})) as { id: string }[];
    for (const c of cards) await op.request('approvals.decide', { approval_id: c.id, verdict: { verdict: 'approve', scope: 'session' } });
    await new Promise((r) => setTimeout(r, 20));
  }
})();

const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin' };
async function connect(kind: 'naive' | 'postern'): Promise<Client> {
  const transport =
    kind === 'naive'
      ? new StdioClientTransport({ command: process.execPath, args: [NAIVE], env: { ...env, TARGET_ORIGIN: origin, TARGET_TOKEN: TOKEN }, stderr: 'inherit' })
      : new StdioClientTransport({ command: process.execPath, args: [resolve(import.meta.dirname, '../../dist/cli/main.js'), 'mcp'], env: { ...env, POSTERN_HOME: inst.sb.home }, stderr: 'inherit' });
  const client = new Client({ name: `bench-${kind}`, version: '1.0.0' });
  await client.connect(transport);
  if (transport.pid !== null) pids.set(client, transport.pid);
  return client;
}
/** Each client's own process: the naive proxy, or Postern's `postern mcp` shim. */
const pids = new Map<Client, number>();
/** CPU (ms) of the processes behind `clients`, summed. */
const cpuBehind = (clients: readonly Client[]): number => clients.reduce((t, c) => t + processCpuMs(pids.get(c)), 0);

let seq = 0;
const args = (tool: string): Record<string, unknown> => (tool === 'create_note' ? { title: 'n', idempotency_key: `bench-${process.pid}-${seq++}` } : {});
async function callOnce(c: Client, tool: string): Promise<void> {
  const r = (await c.callTool({ name: tool, arguments: args(tool) })) as { isError?: boolean; content?: unknown };
  if (r.isError === true) throw new Error(`${tool} failed: ${JSON.stringify(r.content).slice(0, 300)}`);
}

const floor = new Agent();
const direct = async (): Promise<void> => {
  const res = await request(`${origin}/json`, { headers: { authorization: `Bearer ${TOKEN}` }, dispatcher: floor });
  await res.body.json();
};

/** Calls per second with every client calling at once, `n` calls each, and the p99 of those calls. */
async function throughput(clients: Client[], tool: string, n: number): Promise<{ rate: number; p99: number }> {
  const each: number[] = [];
  const t0 = clock.monotonicMs();
  await Promise.all(clients.map(async (c) => each.push(...(await latencies(n, () => callOnce(c, tool))))));
  return { rate: (clients.length * n) / ((clock.monotonicMs() - t0) / 1000), p99: pct(each, 0.99) };
}

const pct = quantile;

/** fsync + fdatasync calls by the daemon while `run` runs, or null without strace. */
async function countFsyncs(run: () => Promise<number>): Promise<{ calls: number; fsyncs: number | null }> {
  if (daemonPid === undefined || spawnSync('strace', ['-V']).status !== 0) return { calls: await run(), fsyncs: null };
  const tracer = spawn('strace', ['-f', '-c', '-e', 'trace=fsync,fdatasync', '-p', String(daemonPid)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let report = '';
  tracer.stderr.on('data', (d: Buffer) => (report += d.toString()));
  await new Promise((r) => setTimeout(r, 500)); // strace attaches
  const calls = await run();
  const exited = new Promise((r) => tracer.once('exit', r));
  tracer.kill('SIGINT');
  await exited;
  // strace -c rows: % time, seconds, usecs/call, calls, [errors], syscall.
  const n = (name: string): number => {
    const row = report.split('\n').map((l) => l.trim().split(/\s+/)).find((f) => f.at(-1) === name);
    return row === undefined ? 0 : Number(row[3]);
  };
  return { calls, fsyncs: n('fsync') + n('fdatasync') };
}

const naive = await connect('naive');
const postern = await connect('postern');
await callOnce(postern, 'create_note'); // the session grant
// Warm-up, the same for both: a daemon serves calls for hours, so what is measured is its steady
// state, not V8 still compiling the call path (a few hundred calls in, a call costs about twice
// its steady CPU). BENCH_WARMUP calls of each kind through each.
const WARMUP = Number(process.env['BENCH_WARMUP'] ?? 1500);
for (const c of [naive, postern]) for (const tool of ['get_json', 'create_note']) for (let i = 0; i < WARMUP; i++) await callOnce(c, tool);

const rows: Record<string, number[]> = { direct: [], naive_read: [], postern_read: [], naive_write: [], postern_write: [] };
const p99: Record<string, number[]> = { naive_read: [], postern_read: [], postern_write: [] };
const profileBefore = await op.request('calls.profile', {});
/** The daemon's CPU time (user + system, ms) spent on each kind of call: process CPU / calls served. */
const daemonCpu = { read: 0, write: 0, many: 0 };
const cpuOf = async <T>(kind: keyof typeof daemonCpu, fn: () => Promise<T>): Promise<T> => {
  const before = processCpuMs(daemonPid);
  const r = await fn();
  daemonCpu[kind] += processCpuMs(daemonPid) - before;
  return r;
};
for (let r = 0; r < ROUNDS; r++) {
  const d = await latencies(CALLS, direct);
  const nr = await latencies(CALLS, () => callOnce(naive, 'get_json'));
  const pr = await cpuOf('read', () => latencies(CALLS, () => callOnce(postern, 'get_json')));
  const nw = await latencies(CALLS, () => callOnce(naive, 'create_note'));
  const pw = await cpuOf('write', () => latencies(CALLS, () => callOnce(postern, 'create_note')));
  rows['direct']!.push(median(d));
  rows['naive_read']!.push(median(nr));
  rows['postern_read']!.push(median(pr));
  rows['naive_write']!.push(median(nw));
  rows['postern_write']!.push(median(pw));
  p99['naive_read']!.push(pct(nr, 0.99));
  p99['postern_read']!.push(pct(pr, 0.99));
  p99['postern_write']!.push(pct(pw, 0.99));
}
const oneClient = phasesBetween(profileBefore, await op.request('calls.profile', {}));
const oneFsync = await countFsyncs(async () => {
  await latencies(CALLS, () => callOnce(postern, 'create_note'));
  return CALLS;
});

// 16 sessions: 16 naive proxy processes against 16 Postern sessions of one daemon.
const naives = await Promise.all(Array.from({ length: SESSIONS }, () => connect('naive')));
const posterns = await Promise.all(Array.from({ length: SESSIONS }, () => connect('postern')));
await Promise.all(posterns.map((c) => callOnce(c, 'create_note'))); // each session's grant
const perClient = Math.max(10, Math.floor(CALLS / 4));
// Each of the 32 processes warmed as the lone ones were (in total WARMUP write calls per side).
for (const cs of [naives, posterns]) await throughput(cs, 'create_note', Math.ceil(WARMUP / SESSIONS));
const tput: Record<string, number[]> = { naive: [], postern: [] };
const tputP99: Record<string, number[]> = { naive: [], postern: [] };
// At 16 sessions a 2-core machine is CPU-bound: what each side's processes spend per call (the
// naive proxies; Postern's shims, the daemon apart in daemonCpu.many) says where the ratio comes from.
const behindCpu = { naive: 0, postern: 0 };
const readTput: Record<string, number[]> = { naive: [], postern: [] };
for (let r = 0; r < ROUNDS; r++) {
  for (const [k, cs] of [['naive', naives], ['postern', posterns]] as const) readTput[k]!.push((await throughput(cs, 'get_json', perClient)).rate);
  for (const [k, cs] of [['naive', naives], ['postern', posterns]] as const) {
    const before = cpuBehind(cs);
    const t = k === 'postern' ? await cpuOf('many', () => throughput(cs, 'create_note', perClient)) : await throughput(cs, 'create_note', perClient);
    behindCpu[k] += cpuBehind(cs) - before;
    tput[k]!.push(t.rate);
    tputP99[k]!.push(t.p99);
  }
}
const manyFsync = await countFsyncs(async () => {
  await throughput(posterns, 'create_note', perClient);
  return SESSIONS * perClient;
});

approving = false;
await approver;
op.close();
for (const c of [naive, postern, ...naives, ...posterns]) await c.close().catch(() => undefined);
if (process.env['POSTERN_DAEMON_PROF']) await inst.stopDaemon('SIGTERM');
await inst.cleanup();
await floor.close();
target.close();

const m = (k: string): number => median(rows[k]!);
const fmt = (x: number): string => `${x.toFixed(2)} ms`;
const nr = m('naive_read');
console.log(`HTTP tool calls, ${ROUNDS} rounds × ${CALLS} sequential calls, medians of the round medians (load ${loadavg()[0]!.toFixed(2)}):`);
console.log(`  (a) undici direct, kept alive        ${fmt(m('direct'))}`);
console.log(`  (b) naive SDK proxy, read            ${fmt(nr)}   p99 ${fmt(median(p99['naive_read']!))}`);
console.log(`  (c) Postern read                     ${fmt(m('postern_read'))}   p99 ${fmt(median(p99['postern_read']!))}   ${(m('postern_read') / nr).toFixed(2)}× naive`);
console.log(`      naive SDK proxy, write           ${fmt(m('naive_write'))}`);
console.log(`  (d) Postern write (key + journal)    ${fmt(m('postern_write'))}   p99 ${fmt(median(p99['postern_write']!))}   ${(m('postern_write') / m('naive_write')).toFixed(2)}× naive write`);
console.log(`      fsyncs per write call            ${oneFsync.fsyncs === null ? 'n/a (no strace)' : (oneFsync.fsyncs / oneFsync.calls).toFixed(2)}`);
console.log(`  (e) ${SESSIONS} sessions, write calls/s     naive ${median(tput['naive']!).toFixed(0)}   Postern ${median(tput['postern']!).toFixed(0)}   ${(median(tput['postern']!) / median(tput['naive']!)).toFixed(2)}×`);
console.log(`      ${SESSIONS} sessions, read calls/s      naive ${median(readTput['naive']!).toFixed(0)}   Postern ${median(readTput['postern']!).toFixed(0)}   ${(median(readTput['postern']!) / median(readTput['naive']!)).toFixed(2)}×`);
console.log(`      p99 of a write call at ${SESSIONS}        naive ${fmt(median(tputP99['naive']!))}   Postern ${fmt(median(tputP99['postern']!))}`);
console.log(`      fsyncs per write call at ${SESSIONS}      ${manyFsync.fsyncs === null ? 'n/a (no strace)' : (manyFsync.fsyncs / manyFsync.calls).toFixed(2)}`);
if (daemonPid !== undefined) console.log(`  (f) daemon CPU per call (process CPU / calls)   read ${(daemonCpu.read / (ROUNDS * CALLS)).toFixed(3)} ms   keyed write ${(daemonCpu.write / (ROUNDS * CALLS)).toFixed(3)} ms   write at ${SESSIONS} ${(daemonCpu.many / (ROUNDS * SESSIONS * perClient)).toFixed(3)} ms`);
const manyCalls = ROUNDS * SESSIONS * perClient;
console.log(`      CPU per write call at ${SESSIONS}       naive proxies ${(behindCpu.naive / manyCalls).toFixed(3)} ms   Postern shims ${(behindCpu.postern / manyCalls).toFixed(3)} ms (+ the daemon's above)`);
printPhases('where a one-client call spends its time in the daemon (read and write together; the rest of a call is the client, the shim and the sockets)', oneClient);

// The latency target: naive + the durability floor (two fsyncs) + 0.5 ms; a number when
// the runner measured fdatasync (BENCH_FDATASYNC_MS), else the rule as text.
const fsyncMs = Number(process.env['BENCH_FDATASYNC_MS'] ?? NaN);
const within = (base: number): string => (Number.isFinite(fsyncMs) ? `≤ ${(base + 2 * fsyncMs + 0.5).toFixed(2)} ms (naive + 2 fsyncs + 0.5 ms)` : '≤ naive + 2 fsyncs + 0.5 ms');
const vs = (name: string, value: number, baseline: string, baselineValue: number, target?: string): Figure => ({
  name, value, unit: 'ms', baseline, baselineValue, ratio: value / baselineValue, ...(target === undefined ? {} : { target }),
});
const figures: Figure[] = [
  { name: '(a) undici direct, kept alive (floor)', value: m('direct'), unit: 'ms' },
  vs('(b) naive SDK proxy, read p50', nr, 'undici direct', m('direct')),
  vs('(c) Postern read p50', m('postern_read'), 'naive read', nr, within(nr)),
  vs('(c) Postern read p99', median(p99['postern_read']!), 'naive read p99', median(p99['naive_read']!)),
  { name: 'naive SDK proxy, write p50', value: m('naive_write'), unit: 'ms' },
  vs('(d) Postern write p50 (key + journal)', m('postern_write'), 'naive write', m('naive_write'), within(m('naive_write'))),
  { name: '(d) Postern write p99', value: median(p99['postern_write']!), unit: 'ms' },
  ...(oneFsync.fsyncs === null ? [] : [{ name: '(d) fsyncs per write call', value: oneFsync.fsyncs / oneFsync.calls, unit: 'fsyncs/call', target: '2 (intent, outcome: the floor)' }]),
  {
    name: `(e) ${SESSIONS} sessions, write calls/s`, value: median(tput['postern']!), unit: 'calls/s', baseline: `${SESSIONS} naive proxies`, baselineValue: median(tput['naive']!),
    ratio: median(tput['postern']!) / median(tput['naive']!), target: '≥ 1,000/s and ahead of naive (ratio > 1)',
  },
  {
    name: `(e) ${SESSIONS} sessions, read calls/s`, value: median(readTput['postern']!), unit: 'calls/s', baseline: `${SESSIONS} naive proxies`, baselineValue: median(readTput['naive']!),
    ratio: median(readTput['postern']!) / median(readTput['naive']!), target: 'ahead of naive by 1.2×',
  },
  vs(`(e) ${SESSIONS} sessions, write p99`, median(tputP99['postern']!), 'naive p99', median(tputP99['naive']!)),
  ...(manyFsync.fsyncs === null ? [] : [{ name: `(e) fsyncs per write call at ${SESSIONS}`, value: manyFsync.fsyncs / manyFsync.calls, unit: 'fsyncs/call', target: '≤ 0.2' }]),
  ...(daemonPid === undefined
    ? []
    : [
        { name: '(f) daemon CPU per read call, one client', value: daemonCpu.read / (ROUNDS * CALLS), unit: 'ms', target: '≤ 0.5 ms' },
        { name: '(f) daemon CPU per keyed write call, one client', value: daemonCpu.write / (ROUNDS * CALLS), unit: 'ms', target: '≤ 0.7 ms' },
        { name: `(f) daemon CPU per write call, ${SESSIONS} sessions`, value: daemonCpu.many / (ROUNDS * SESSIONS * perClient), unit: 'ms' },
        { name: `(f) naive proxies' CPU per write call, ${SESSIONS} sessions`, value: behindCpu.naive / manyCalls, unit: 'ms' },
        { name: `(f) Postern shims' CPU per write call, ${SESSIONS} sessions`, value: behindCpu.postern / manyCalls, unit: 'ms', baseline: 'naive proxies', baselineValue: behindCpu.naive / manyCalls, ratio: behindCpu.postern / behindCpu.naive },
      ]),
  ...phaseFigures('(c)+(d) one client', oneClient),
];
report('http-calls', `HTTP tool calls, ${ROUNDS} rounds × ${CALLS} sequential calls, ${SESSIONS} sessions × ${perClient} calls`, figures, [
  ...(oneFsync.fsyncs === null ? ['fsyncs not counted: strace is not installed'] : []),
  'for calls/s the ratio is Postern / naive: above 1 is better',
]);
