/**
 * Drain counts (`postern audit revisions`, and `catalog check`'s retirement
 * warning): per tool and planned revision, how its calls were handled, when it
 * was last called, and how many live sessions are still on it — so a revision
 * is retired once its count reaches zero, not by the calendar (seed 004).
 *
 * Definitions (docs/audit.md):
 * - planned revision: the call's `revision_seen` (null when the call was
 *   refused before its contract was resolved: unknown tool, secret in the
 *   arguments, missing key…);
 * - a call that ran (intent) counts once as current, adapted (carried to the
 *   current revision, by an adapter or unchanged), pinned, or migrated (a
 *   queued call carried by `migrate` after a catalog change); `rejected` and
 *   `replayed` are the other two head kinds; so every call counts in exactly
 *   one of these six;
 * - human_handled overlaps them: an operator decided this call's own card
 *   (approved or denied) — the first call bearing an approval id; later calls
 *   covered by the session grant that card gave are not counted;
 * - awaiting approval (`--waiting`, from the running daemon's queue): calls whose
 *   card is open now, under the revision they were planned against — they have
 *   no journal entry yet (an intent is journaled once approved);
 * - live sessions: sessions of the daemon's latest start that have not closed
 *   (none when the daemon's last event is its stop), each counted under the
 *   revision it is on: its last listing or its last call, whichever is later.
 *
 * Pure: the caller reads the journals and passes rows in.
 */
import type { CallHead, CallRecord } from '../journal/index.js';
import type { Catalog } from '../contracts/index.js';
import { renderTable } from './table.js';
import { sanitizeForTerminal as clean } from '../rules/terminal-text.js';

export const DRAIN_JSON_FORMAT = 'postern.audit-revisions/1';

const DrainCounts = ['current', 'adapted', 'pinned', 'migrated', 'rejected', 'replayed', 'human_handled'] as const;
type DrainCount = (typeof DrainCounts)[number];

type RevisionStatus = 'current' | 'served' | 'deprecated' | 'retired' | 'not_in_catalog';

export interface RevisionUsage {
  readonly tool: string;
  /** The planned revision; null: refused before a contract was resolved. */
  readonly revision: number | null;
  /** Under the accepted catalog. */
  readonly status: RevisionStatus;
  readonly deprecated: string | null;
  readonly counts: Record<DrainCount, number>;
  readonly last_seen: string | null;
  readonly live_sessions: number;
  /** Calls waiting for an approval now, by the revision they were planned against; absent when not asked (`--waiting` asks the daemon). */
  readonly awaiting_approval?: number;
}

/** A call waiting for approval in the daemon's queue (its card's tool and planned revision). */
export interface WaitingCall {
  readonly tool: string;
  readonly revision_seen: number | null;
}

/** Where each live session stands: tool → the revision it is on, and when that was last stated. */
export interface LiveSession {
  readonly session_id: string;
  /** From the session's last `tools_listed` event. */
  readonly listed: { readonly at: string; readonly revisions: Readonly<Record<string, number>> } | undefined;
}

interface DrainInput {
  readonly heads: Iterable<CallHead>;
  readonly live: readonly LiveSession[];
  /** The accepted catalog, for each revision's status and for served revisions nobody called; undefined when none. */
  readonly catalog: Catalog | undefined;
  readonly since?: string | undefined;
  readonly tool?: string | undefined;
  /** The daemon's approval queue now, when it was asked (a waiting call has no journal entry yet). */
  readonly waiting?: readonly WaitingCall[] | undefined;
}

function how(call: CallRecord): 'current' | 'adapted' | 'pinned' | 'migrated' {
  const path = call.decision_path;
  if (path.some((s) => s.startsWith('recheck:migrated'))) return 'migrated';
  if (path.includes('resolve:pin')) return 'pinned';
  if (path.includes('resolve:bridge')) return 'adapted';
  return 'current';
}

function statusOf(catalog: Catalog | undefined, tool: string, revision: number | null): { status: RevisionStatus; deprecated: string | null } {
  const t = catalog?.tools.get(tool);
  const r = revision === null ? undefined : t?.revisions.find((x) => x.revision === revision);
  if (t === undefined || r === undefined) return { status: 'not_in_catalog', deprecated: null };
  const deprecated = r.deprecated ?? null;
  if (r.retired !== undefined) return { status: 'retired', deprecated };
  if (deprecated !== null) return { status: 'deprecated', deprecated };
  return { status: r === t.current ? 'current' : 'served', deprecated };
}

const zero = (): Record<DrainCount, number> => ({ current: 0, adapted: 0, pinned: 0, migrated: 0, rejected: 0, replayed: 0, human_handled: 0 });
const rowKey = (tool: string, revision: number | null): string => `${tool}\n${revision ?? ''}`;

