/**
 * One session's history in time order: its own events (start, tool lists,
 * list_changed, grants, close), the daemon-wide events journaled while it was
 * open (lock and unlock, catalog accepted, refused or rejected, vault changes,
 * daemon start and stop), and each of its calls as steps — admitted, the
 * approval decided, the intent written, rejected or replayed, the outcome.
 *
 * Invariants:
 * - read-only: built from what the journals return, nothing is written;
 * - the two sessions-journal sources are bounded and ordered by sequence
 *   numbers (the session's start and close entries); call steps from the
 *   activity journal are ordered by time (stable: a call's own steps keep
 *   their order on a tie) and merged in by time, ties keeping the
 *   sessions-journal entry first;
 * - every list is bounded by `limit`, and `truncated` says when a bound was hit;
 * - values are returned as journaled: rendering escapes them (audit-render.ts).
 */
import type { ActivityJournal } from './activity.js';
import type { SessionsJournal } from './sessions.js';
import type { CallView, SessionEventRow } from './types.js';

export type TimelineSource = 'session' | 'daemon' | 'call';

export interface TimelineEntry {
  readonly at: string;
  readonly source: TimelineSource;
  /** A session event type, a daemon event type, or a call step: admitted | approval | intent | rejected | replayed | outcome. */
  readonly kind: string;
  /** For call steps. */
  readonly call_id: string | null;
  readonly tool: string | null;
  readonly data: Record<string, unknown>;
}

export interface SessionTimeline {
  readonly session_id: string;
  readonly entries: readonly TimelineEntry[];
  /** A limit was reached: older daemon events, events or calls may be missing. */
  readonly truncated: boolean;
}

const OPEN_END = Number.MAX_SAFE_INTEGER;

/** The timeline of `session_id`, or undefined when neither journal knows it. */
export function sessionTimeline(j: { readonly sessions: SessionsJournal; readonly activity: ActivityJournal }, session_id: string, limit: number): SessionTimeline | undefined {
  const own = j.sessions.events(session_id, { limit });
  const calls = j.activity.listCalls({ session_id, limit });
  if (own.length === 0 && calls.length === 0) return undefined;
  const { after, before } = daemonWindow(own);
  return buildTimeline(session_id, limit, own, calls, j.sessions.eventsBetween(null, after, before, { limit }));
}

/** The seqs the daemon-wide events of a session lie strictly between: its start and its close (open-ended without one). */
export function daemonWindow(own: readonly SessionEventRow[]): { after: number; before: number } {
  return { after: own.find((e) => e.type === 'session_started')?.seq ?? 0, before: own.find((e) => e.type === 'session_closed')?.seq ?? OPEN_END };
}

/**
 * The timeline from what the journals returned (wherever they are: here, or shipped): the session's own
 * entries and the daemon-wide ones in daemonWindow, in seq order, and its calls newest first, each list bounded by `limit`.
 */
export function buildTimeline(session_id: string, limit: number, own: readonly SessionEventRow[], newestCalls: readonly CallView[], daemon: readonly SessionEventRow[]): SessionTimeline {
  const calls = [...newestCalls].reverse();
  // Both came from one chain: its sequence numbers order them exactly.
  const journaled = [...own.map((e) => [e.seq, fromEvent(e, 'session')] as const), ...daemon.map((e) => [e.seq, fromEvent(e, 'daemon')] as const)]
    .sort(([x], [y]) => x - y)
    .map(([, entry]) => entry);
  // One call's steps are in order, but a later call may be admitted before an earlier one ends (a stable sort).
  const steps = calls.flatMap(callSteps).sort((x, y) => (x.at < y.at ? -1 : x.at > y.at ? 1 : 0));
  return {
    session_id,
    entries: mergeByTime(journaled, steps),
    truncated: own.length === limit || calls.length === limit || daemon.length === limit,
  };
}

function fromEvent(e: SessionEventRow, source: 'session' | 'daemon'): TimelineEntry {
  return { at: e.at, source, kind: e.type, call_id: null, tool: null, data: e.data };
}

/** The steps of one call, each at the time it was journaled (or decided). */
export function callSteps(v: CallView): TimelineEntry[] {
  const c = v.call;
  const step = (at: string, kind: string, data: Record<string, unknown>): TimelineEntry => ({ at, source: 'call', kind, call_id: c.call_id, tool: c.tool, data });
  const out: TimelineEntry[] = [
    step(c.at, 'admitted', { revision_seen: c.revision_seen, revision_executed: c.revision_executed, idempotency_key: c.idempotency_key, adapter_applied: c.adapter_applied }),
  ];
  const a = c.approval;
  if (a !== null && a.mode !== 'none') {
    out.push(step(a.decided_at ?? v.journaled_at, 'approval', { mode: a.mode, outcome: a.outcome, decided_by: a.decided_by, approval_id: a.id, ...(a.rule === undefined ? {} : { rule: a.rule }) }));
  }
  switch (v.status) {
    case 'rejected':
      out.push(step(v.journaled_at, 'rejected', { error_code: v.rejection?.error_code ?? null, message: v.rejection?.message ?? null }));
      break;
    case 'replayed':
      out.push(step(v.journaled_at, 'replayed', { replay_of: v.replay_of }));
      break;
    case 'in_progress':
    case 'success':
    case 'error':
    case 'outcome_unknown':
      out.push(step(v.journaled_at, 'intent', { target: v.target }));
      break;
  }
  const o = v.outcome;
  if (o !== null) {
    out.push(
      step(o.at, 'outcome', {
        status: o.status,
        side_effect_started: o.side_effect_started,
        error_code: o.error_code,
        response_status: o.response_status,
        exit_code: o.exit_code,
        duration_ms: o.duration_ms,
        recovered: o.recovered,
      }),
    );
  }
  return out;
}

/** A stable merge of two lists, each already in order, by time; ties take `first`'s entry first. */
function mergeByTime(first: readonly TimelineEntry[], second: readonly TimelineEntry[]): TimelineEntry[] {
  const out: TimelineEntry[] = [];
  let i = 0;
  let k = 0;
  while (i < first.length || k < second.length) {
    const a = first[i];
    const b = second[k];
    if (b === undefined || (a !== undefined && a.at <= b.at)) {
      out.push(a!);
      i++;
    } else {
      out.push(b);
      k++;
    }
  }
  return out;
}
