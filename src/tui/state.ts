/**
 * The TUI's picture of the daemon: a pure reducer from the subscription's
 * snapshot and events. Rendering is a function of this state (plus what the
 * operator is doing in the UI), never of the client directly.
 *
 * Invariants: an event at or below the last applied sequence number is
 * ignored, so a replay after the snapshot cannot apply twice; pending cards
 * stay ordered oldest first and a new arrival is appended by that order
 * without moving any other card; a resolved card leaves the queue and its
 * decision is remembered (bounded) so the UI can say what happened to the
 * card the operator was looking at; the activity tail is bounded.
 */
import type {
  ActivityView,
  ApprovalCard,
  ApprovalDecision,
  CatalogPendingView,
  EventEnvelope,
  GrantView,
  OperatorSnapshot,
  SessionView,
} from './contract.js';

const ACTIVITY_LIMIT = 500;
const RESOLVED_LIMIT = 200;

export type Connection = 'connecting' | 'open' | 'closed';

export interface OperatorState {
  readonly connection: Connection;
  readonly closedReason: string | null;
  readonly locked: boolean;
  readonly lockReason: string | null;
  /** The vault's key derivation is below the production floor (a test-profile vault): a badge says so. */
  readonly vaultBelowFloor: boolean;
  /** The approval page's run fingerprint, when the daemon runs a page (shown in the header). */
  readonly pageRun: string | null;
  /** Journal shipping is failing or stopped: a badge says so (null: fine, or off). */
  readonly shipProblem: string | null;
  readonly pending: readonly ApprovalCard[];
  readonly stale: Readonly<Record<string, string>>;
  readonly resolved: Readonly<Record<string, ApprovalDecision>>;
  readonly sessions: readonly SessionView[];
  readonly grants: readonly GrantView[];
  readonly activity: readonly ActivityView[];
  readonly catalog: CatalogPendingView | null;
  readonly lastSeq: number;
}

export type StateAction =
  | { readonly type: 'snapshot'; readonly snapshot: OperatorSnapshot }
  | { readonly type: 'event'; readonly envelope: EventEnvelope }
  | { readonly type: 'closed'; readonly reason: string };

export const initialState: OperatorState = {
  connection: 'connecting',
  closedReason: null,
  locked: false,
  lockReason: null,
  vaultBelowFloor: false,
  pageRun: null,
  shipProblem: null,
  pending: [],
  stale: {},
  resolved: {},
  sessions: [],
  grants: [],
  activity: [],
  catalog: null,
  lastSeq: -1,
};

function byAge(a: ApprovalCard, b: ApprovalCard): number {
  const d = Date.parse(a.requested_at) - Date.parse(b.requested_at);
  return d !== 0 ? d : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

function insertCard(pending: readonly ApprovalCard[], card: ApprovalCard): ApprovalCard[] {
  if (pending.some((c) => c.id === card.id)) return pending.map((c) => (c.id === card.id ? card : c));
  return [...pending, card].sort(byAge);
}

function remember(resolved: Readonly<Record<string, ApprovalDecision>>, id: string, d: ApprovalDecision): Record<string, ApprovalDecision> {
  const entries = Object.entries(resolved);
  const kept = entries.length >= RESOLVED_LIMIT ? entries.slice(entries.length - RESOLVED_LIMIT + 1) : entries;
  return { ...Object.fromEntries(kept), [id]: d };
}

function withoutKey<V>(r: Readonly<Record<string, V>>, key: string): Record<string, V> {
  const { [key]: _drop, ...rest } = r;
  return rest;
}

function upsert<T extends { readonly id: string }>(list: readonly T[], item: T): T[] {
  return list.some((x) => x.id === item.id) ? list.map((x) => (x.id === item.id ? item : x)) : [...list, item];
}

function applyEvent(s: OperatorState, env: EventEnvelope): OperatorState {
  const e = env.event;
  switch (e.type) {
    case 'approval.added':
      return { ...s, pending: insertCard(s.pending, e.card) };
    case 'approval.resolved':
      return {
        ...s,
        pending: s.pending.filter((c) => c.id !== e.id),
        stale: withoutKey(s.stale, e.id),
        resolved: remember(s.resolved, e.id, e.decision),
      };
    case 'approval.stale':
      return s.pending.some((c) => c.id === e.id) ? { ...s, stale: { ...s.stale, [e.id]: e.reason } } : s;
    case 'activity': {
      // A call is announced again as it advances: the newest record per id, in place.
      const activity = upsert(s.activity, e.record);
      return { ...s, activity: activity.length > ACTIVITY_LIMIT ? activity.slice(activity.length - ACTIVITY_LIMIT) : activity };
    }
    case 'session.opened':
      return { ...s, sessions: upsert(s.sessions, e.session) };
    case 'session.closed':
      return {
        ...s,
        sessions: s.sessions.map((x) => (x.id === e.id ? { ...x, ended_at: e.ended_at } : x)),
      };
    case 'grant.added':
      return { ...s, grants: upsert(s.grants, e.grant) };
    case 'grant.revoked':
      return { ...s, grants: s.grants.filter((g) => g.id !== e.id) };
    case 'daemon.locked':
      // A locked daemon decides nothing; its queue is voided on its side.
      return { ...s, locked: true, lockReason: e.reason };
    case 'daemon.unlocked':
      return { ...s, locked: false, lockReason: null };
    case 'ship.problem':
      return { ...s, shipProblem: e.problem };
    case 'catalog.adopted':
      return { ...s, catalog: null };
    case 'catalog.pending':
      return { ...s, catalog: e.pending };
  }
}

export function reduce(s: OperatorState, a: StateAction): OperatorState {
  switch (a.type) {
    case 'snapshot': {
      const snap = a.snapshot;
      return {
        ...s,
        connection: s.connection === 'closed' ? 'closed' : 'open',
        locked: snap.status.locked,
        lockReason: snap.status.lock_reason,
        vaultBelowFloor: snap.status.vault_kdf.below_floor,
        pageRun: snap.status.page_run ?? null,
        shipProblem: snap.status.ship_problem ?? null,
        pending: [...snap.pending].sort(byAge),
        stale: {},
        sessions: [...snap.sessions],
        grants: [...snap.grants],
        activity: [...snap.recent].reverse().slice(-ACTIVITY_LIMIT), // the snapshot is newest first
        catalog: snap.catalog,
        lastSeq: snap.last_seq,
      };
    }
    case 'event':
      if (a.envelope.seq <= s.lastSeq) return s;
      return { ...applyEvent(s, a.envelope), lastSeq: a.envelope.seq };
    case 'closed':
      return { ...s, connection: 'closed', closedReason: a.reason };
  }
}
