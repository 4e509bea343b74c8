/**
 * Benchmark: the audit on a large activity journal. Generates BENCH_ROWS
 * activity entries (default 1,000,000: half intents, half outcomes — 500,000
 * calls over 40 tools and 2,000 sessions, realistic argument and result
 * sizes, one call in 1,000 with a recorded secret exposure) with the
 * journal's own store (so the chain, claims and indexes are the daemon's),
 * then times what an incident needs: filtered queries (tool,
 * session, error code, a time range), `show` of one call, `verify` of both
 * chains, `export` as JSON lines, and the exposure scan behind `audit
 * find-secret`; and reports the journal's bytes per call. Medians of 5 for
 * the fast operations; the whole-journal walks run once each.
 *
 * A script, not a test: read the rows per second, not absolute times (the
 * machine is shared). Set BENCH_ROWS for a smaller run and BENCH_DIR for the
 * file system to write on.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock, type Clock } from '../../src/clock/index.js';
import Database from 'better-sqlite3';
import { openJournals, type CallRecord, type TargetDetails } from '../../src/journal/index.js';
import { ActivityStore } from '../../src/journal/activity-store.js';
import { callRecordOf } from '../../src/journal/activity-schema.js';
import { toJsonText } from '../../src/journal/json.js';

const ROWS = Number(process.env['BENCH_ROWS'] ?? 1_000_000);
const CALLS = Math.floor(ROWS / 2);
const BATCH = 20_000;
const TOOLS = 40;
const SESSIONS = 2_000;
const root = mkdtempSync(join(process.env['BENCH_DIR'] ?? tmpdir(), 'postern-bench-audit-'));
const dir = join(root, 'journal');
const START = Date.parse('2026-01-01T00:00:00.000Z');
/** One call every 2 s of journal time: 500,000 calls span about 11.6 days. */
const STEP_MS = 2_000;
let tick = START;
const clock: Clock = { now: () => new Date(tick), monotonicMs: () => systemClock.monotonicMs() };

const hex = (n: number, w: number): string => n.toString(16).padStart(w, '0');
const callId = (i: number): string => `${hex(i, 8)}-0000-4000-8000-${hex(i * 7919, 12).slice(-12)}`;
const sessionId = (i: number): string => `${hex(i % SESSIONS, 8)}-1111-4111-8111-111111111111`;
const lorem = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. ';

function record(i: number): CallRecord & { target: TargetDetails } {
  const tool = `tool_${i % TOOLS}`;
  const args = { owner: 'acme', repo: `repo-${i % 97}`, title: `Ticket ${i}`, details: lorem.slice(0, 60 + (i % 60)) };
  return {
    call_id: callId(i),
    session_id: sessionId(i),
    run_id: `run-${i % 5_000}`,
    agent_release: 'agent/1.4.2',
    toolset_planned: 'ts-3',
    tool,
    revision_seen: 2,
    revision_executed: 2,
    handler_revision: '0.1.0+sha256:6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b',
    raw_arguments: { ...args, idempotency_key: `key-${i}` },
    normalized_arguments: args,
    adapter_applied: null,
    idempotency_key: `key-${i}`,
    args_digest: hex(i * 2654435761, 16).repeat(4).slice(0, 64),
    approval: i % 3 === 0 ? { mode: 'per-call', id: `appr-${i}`, decided_by: 'operator', decided_at: new Date(tick).toISOString(), outcome: 'approved' } : null,
    decision_path: ['admit', 'resolve:current', 'validate', i % 3 === 0 ? 'approve:per-call' : 'approve:none', 'intent', 'execute'],
    side_effect_started: false,
    at: new Date(tick).toISOString(),
    ...(i % 1_000 === 0 ? { exposures: [{ credential: 'api-token', fingerprint: `${'a'.repeat(16)}:${hex(i, 32)}`, in: ['arguments' as const] }] } : {}),
    target: { kind: 'http', method: 'POST', url: `https://tracker.example.com/repos/acme/repo-${i % 97}/issues` },
  };
}

/**
 * The journal files are created by openJournals (schema, journal id); the
 * entries are then appended with the journal's own store and chain — the
 * code every daemon write goes through — in large transactions without
 * fsync, since only the result is measured, not the writing.
 */