export function revisionDrain(input: DrainInput): RevisionUsage[] {
  const rows = new Map<string, { tool: string; revision: number | null; counts: Record<DrainCount, number>; last: string | null; live: number }>();
  const row = (tool: string, revision: number | null) => {
    const k = rowKey(tool, revision);
    let r = rows.get(k);
    if (r === undefined) rows.set(k, (r = { tool, revision, counts: zero(), last: null, live: 0 }));
    return r;
  };
  const approvals = new Set<string>();
  const liveIds = new Set(input.live.map((s) => s.session_id));
  /** session → tool → (at, revision) of its last call. */
  const lastCall = new Map<string, Map<string, { at: string; revision: number }>>();
  for (const head of input.heads) {
    const c = head.call;
    const a = c.approval;
    const human = a !== null && (a.outcome === 'approved' || a.outcome === 'denied') && a.decided_by !== null && (a.id === null || !approvals.has(a.id));
    if (a?.id !== null && a?.id !== undefined) approvals.add(a.id);
    if (c.session_id !== null && liveIds.has(c.session_id) && c.revision_seen !== null) {
      let m = lastCall.get(c.session_id);
      if (m === undefined) lastCall.set(c.session_id, (m = new Map<string, { at: string; revision: number }>()));
      m.set(c.tool, { at: c.at, revision: c.revision_seen });
    }
    if (input.tool !== undefined && c.tool !== input.tool) continue;
    if (input.since !== undefined && c.at < input.since) continue;
    const r = row(c.tool, c.revision_seen);
    switch (head.kind) {
      case 'intent':
        r.counts[how(c)]++;
        break;
      case 'rejected':
        r.counts.rejected++;
        break;
      case 'replay':
        r.counts.replayed++;
        break;
    }
    if (human) r.counts.human_handled++;
    if (r.last === null || c.at > r.last) r.last = c.at;
  }
  for (const s of input.live) {
    const on = new Map<string, { at: string; revision: number }>();
    for (const [tool, revision] of Object.entries(s.listed?.revisions ?? {})) on.set(tool, { at: s.listed?.at ?? '', revision });
    for (const [tool, v] of lastCall.get(s.session_id) ?? []) {
      const listed = on.get(tool);
      if (listed === undefined || v.at >= listed.at) on.set(tool, v);
    }
    for (const [tool, v] of on) if (input.tool === undefined || tool === input.tool) row(tool, v.revision).live++;
  }
  const waiting = new Map<string, number>();
  for (const w of input.waiting ?? []) {
    if (input.tool !== undefined && w.tool !== input.tool) continue;
    row(w.tool, w.revision_seen);
    const k = rowKey(w.tool, w.revision_seen);
    waiting.set(k, (waiting.get(k) ?? 0) + 1);
  }
  // Served revisions nobody called still show, with zeros: "drained" is visible.
  for (const t of input.catalog?.tools.values() ?? []) {
    if (input.tool !== undefined && t.name !== input.tool) continue;
    for (const r of t.revisions) if (r.retired === undefined) row(t.name, r.revision);
  }
  return [...rows.values()]
    .sort((x, y) => (x.tool === y.tool ? (x.revision ?? -1) - (y.revision ?? -1) : x.tool < y.tool ? -1 : 1))
    .map((r) => ({
      tool: r.tool,
      revision: r.revision,
      ...statusOf(input.catalog, r.tool, r.revision),
      counts: r.counts,
      last_seen: r.last,
      live_sessions: r.live,
      ...(input.waiting === undefined ? {} : { awaiting_approval: waiting.get(rowKey(r.tool, r.revision)) ?? 0 }),
    }));
}

export function drainJson(rows: readonly RevisionUsage[], since: string | undefined): unknown {
  return { format: DRAIN_JSON_FORMAT, since: since ?? null, revisions: rows };
}

const HEADER = ['TOOL', 'REV', 'STATUS', 'CURRENT', 'ADAPTED', 'PINNED', 'MIGRATED', 'REJECTED', 'REPLAYED', 'HUMAN', 'LAST SEEN', 'LIVE'] as const;

/** The table; a WAITING column when the daemon's queue was asked (`--waiting`). */
export function renderDrain(rows: readonly RevisionUsage[]): string {
  const asked = rows.some((r) => r.awaiting_approval !== undefined);
  return renderTable(
    asked ? [...HEADER, 'WAITING'] : HEADER,
    rows.map((r) => [
      clean(r.tool, 64),
      r.revision === null ? '-' : String(r.revision),
      r.status === 'deprecated' ? `deprecated ${r.deprecated ?? ''}` : r.status.replace(/_/g, ' '),
      ...DrainCounts.map((k) => String(r.counts[k])),
      r.last_seen === null ? '-' : r.last_seen.slice(0, 19).replace('T', ' '),
      String(r.live_sessions),
      ...(asked ? [String(r.awaiting_approval ?? 0)] : []),
    ]),
  );
}

/** A revision the candidate retires (retired there, served in the accepted catalog) that calls used since `since`. */
export interface RetiredInUse {
  readonly tool: string;
  readonly revision: number;
  readonly calls: number;
  readonly last_seen: string;
  readonly live_sessions: number;
}

/** Revisions that `candidate` retires or drops while the drain says they were used since the window began (or are live). */
export function retiredInUse(usage: readonly RevisionUsage[], old: Catalog | undefined, candidate: Catalog): RetiredInUse[] {
  const out: RetiredInUse[] = [];
  for (const u of usage) {
    if (u.revision === null) continue;
    const before = old?.tools.get(u.tool)?.revisions.find((r) => r.revision === u.revision);
    if (before === undefined || before.retired !== undefined) continue;
    const ct = candidate.tools.get(u.tool);
    const after = ct?.revisions.find((r) => r.revision === u.revision);
    const retiredNow = ct === undefined || after === undefined || after.retired !== undefined || ct.current.retired !== undefined;
    if (!retiredNow) continue;
    const calls = DrainCounts.filter((k) => k !== 'human_handled').reduce((n, k) => n + u.counts[k], 0);
    if (calls === 0 && u.live_sessions === 0) continue;
    out.push({ tool: u.tool, revision: u.revision, calls, last_seen: u.last_seen ?? '-', live_sessions: u.live_sessions });
  }
  return out;
}
