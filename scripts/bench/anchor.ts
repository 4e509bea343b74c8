/**
 * Benchmark: the journal anchor's cost per call. One call journals an intent
 * (committed with fsync, then anchored durably: temp file, fsync, rename,
 * fsync of the directory) and an outcome (committed; the anchor follows
 * within ANCHOR_LAG_MS). Plain journals, watched journals (the daemon's
 * integrity check on every write, no anchor) and anchored journals, side by
 * side in one process on the same file system ($BENCH_DIR or the temp
 * directory); reports medians per call of the elapsed time and of the CPU time
 * (user + system: what the journal's own work costs, without the waits for
 * the disk — the figure that shows a leaner write path on a noisy machine).
 * Shared machines are noisy: read the ratios, not the absolute numbers.
 *
 * BENCH_BASE=<another checkout> (with its node_modules) runs that tree's
 * journal side by side, interleaved round by round in the same process, and
 * prints the difference: how a change to the journal's write path is measured
 * on a machine whose load moves between two separate runs.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { systemClock } from '../../src/clock/index.js';
import { GENESIS_HASH, openJournals, type Journals } from '../../src/journal/index.js';
import { AnchorKeeper, ANCHOR_FORMAT } from '../../src/journal/anchor/index.js';
import { report } from './report.js';
import { median } from './stats.js';

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

type Mode = 'plain' | 'watched' | 'anchored';

interface Tree {
  readonly name: string;
  readonly openJournals: typeof openJournals;
  readonly AnchorKeeper: typeof AnchorKeeper;
}

const trees: Tree[] = [{ name: 'this tree', openJournals, AnchorKeeper }];
const baseDir = process.env['BENCH_BASE'];
if (baseDir !== undefined) {
  const from = (path: string): string => pathToFileURL(join(resolve(baseDir), path)).href;
  const journal = (await import(from('src/journal/index.ts'))) as { openJournals: typeof openJournals };
  const anchor = (await import(from('src/journal/anchor/index.ts'))) as { AnchorKeeper: typeof AnchorKeeper };
  trees.push({ name: 'BENCH_BASE', openJournals: journal.openJournals, AnchorKeeper: anchor.AnchorKeeper });
}

function run(tree: Tree, mode: Mode, round: number): { wall: number; cpu: number } {
  const dir = join(root, `${trees.indexOf(tree)}-${mode}-${round}`);
  const anchored = mode === 'anchored';
  let keeper: AnchorKeeper | undefined;
  const j = tree.openJournals(join(dir, 'journal'), { clock: systemClock, exclusive: mode !== 'plain', ...(anchored ? { onCommit: (n, h, d) => keeper?.onCommit(n, h, d) } : {}) });
  if (anchored) {
    keeper = new tree.AnchorKeeper({
      path: join(dir, 'journal.anchor'), key: randomBytes(32), clock: systemClock, log: () => undefined,
      record: { format: ANCHOR_FORMAT, journal_id: 'bench', counter: 0, activity: GENESIS, sessions: GENESIS, vault_generation: 1, catalog_digest: '0'.repeat(64), at: '' },
    });
    keeper.writeNow();
  }
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) oneCall(j, i);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const cpu = process.cpuUsage(cpu0);
  j.close();
  keeper?.close();
  return { wall: ms / CALLS, cpu: (cpu.user + cpu.system) / 1000 / CALLS };
}

const MODES: readonly Mode[] = ['plain', 'watched', 'anchored'];
const runs = new Map<string, { wall: number; cpu: number }[]>();
for (let r = 0; r < ROUNDS; r++) {
  for (const m of MODES) {
    // Alternate which tree goes first, so neither always runs on the warmer (or the busier) moment.
    for (const tree of r % 2 === 0 ? trees : [...trees].reverse()) {
      const key = `${tree.name}/${m}`;
      runs.set(key, [...(runs.get(key) ?? []), run(tree, m, r)]);
    }
  }
}
rmSync(root, { recursive: true, force: true });
const wall = (t: Tree, m: Mode): number => median((runs.get(`${t.name}/${m}`) ?? []).map((x) => x.wall));
const cpu = (t: Tree, m: Mode): number => median((runs.get(`${t.name}/${m}`) ?? []).map((x) => x.cpu));
console.log(`journal per call (intent + outcome), median of ${ROUNDS} × ${CALLS} calls in ${process.env['BENCH_DIR'] ?? tmpdir()}:`);
for (const t of trees) {
  if (trees.length > 1) console.log(` ${t.name}${t === trees[0] ? '' : ` (${baseDir ?? ''})`}:`);
  const p = wall(t, 'plain');
  for (const m of MODES) {
    const vs = m === 'plain' ? '' : `  (+${(wall(t, m) - p).toFixed(3)} ms per call, ×${(wall(t, m) / p).toFixed(2)})`;
    console.log(`  ${`${m} journals`.padEnd(18)} ${wall(t, m).toFixed(3)} ms, CPU ${cpu(t, m).toFixed(3)} ms${vs}`);
  }
}
const [self, base] = trees;
if (self !== undefined && base !== undefined) {
  const pct = (a: number, b: number): string => `${(((a - b) / b) * 100).toFixed(0)}%`;
  console.log(' this tree against BENCH_BASE:');
  for (const m of MODES) {
    console.log(`  ${`${m} journals`.padEnd(18)} ${(wall(self, m) - wall(base, m)).toFixed(3)} ms (${pct(wall(self, m), wall(base, m))}), CPU ${(cpu(self, m) - cpu(base, m)).toFixed(3)} ms (${pct(cpu(self, m), cpu(base, m))})`);
  }
}
const self0 = trees[0]!;
const p0 = wall(self0, 'plain');
report('anchor', `journal per call (intent + outcome), ${ROUNDS} × ${CALLS} calls`, MODES.map((m) => ({
  name: `${m} journals, per call`, value: wall(self0, m), unit: 'ms', ...(m === 'plain' ? {} : { baseline: 'plain journals', baselineValue: p0, ratio: wall(self0, m) / p0 }),
})));
