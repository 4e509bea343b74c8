/**
 * The operator contract as the TUI sees it: the client it is handed, the
 * snapshot it starts from and the events that move it. The TUI imports these
 * names from here only, so the shapes it depends on are listed in one place;
 * they are re-exported from src/protocol (the only layer the TUI shares with
 * the daemon).
 */
export type {
  ApprovalCard,
  ApprovalDecision,
  OperatorVerdict,
} from '../protocol/approvals.js';
import type { ApprovalCard, ApprovalDecision } from '../protocol/approvals.js';

export interface SessionView {
  readonly id: string;
  readonly client_name: string | null;
  readonly client_version: string | null;
  readonly pid: number | null;
  readonly opened_at: string;
  readonly ended_at: string | null;
}

export interface GrantView {
  readonly id: string;
  readonly session_id: string;
  readonly tool: string;
  readonly revision: number;
  readonly granted_at: string;
}

export interface ActivityView {
  readonly id: string;
  readonly at: string;
  readonly session_id: string | null;
  readonly tool: string;
  readonly decision: string;
  readonly outcome: string;
  readonly error: string | null;
}

export interface CatalogChangeView {
  readonly tool: string;
  readonly change: string;
  readonly detail: string;
}

export interface CatalogPendingView {
  readonly digest: string;
  readonly changes: readonly CatalogChangeView[];
}

export interface StatusView {
  readonly locked: boolean;
}

export interface OperatorSnapshot {
  readonly pending: readonly ApprovalCard[];
  readonly sessions: readonly SessionView[];
  readonly grants: readonly GrantView[];
  readonly recent: readonly ActivityView[];
  readonly catalog: CatalogPendingView | null;
  readonly status: StatusView;
  readonly last_seq: number;
}

export type OperatorEvent =
  | { readonly type: 'approval.added'; readonly card: ApprovalCard }
  | { readonly type: 'approval.resolved'; readonly id: string; readonly decision: ApprovalDecision }
  | { readonly type: 'approval.stale'; readonly id: string; readonly reason: string }
  | { readonly type: 'activity'; readonly record: ActivityView }
  | { readonly type: 'session.opened'; readonly session: SessionView }
  | { readonly type: 'session.closed'; readonly id: string; readonly ended_at: string }
  | { readonly type: 'grant.added'; readonly grant: GrantView }
  | { readonly type: 'grant.revoked'; readonly id: string }
  | { readonly type: 'daemon.locked' }
  | { readonly type: 'daemon.unlocked' }
  | { readonly type: 'catalog.adopted' }
  | { readonly type: 'catalog.pending'; readonly pending: CatalogPendingView };

export interface EventEnvelope {
  readonly seq: number;
  readonly at: string;
  readonly event: OperatorEvent;
}

export interface OperatorClient {
  readonly role: 'operator' | 'observer';
  request(op: string, params: unknown, opts?: { signal?: AbortSignal }): Promise<unknown>;
  subscribe(onEvent: (e: EventEnvelope) => void, opts?: { signal?: AbortSignal; since?: number }): Promise<OperatorSnapshot>;
  close(): void;
  readonly closed: Promise<unknown>;
}
