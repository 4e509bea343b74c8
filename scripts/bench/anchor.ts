/**
 * Benchmark: the journal anchor's cost per call. One call journals an intent
 * (committed with fsync, then anchored durably: temp file, fsync, rename,
 * fsync of the directory) and an outcome (committed; the anchor follows
 * within ANCHOR_LAG_MS). Plain journals vs anchored journals, side by side in
 * one process on the same file system ($BENCH_DIR or the temp directory);
 * reports medians per call and the ratio. Shared machines are noisy: read the
 * ratio, not the absolute numbers.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../../src/clock/index.js';
import { GENESIS_HASH, openJournals, type Journals } from '../../src/journal/index.js';
import { AnchorKeeper, ANCHOR_FORMAT } from '../../src/journal/anchor/index.js';
import { report } from './report.js';

const GENESIS = { seq: 0, hash: GENESIS_HASH };

const CALLS = Number(process.env['BENCH_CALLS'] ?? 200);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 5);
const root = mkdtempSync(join(process.env['BENCH_DIR'] ?? tmpdir(), 'postern-bench-anchor-'));

function oneCall(j: Journals, i: number): void {
  const call_id = `c-${i}-${randomBytes(4).toString('hex')}`;
  j.activity.recordIntent({
    call_id, session_id: 's', run_id: null, tool: 'note', revision_seen: 1, revision_executed: 1, handler_revision: 'bench',
    raw_arguments: { t: 'x' }, normalized_arguments: { t: 'x' }, adapter_applied: null, idempotency_key: call_id, args_digest: 'd',
    approval: null, decision_path: ['bench'], side_effect_started: false, at: '2026-01-01T00:00:00.000Z',
    target: { kind: 'http', method: 'POST', url: 'https://example.test/' },
  });
  j.activity.recordOutcome(call_id, { status: 'success', side_effect_started: true, duration_ms: 1, result: { ok: true } });
}

function run(anchored: boolean, round: number): number {
  const dir = join(root, `${anchored ? 'a' : 'p'}-${round}`);
  let keeper: AnchorKeeper | undefined;
  const j = openJournals(join(dir, 'journal'), { clock: systemClock, exclusive: anchored, ...(anchored ? { onCommit: (n, h, d) => keeper?.onCommit(n, h, d) } : {}) });
  if (anchored) {
    keeper = new AnchorKeeper({
      path: join(dir, 'journal.anchor'), key: randomBytes(32), clock: systemClock, log: () => undefined,
      record: { format: ANCHOR_FORMAT, journal_id: 'bench', counter: 0, activity: GENESIS, sessions: GENESIS, vault_generation: 1, catalog_digest: '0'.repeat(64), at: '' },
    });
    keeper.writeNow();
  }
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) oneCall(j, i);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  j.close();
  keeper?.close();
  return ms / CALLS;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const plain: number[] = [];
const anchored: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  plain.push(run(false, r));
  anchored.push(run(true, r));
}
rmSync(root, { recursive: true, force: true });
const p = median(plain);
const a = median(anchored);
console.log(`journal per call (intent + outcome), median of ${ROUNDS} × ${CALLS} calls in ${process.env['BENCH_DIR'] ?? tmpdir()}:`);
console.log(`  plain journals     ${p.toFixed(3)} ms`);
console.log(`  anchored journals  ${a.toFixed(3)} ms  (+${(a - p).toFixed(3)} ms per call, ×${(a / p).toFixed(2)})`);
report('anchor', `journal per call (intent + outcome), ${ROUNDS} × ${CALLS} calls`, [
  { name: 'plain journals, per call', value: p, unit: 'ms' },
  { name: 'anchored journals, per call', value: a, unit: 'ms', baseline: 'plain journals', baselineValue: p, ratio: a / p },
]);
