/**
 * Benchmark: the audit on a large journal. Generates BENCH_ROWS activity
 * entries (default 1,000,000: half intents, half outcomes, written through
 * the journal's group commit with an anchor keeper signing checkpoints, as
 * the daemon does), then times a filtered query, `show`, the chain verify,
 * a bundle export of 100 calls and its offline verification, and reports the
 * journal's bytes per call. Shared machines are noisy: read the orders of
 * magnitude. Not a test: `node --import tsx scripts/bench/audit-proof.ts`. The queries are
 * measured more widely by `audit-journal.ts`; this one writes through the group commit, so the
 * checkpoints (and the bundle's runs) are what the daemon leaves.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../../src/clock/index.js';
import { openJournals } from '../../src/journal/index.js';
import { openAnchoredJournals } from '../../src/journal/anchor/index.js';
import { readCheckpoints } from '../../src/journal/checkpoint/file.js';
import { walkTrust } from '../../src/journal/checkpoint/record.js';
import { buildBundle } from '../../src/journal/bundle/build.js';
import { bundleBytes } from '../../src/journal/bundle/format.js';
import { verifyBundle } from '../../src/journal/bundle/verify.js';

const ROWS = Number(process.env['BENCH_ROWS'] ?? 1_000_000);
const CALLS = Math.floor(ROWS / 2);
const BATCH = 1000;
const TOOLS = ['deploy_preview', 'create_issue', 'read_status', 'run_migration', 'list_builds'];
const root = mkdtempSync(join(process.env['BENCH_DIR'] ?? tmpdir(), 'postern-bench-audit-'));
const dir = join(root, 'journal');

const clock = systemClock;
const t = (): number => clock.monotonicMs();
const ms = (x: number): string => `${x.toFixed(1)} ms`;

const t0 = t();
const a = openAnchoredJournals({
  journalDir: dir,
  anchorPath: join(root, 'journal.anchor'),
  key: randomBytes(32),
  vaultGeneration: 1,
  catalogDigest: 'c'.repeat(64),
  clock,
  log: () => undefined,
  checkpoints: { path: join(root, 'journal.checkpoints.jsonl'), seed: randomBytes(32) },
});
const SESSIONS = 97;
for (let s = 0; s < SESSIONS; s++) {
  a.journals.sessions.startSession({ session_id: `s-${s}`, transport: 'stdio', client_name: 'bench-agent', client_version: '1.0.0', protocol_version: '2025-11-25', peer_pid: 1000 + s, peer_uid: 1000, run_id: 'run-1', agent_release: null });
}
let probe = '';
for (let done = 0; done < CALLS; done += BATCH) {
  a.journals.sessions.event(`s-${(done / BATCH) % SESSIONS}`, 'tools_listed', { tools: TOOLS.length });
  const batch = Array.from({ length: Math.min(BATCH, CALLS - done) }, (_, i) => {
    const n = done + i;
    const call_id = `c-${n}-${randomBytes(4).toString('hex')}`;
    return {
      call_id, session_id: `s-${n % 97}`, run_id: 'run-1', tool: TOOLS[n % TOOLS.length]!, revision_seen: 1, revision_executed: 1,
      handler_revision: `postern/0.1.0+catalog.${'c'.repeat(16)}`,
      raw_arguments: { title: `note ${n}`, body: 'x'.repeat(200) }, normalized_arguments: { title: `note ${n}`, body: 'x'.repeat(200) },
      adapter_applied: null, idempotency_key: `k-${n}`, args_digest: `d-${n}`,
      approval: { mode: 'per-call' as const, id: `ap-${n}`, decided_by: 'operator', decided_at: '2026-01-01T00:00:00.000Z', outcome: 'approved' as const },
      decision_path: ['admit', 'resolve', 'validate', 'approve:per-call'], side_effect_started: false, at: '2026-01-01T00:00:00.000Z',
      target: { kind: 'http' as const, method: 'POST', url: 'https://api.example.test/v1/notes' },
    };
  });
  a.journals.activity.recordIntents(batch);
  a.journals.activity.recordOutcomes(batch.map((c) => ({ call_id: c.call_id, outcome: { status: 'success' as const, side_effect_started: true, duration_ms: 12, response_status: 201, result: { id: c.call_id, ok: true } } })));
  if (done === Math.floor(CALLS / 2 / BATCH) * BATCH) probe = batch[0]!.call_id;
}
a.close();
const genMs = t() - t0;
const bytes = statSync(join(dir, 'activity.db')).size;

const j = openJournals(dir, { readonly: true });
const time = <T>(fn: () => T, reps = 5): { ms: number; value: T } => {
  let value = fn();
  const xs: number[] = [];
  for (let i = 0; i < reps; i++) {
    const s = t();
    value = fn();
    xs.push(t() - s);
  }
  return { ms: xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)]!, value };
};
const filtered = time(() => j.activity.listCalls({ tool: 'run_migration', session_id: 's-13', limit: 100 }));
const show = time(() => j.activity.getCall(probe));
const verify = time(() => j.activity.verify(), 1);
const walk = walkTrust(readCheckpoints(join(root, 'journal.checkpoints.jsonl')));
const bundle = time(() => bundleBytes(buildBundle({ journals: j, calls: j.activity.listCalls({ tool: 'run_migration', limit: 100 }), checkpoints: walk.accepted, catalogText: () => undefined }).bundle), 3);
const offline = time(() => verifyBundle(bundle.value), 3);
// `audit find-secret` reads every entry that recorded an exposure: here, none does, so this is the scan's floor.
const exposures = time(() => [...j.activity.exposures()].length, 1);
j.close();

console.log(`journal: ${ROWS.toLocaleString('en')} activity entries (${CALLS.toLocaleString('en')} calls) generated in ${(genMs / 1000).toFixed(1)} s; activity.db ${(bytes / 1e6).toFixed(0)} MB = ${Math.round(bytes / CALLS)} bytes per call; ${walk.accepted.length} checkpoints`);
console.log(`filtered query (tool + session, 100 newest): ${ms(filtered.ms)} (${filtered.value.length} rows)`);
console.log(`show (one call by id): ${ms(show.ms)}`);
console.log(`verify (whole chain + claims): ${(verify.ms / 1000).toFixed(2)} s = ${Math.round(ROWS / (verify.ms / 1000)).toLocaleString('en')} entries/s (${verify.value.ok ? 'ok' : 'BROKEN'})`);
console.log(`export --bundle (100 calls): ${ms(bundle.ms)}, ${(bundle.value.length / 1e6).toFixed(2)} MB; verify --bundle: ${ms(offline.ms)} (${offline.value.entries} activity entries; ${offline.value.sessions?.sessions ?? 0} sessions in ${offline.value.sessions?.entries ?? 0} sessions entries)`);
console.log(`find-secret scan (whole journal): ${(exposures.ms / 1000).toFixed(2)} s = ${Math.round(ROWS / (exposures.ms / 1000)).toLocaleString('en')} entries/s`);
rmSync(root, { recursive: true, force: true });
