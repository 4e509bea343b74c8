/**
 * What each operator command does, once the connection is authenticated and
 * the message verified. One case per op, no I/O of its own: the answer is
 * data or a PosternError, and the connection turns either into a response.
 *
 * Invariants: params are validated with the op's zod schema before use; an
 * unknown op or bad params is a USAGE error, never a throw past this file;
 * a mutating op (MUTATING_OPS) on an observer connection is refused with
 * OBSERVER_READ_ONLY before anything else; decisions are attributed to the
 * server's configured operator name, never to a name the client supplies.
 */
import type { ApprovalQueue } from '../../approvals/queue.js';
import { PosternError, isPosternError } from '../../rules/errors.js';
import {
  MUTATING_OPS,
  OperatorOps,
  RequestEnvelopeSchema,
  isOperatorOp,
  type ActivityFilter,
  type ActivityView,
  type PageStatusView,
  type CatalogInUse,
  type CatalogPendingView,
  type CredentialStateView,
  type CallsProfileView,
  type DeviceView,
  type GrantView,
  type OperatorOp,
  type OperatorParams,
  type OperatorRole,
  type OperatorSnapshot,
  type PairingView,
  type RunReport,
  type SessionView,
  type ShadowChange,
  type StatusView,
  type WireError,
} from '../../protocol/operator/index.js';

/** What the daemon offers the operator channel (built by the composition root). */
export interface OperatorBackend {
  readonly queue: ApprovalQueue;
  readonly operatorName: string;
  status(role: OperatorRole): StatusView;
  sessions(p: { include_ended?: boolean | undefined; limit?: number | undefined }): SessionView[];
  grants(sessionId: string | undefined): GrantView[];
  /** Throws APPROVAL_NOT_FOUND when there is no such grant. */
  revokeGrant(id: string): GrantView;
  activity(filter: ActivityFilter): ActivityView[];
  catalogPending(): CatalogPendingView | null;
  acceptCatalog(digest: string): Promise<CatalogInUse>;
  rejectCatalog(digest: string): Promise<void>;
  /** Starts (digest) or stops (null) the shadow of a pending catalog; returns the digest in shadow. */
  shadowCatalog(digest: string | null): Promise<ShadowChange>;
  lock(): void;
  /** Signs a journal checkpoint now; throws when the anchor cannot be written. */
  checkpointNow(): { signed: boolean };
  /** The run report so far. */
  runReport(): RunReport;
  /** Minted-token credentials: valid until, last refresh, last error (never a value). */
  credentialStates(): CredentialStateView[];
  /** Where calls spent their time since the daemon started (daemon/services/call-profile.ts). */
  callsProfile(): CallsProfileView;
  /** Approval-page devices (daemon/approval-page): open a pairing, list, revoke. */
  pairDevice(name: string): PairingView;
  devices(): DeviceView[];
  pageStatus(): PageStatusView | null;
  revokeDevice(id: string): Promise<DeviceView>;
}

interface HandlerDeps {
  readonly backend: OperatorBackend;
  readonly role: OperatorRole;
  /** Starts pushing events on this connection; returns the snapshot (one subscription per connection). */
  readonly subscribe: (since: number | undefined) => OperatorSnapshot;
}

export type Outcome =
  | { readonly kind: 'result'; readonly id: number; readonly result: unknown }
  | { readonly kind: 'error'; readonly id: number | null; readonly error: WireError };

function toWireError(e: unknown): WireError {
  if (isPosternError(e)) return { code: e.code, message: e.message.slice(0, 1000) };
  return { code: 'INTERNAL', message: 'the daemon failed to handle the command' };
}

function paramsOf<O extends OperatorOp>(op: O, params: unknown): OperatorParams<O> {
  const r = OperatorOps[op].params.safeParse(params);
  if (!r.success) throw new PosternError('USAGE', `invalid params for ${op}`);
  return r.data as OperatorParams<O>;
}

async function run(op: OperatorOp, params: unknown, d: HandlerDeps): Promise<unknown> {
  if (MUTATING_OPS.has(op) && d.role !== 'operator') {
    throw new PosternError('OBSERVER_READ_ONLY', `${op} is refused: this connection is an observer (attach without --observe to decide)`);
  }
  const b = d.backend;
  switch (op) {
    case 'approvals.list':
      paramsOf(op, params);
      return b.queue.list();
    case 'approvals.decide': {
      const p = paramsOf(op, params);
      return b.queue.decide(p.approval_id, p.verdict, b.operatorName);
    }
    case 'approvals.resolved':
      return b.queue.resolved.matching(paramsOf(op, params).prefix);
    case 'approvals.report':
      paramsOf(op, params);
      return b.runReport();
    case 'sessions.list':
      return b.sessions(paramsOf(op, params));
    case 'grants.list':
      return b.grants(paramsOf(op, params).session_id);
    case 'grants.revoke':
      return { revoked: b.revokeGrant(paramsOf(op, params).id) };
    case 'activity.recent':
      return b.activity(paramsOf(op, params));
    case 'catalog.pending':
      paramsOf(op, params);
      return b.catalogPending();
    case 'catalog.accept':
      return { accepted: await b.acceptCatalog(paramsOf(op, params).digest) };
    case 'catalog.reject': {
      const p = paramsOf(op, params);
      await b.rejectCatalog(p.digest);
      return { rejected: p.digest };
    }
    case 'catalog.shadow':
      return await b.shadowCatalog(paramsOf(op, params).digest);
    case 'audit.checkpoint':
      paramsOf(op, params);
      return b.checkpointNow();
    case 'status':
      paramsOf(op, params);
      return b.status(d.role);
    case 'credentials.state':
      paramsOf(op, params);
      return b.credentialStates();
    case 'calls.profile':
      paramsOf(op, params);
      return b.callsProfile();
    case 'lock':
      paramsOf(op, params);
      b.lock();
      return { locked: true };
    case 'devices.pair':
      return b.pairDevice(paramsOf(op, params).name);
    case 'devices.list':
      paramsOf(op, params);
      return b.devices();
    case 'page.status':
      paramsOf(op, params);
      return b.pageStatus();
    case 'devices.revoke':
      return { revoked: await b.revokeDevice(paramsOf(op, params).id) };
    case 'subscribe':
      return d.subscribe(paramsOf(op, params).since);
  }
}

/** Handles one verified message body. Never throws. */
export async function handleRequest(body: string, d: HandlerDeps): Promise<Outcome> {
  let raw: unknown;
  try {
    raw = JSON.parse(body);
  } catch {
    return { kind: 'error', id: null, error: { code: 'USAGE', message: 'the command is not JSON' } };
  }
  const env = RequestEnvelopeSchema.safeParse(raw);
  if (!env.success) return { kind: 'error', id: null, error: { code: 'USAGE', message: 'the command is not {id, op, params}' } };
  const { id, op, params } = env.data;
  if (!isOperatorOp(op)) return { kind: 'error', id, error: { code: 'USAGE', message: `unknown op ${JSON.stringify(op.slice(0, 64))}` } };
  try {
    return { kind: 'result', id, result: await run(op, params ?? {}, d) };
  } catch (e) {
    return { kind: 'error', id, error: toWireError(e) };
  }
}