function generate(): number {
  openJournals(dir, { clock }).close();
  const db = new Database(join(dir, 'activity.db'));
  db.pragma('synchronous = OFF');
  const store = new ActivityStore(db, () => new Date(tick));
  const t0 = systemClock.monotonicMs();
  const appendBatch = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      tick = START + i * STEP_MS;
      const { target, ...call } = record(i);
      const c = callRecordOf(call);
      store.appendHead('intent', c, toJsonText({ call: c, target }), null, true);
      const failed = i % 50 === 0;
      const body = {
        status: failed ? ('error' as const) : ('success' as const),
        side_effect_started: true,
        error_code: failed ? 'TARGET_ERROR' : null,
        response_status: failed ? 502 : 201,
        exit_code: null,
        connected_ip: '203.0.113.7',
        duration_ms: 40 + (i % 200),
        result: { content: [{ type: 'text', text: `HTTP 201: {"id":${i},"title":"Ticket ${i}"}` }], structuredContent: { status: 201, body: { id: i, title: `Ticket ${i}`, url: `https://tracker.example.com/t/${i}`, body: lorem.repeat(3) }, result_revision: 2, call_id: c.call_id } },
        result_digest: hex(i, 64),
        target_extra: null,
        recovered: false,
      };
      store.appendOutcome(c.call_id, body, () => 'completed');
    }
  });
  try {
    for (let from = 0; from < CALLS; from += BATCH) appendBatch(from, Math.min(CALLS, from + BATCH));
  } finally {
    db.close();
  }
  return systemClock.monotonicMs() - t0;
}

function time<T>(fn: () => T): { ms: number; value: T } {
  const t0 = systemClock.monotonicMs();
  const value = fn();
  return { ms: systemClock.monotonicMs() - t0, value };
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
function medianOf(fn: () => unknown, n = 5): number {
  const xs: number[] = [];
  for (let k = 0; k < n; k++) xs.push(time(fn).ms);
  return median(xs);
}

const genMs = generate();
const bytes = ['activity.db', 'activity.db-wal'].reduce((sum, f) => {
  try {
    return sum + statSync(join(dir, f)).size;
  } catch {
    return sum;
  }
}, 0);

const j = openJournals(dir, { readonly: true });
const rows: [string, string, string][] = [];
const fmt = (ms: number): string => (ms < 10 ? ms.toFixed(2) : ms.toFixed(0));
const perSec = (n: number, ms: number): string => `${Math.round((n / ms) * 1000).toLocaleString('en-US')}/s`;
try {
  const mid = CALLS >> 1;
  const day = new Date(START + mid * STEP_MS).toISOString();
  const nextDay = new Date(START + mid * STEP_MS + 86_400_000).toISOString();
  const q = [
    ['activity --tool (newest 100)', () => j.activity.listCalls({ tool: 'tool_7', limit: 100 })],
    ['activity --session (newest 100)', () => j.activity.listCalls({ session_id: sessionId(mid), limit: 100 })],
    ['activity --error (newest 100)', () => j.activity.listCalls({ error_code: 'TARGET_ERROR', limit: 100 })],
    ['activity --since/--until one day (100)', () => j.activity.listCalls({ since: day, until: nextDay, limit: 100 })],
    ['activity --tool --limit 10000', () => j.activity.listCalls({ tool: 'tool_7', limit: 10_000 })],
    ['show (one call by id)', () => j.activity.getCall(callId(mid))],
  ] as const;
  for (const [name, fn] of q) {
    const n = (fn() as unknown[] | undefined)?.length;
    rows.push([name, `${fmt(medianOf(fn))} ms`, typeof n === 'number' ? `${n} rows` : '1 call']);
  }
  const v = time(() => j.activity.verify());
  if (!v.value.ok) throw new Error('the generated journal does not verify');
  rows.push(['verify (activity chain + claims)', `${fmt(v.ms)} ms`, perSec(ROWS, v.ms)]);
  let lines = 0;
  const e = time(() => j.activity.exportJsonl(() => void lines++));
  rows.push(['export (JSON lines)', `${fmt(e.ms)} ms`, perSec(lines, e.ms)]);
  let hits = 0;
  const f = time(() => {
    for (const x of j.activity.exposures()) hits += x.exposures.length;
  });
  rows.push([`find-secret scan (${hits} exposures)`, `${fmt(f.ms)} ms`, perSec(ROWS, f.ms)]);
} finally {
  j.close();
  rmSync(root, { recursive: true, force: true });
}

console.log(`audit on a generated activity journal: ${ROWS.toLocaleString('en-US')} entries (${CALLS.toLocaleString('en-US')} calls), generated in ${(genMs / 1000).toFixed(1)} s (${perSec(ROWS, genMs)})`);
console.log(`journal size ${(bytes / 1e6).toFixed(0)} MB: ${Math.round(bytes / CALLS)} bytes per call (intent + outcome, indexes included)`);
const w = Math.max(...rows.map((r) => r[0].length));
for (const [name, ms, extra] of rows) console.log(`  ${name.padEnd(w)}  ${ms.padStart(10)}  ${extra}`);
