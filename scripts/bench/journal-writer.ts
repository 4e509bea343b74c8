/**
 * Experiment for issue 24, item 4: what a journal writer in a worker thread
 * would buy. Calls are simulated on the main thread — `BENCH_PIPE_MS` of
 * busy work standing for the rest of the pipeline (the daemon's main thread
 * spends about 0.6 ms per call outside the journal), then a keyed intent,
 * then an outcome — against the real Activity journal with its group commit
 * (a) on the event loop, as the daemon has it, and (b) on a connection of a
 * worker thread, fed by messages. Interleaved rounds, medians: calls/s and
 * the main thread's busy time per call at 1 and 16 calls in flight, and the
 * p50 of a lone call. Journals on the disk the daemon would use (BENCH_DIR).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { openJournals, type CallRecord, type OutcomeInput, type TargetDetails } from '../../src/journal/index.js';
import { GroupCommit } from '../../src/daemon/pipeline/group-commit.js';
import { median } from './stats.js';
import { report } from './report.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 5);
const CALLS = Number(process.env['BENCH_CALLS'] ?? 800);
const PIPE_MS = Number(process.env['BENCH_PIPE_MS'] ?? 0.6);
const base = process.env['BENCH_DIR'] ?? tmpdir();

const spin = (ms: number): void => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};
let n = 0;
const record = (): CallRecord & { target: TargetDetails } => {
  n++;
  return {
    call_id: randomUUID(), session_id: `sess-${n % 16}`, run_id: null, agent_release: null, toolset_planned: null, tool: 'create_note', revision_seen: 1, revision_executed: 1,
    handler_revision: '0.1.0+sha256:cafe', raw_arguments: { title: 'n', idempotency_key: `k-${n}` }, normalized_arguments: { title: 'n' }, adapter_applied: null,
    idempotency_key: `k-${n}`, args_digest: `sha256:${n}`, approval: { mode: 'session', id: 'a', decided_by: 'operator', decided_at: '2026-01-02T03:04:05.000Z', outcome: 'approved' },
    decision_path: ['admit', 'validate', 'idempotency', 'approve:session'], side_effect_started: false, at: new Date().toISOString(),
    target: { kind: 'http', method: 'POST', url: 'http://127.0.0.1:1/json' },
  };
};
const outcome = (): OutcomeInput => ({ status: 'success', side_effect_started: true, response_status: 200, duration_ms: 1, result: { status: 200, body: { ok: true } } });

interface Writer {
  intent(r: CallRecord & { target: TargetDetails }): Promise<unknown>;
  outcome(id: string, o: OutcomeInput): Promise<unknown>;
  close(): Promise<void>;
}

function inLoop(dir: string, inflight: () => number): Writer {
  const j = openJournals(dir, { exclusive: true });
  const g = new GroupCommit(j.activity, { busy: () => inflight() > 1 });
  return { intent: (r) => g.intent(r), outcome: (id, o) => g.outcome(id, o), close: () => Promise.resolve(j.close()) };
}

function inWorker(dir: string): Writer {
  const w = new Worker(
    `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(new URL('./journal-writer-worker.ts', import.meta.url).href)}); })`,
    { eval: true, workerData: { dir } },
  );
  let seq = 0;
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  w.on('message', (m: { id: number; ok: boolean; value?: unknown; error?: string }) => {
    const p = waiting.get(m.id);
    waiting.delete(m.id);
    if (m.ok) p?.resolve(m.value);
    else p?.reject(new Error(m.error));
  });
  const ask = (msg: object): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const id = ++seq;
      waiting.set(id, { resolve, reject });
      w.postMessage({ id, ...msg });
    });
  return {
    intent: (rec) => ask({ op: 'intent', rec }),
    outcome: (call_id, o) => ask({ op: 'outcome', call_id, outcome: o }),
    close: async () => {
      await ask({ op: 'close' });
      await w.terminate();
    },
  };
}

/** `k` calls in flight until `total` are done: calls/s, main-thread busy ms per call, and each call's latency. */
async function drive(wr: Writer, k: number, total: number, inflight: { n: number }): Promise<{ rate: number; busy: number; lat: number[] }> {
  let started = 0;
  const lat: number[] = [];
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  const one = async (): Promise<void> => {
    while (started < total) {
      started++;
      const s = performance.now();
      inflight.n++;
      spin(PIPE_MS * 0.85);
      const r = record();
      await wr.intent(r);
      spin(PIPE_MS * 0.15);
      await wr.outcome(r.call_id, outcome());
      inflight.n--;
      lat.push(performance.now() - s);
      await new Promise((res) => setImmediate(res));
    }
  };
  await Promise.all(Array.from({ length: k }, one));
  const secs = (performance.now() - t0) / 1000;
  const elu = performance.eventLoopUtilization(elu0);
  return { rate: total / secs, busy: elu.active / total, lat };
}

const dirs: string[] = [];
const fresh = (): string => {
  const d = mkdtempSync(join(base, 'postern-bench-writer-'));
  dirs.push(d);
  return d;
};
const inflight = { n: 0 };
const writers = { loop: inLoop(fresh(), () => inflight.n), worker: inWorker(fresh()) };
for (const w of Object.values(writers)) await drive(w, 16, 500, inflight); // warm-up
const rows: Record<string, number[]> = {};
const put = (k: string, v: number): void => void (rows[k] ??= []).push(v);
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, w] of Object.entries(writers)) {
    const one = await drive(w, 1, Math.floor(CALLS / 4), inflight);
    put(`${name} p50 one`, median(one.lat));
    put(`${name} busy one`, one.busy);
    const many = await drive(w, 16, CALLS, inflight);
    put(`${name} rate 16`, many.rate);
    put(`${name} busy 16`, many.busy);
  }
}
for (const w of Object.values(writers)) await w.close();
for (const d of dirs) rmSync(d, { recursive: true, force: true });
const m = (k: string): number => median(rows[k]!);
console.log(`journal writer on the loop vs in a worker thread, ${ROUNDS} rounds, ${PIPE_MS} ms of other main-thread work per call, journals in ${base}:`);
for (const name of ['loop', 'worker']) {
  console.log(`  ${name.padEnd(6)}  one call p50 ${m(`${name} p50 one`).toFixed(3)} ms, main busy ${m(`${name} busy one`).toFixed(3)} ms/call   16 in flight: ${m(`${name} rate 16`).toFixed(0)} calls/s, main busy ${m(`${name} busy 16`).toFixed(3)} ms/call`);
}
report('journal-writer', 'journal writer on the event loop vs in a worker thread (simulated calls)', [
  { name: 'loop: one call p50', value: m('loop p50 one'), unit: 'ms' },
  { name: 'worker: one call p50', value: m('worker p50 one'), unit: 'ms', baseline: 'loop', baselineValue: m('loop p50 one'), ratio: m('worker p50 one') / m('loop p50 one') },
  { name: 'loop: 16 in flight, calls/s', value: m('loop rate 16'), unit: 'calls/s' },
  { name: 'worker: 16 in flight, calls/s', value: m('worker rate 16'), unit: 'calls/s', baseline: 'loop', baselineValue: m('loop rate 16'), ratio: m('worker rate 16') / m('loop rate 16') },
  { name: 'loop: main-thread busy per call at 16', value: m('loop busy 16'), unit: 'ms' },
  { name: 'worker: main-thread busy per call at 16', value: m('worker busy 16'), unit: 'ms', baseline: 'loop', baselineValue: m('loop busy 16'), ratio: m('worker busy 16') / m('loop busy 16') },
]);
