/**
 * Benchmark: the start's proof of the idempotency claims (anchor/verified.ts)
 * on a large journal. Generates BENCH_ROWS activity entries (default
 * 1,000,000: half keyed intents, half outcomes, so half as many claims) as
 * audit-proof.ts does, then times a clean restart (the claim rows against the
 * sealed digest, nothing to walk), a restart after a kill (the entries since
 * the last seal walked and cross-checked: BENCH_TAIL calls), a start with no
 * verified point (the whole chain walked, every claim cross-checked: a
 * journal from before the verified point, or one whose seal was removed), and
 * the seal written at a clean close. Not a test:
 * `node --import tsx scripts/bench/claims-proof.ts`.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../../src/clock/index.js';
import { openAnchoredJournals, type AnchorContext } from '../../src/journal/anchor/index.js';
import type { ActivityJournal } from '../../src/journal/index.js';

type Intent = Parameters<ActivityJournal['recordIntents']>[0][number];

const ROWS = Number(process.env['BENCH_ROWS'] ?? 1_000_000);
const TAIL = Number(process.env['BENCH_TAIL'] ?? 10_000);
const BATCH = 1000;
const root = mkdtempSync(join(process.env['BENCH_DIR'] ?? tmpdir(), 'postern-bench-claims-'));
const dir = join(root, 'journal');
const clock = systemClock;
const ctx: AnchorContext = {
  journalDir: dir,
  anchorPath: join(root, 'journal.anchor'),
  key: randomBytes(32),
  vaultGeneration: 1,
  catalogDigest: 'c'.repeat(64),
  clock,
  log: (l) => process.stdout.write(`  log: ${l}\n`),
  checkpoints: { path: join(root, 'journal.checkpoints.jsonl'), seed: randomBytes(32) },
};
const t = (): number => clock.monotonicMs();
const s = (x: number): string => `${(x / 1000).toFixed(2)} s`;

function calls(from: number, n: number): Intent[] {
  return Array.from({ length: n }, (_, i) => {
    const k = from + i;
    return {
      call_id: `c-${k}-${randomBytes(4).toString('hex')}`, session_id: null, run_id: 'run-1', tool: 'create_issue', revision_seen: 1, revision_executed: 1,
      handler_revision: `postern/0.1.0+catalog.${'c'.repeat(16)}`,
      raw_arguments: { title: `note ${k}`, body: 'x'.repeat(200) }, normalized_arguments: { title: `note ${k}`, body: 'x'.repeat(200) },
      adapter_applied: null, idempotency_key: `k-${k}`, args_digest: `d-${k}`,
      approval: { mode: 'per-call' as const, id: `ap-${k}`, decided_by: 'operator', decided_at: '2026-01-01T00:00:00.000Z', outcome: 'approved' as const },
      decision_path: ['admit', 'resolve', 'validate', 'approve:per-call'], side_effect_started: false, at: '2026-01-01T00:00:00.000Z',
      target: { kind: 'http' as const, method: 'POST', url: 'https://api.example.test/v1/notes' },
    };
  });
}

function write(a: ReturnType<typeof openAnchoredJournals>, from: number, n: number): void {
  for (let done = 0; done < n; done += BATCH) {
    const batch = calls(from + done, Math.min(BATCH, n - done));
    a.journals.activity.recordIntents(batch);
    a.journals.activity.recordOutcomes(batch.map((c) => ({ call_id: c.call_id, outcome: { status: 'success' as const, side_effect_started: true, duration_ms: 12, response_status: 201, result: { id: c.call_id, ok: true } } })));
  }
}

let t0 = t();
let a = openAnchoredJournals(ctx);
write(a, 0, Math.floor(ROWS / 2));
const gen = t() - t0;
t0 = t();
a.close();
const closeMs = t() - t0;
t0 = t();
a = openAnchoredJournals(ctx);
const clean = t() - t0;
write(a, ROWS, TAIL);
// A kill: the journals are left as they are, no seal at close.
a.journals.close();
a.keeper.close();
t0 = t();
a = openAnchoredJournals(ctx);
const killed = t() - t0;
a.close();
unlinkSync(join(dir, 'claims.verified'));
t0 = t();
a = openAnchoredJournals(ctx);
const whole = t() - t0;
a.close();
process.stdout.write(
  [
    `activity entries: ${ROWS + 2 * TAIL} (${ROWS / 2 + TAIL} claims); generated in ${s(gen)}`,
    `seal at a clean close: ${s(closeMs)}`,
    `start after a clean stop (claim rows against the seal): ${s(clean)}`,
    `start after a kill, ${2 * TAIL} entries since the last seal: ${s(killed)}`,
    `start with no verified point (the whole chain walked): ${s(whole)}`,
  ].join('\n') + '\n',
);
rmSync(root, { recursive: true, force: true });
