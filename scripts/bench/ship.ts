/**
 * Benchmark: what journal shipping (src/journal/ship, daemon/lifecycle/ship-loop.ts)
 * costs a call. Calls are journaled (intent + outcome, exclusive journals as
 * the daemon has them, yielding to the event loop between calls as the
 * daemon's socket handling does) with no shipper, then with a shipper in the
 * same process shipping continuously to a real PostgreSQL
 * (test/helpers/postgres.ts) through its own read-only connection; rounds
 * alternate. Reports the medians per call and their ratio, and the lag the
 * shipper had when the calls stopped. Without a PostgreSQL it says so and
 * reports nothing.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as yieldOnce } from 'node:timers/promises';
import { systemClock } from '../../src/clock/index.js';
import { openJournals, type Journals } from '../../src/journal/index.js';
import { SHIP_SCHEMA } from '../../src/journal/ship/schema.js';
import { ShipLoop } from '../../src/daemon/lifecycle/ship-loop.js';
import { postgresAvailable, startPostgres } from '../../test/helpers/postgres.js';
import { report } from './report.js';
import { median } from './stats.js';

const CALLS = Number(process.env['BENCH_CALLS'] ?? 2000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);

const avail = postgresAvailable();
if (!avail.ok) {
  console.log(`ship: skipped (${avail.why})`);
  process.exit(0);
}

const root = mkdtempSync(join(process.env['BENCH_DIR'] ?? tmpdir(), 'postern-bench-ship-'));
const db = await startPostgres();
await db.admin('CREATE DATABASE bench');
await db.admin(SHIP_SCHEMA, 'bench');

function oneCall(j: Journals, i: number): void {
  const call_id = `c-${i}-${randomBytes(4).toString('hex')}`;
  j.activity.recordIntent({
    call_id, session_id: 's', run_id: null, tool: 'note', revision_seen: 1, revision_executed: 1, handler_revision: 'bench',
    raw_arguments: { t: 'x' }, normalized_arguments: { t: 'x' }, adapter_applied: null, idempotency_key: call_id, args_digest: 'd',
    approval: null, decision_path: ['bench'], side_effect_started: false, at: systemClock.now().toISOString(),
    target: { kind: 'http', method: 'POST', url: 'https://example.test/' },
  });
  j.activity.recordOutcome(call_id, { status: 'success', side_effect_started: true, duration_ms: 1, result: { ok: true } });
}

async function run(shipping: boolean, round: number): Promise<{ perCall: number; lag: number }> {
  const home = join(root, `${shipping ? 'ship' : 'plain'}-${round}`);
  const dir = join(home, 'journal');
  const j = openJournals(dir, { clock: systemClock, exclusive: true });
  mkdirSync(join(home, 'run'), { recursive: true, mode: 0o700 });
  // The daemon's own shipper, as config.yaml `ship` starts it.
  const loop = shipping
    ? new ShipLoop({ url: db.url('admin', 'bench'), journalDir: dir, checkpointsPath: join(home, 'none.jsonl'), runDir: join(home, 'run'), homeName: `bench-${round}`, batch: 500, retryMs: 1000, clock: systemClock, log: () => undefined })
    : null;
  loop?.start();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) {
    oneCall(j, i);
    await yieldOnce();
  }
  const perCall = Number(process.hrtime.bigint() - t0) / 1e6 / CALLS;
  const head = j.facts().activity.head.seq;
  const remote = loop?.status().remote?.activity ?? 0;
  await loop?.stop('the bench round ended');
  j.close();
  return { perCall, lag: shipping ? head - remote : 0 };
}

const plain: number[] = [];
const shipped: number[] = [];
const lags: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  for (const shipping of r % 2 === 0 ? [false, true] : [true, false]) {
    const x = await run(shipping, r);
    (shipping ? shipped : plain).push(x.perCall);
    if (shipping) lags.push(x.lag);
  }
}
await db.stop();
rmSync(root, { recursive: true, force: true });
const p = median(plain);
const s = median(shipped);
console.log(`journal per call (intent + outcome), median of ${ROUNDS} × ${CALLS} calls:`);
console.log(`  no shipper        ${p.toFixed(3)} ms`);
console.log(`  shipping          ${s.toFixed(3)} ms  (×${(s / p).toFixed(2)}); entries not yet shipped when the calls stopped: median ${median(lags)}`);
report('ship', `journal per call with and without shipping to PostgreSQL, ${ROUNDS} × ${CALLS} calls`, [
  { name: 'no shipper, per call', value: p, unit: 'ms' },
  { name: 'shipping, per call', value: s, unit: 'ms', baseline: 'no shipper', baselineValue: p, ratio: s / p, target: '≈ 1×' },
  { name: 'shipping lag when the calls stopped', value: median(lags), unit: 'entries' },
]);
