/**
 * What each operator command does, once the connection is authenticated and
 * the frame verified. One function per op, no I/O of its own: the answer is
 * data or a PosternError, and the connection turns either into a response.
 *
 * Invariants: params are validated with the op's zod schema before use; an
 * unknown op or bad params is a USAGE error, never a throw past this file;
 * decisions are attributed to the server's configured operator name, never to
 * a name the client supplies.
 */
import type { ApprovalQueue } from '../../approvals/queue.js';
import { PosternError, isPosternError } from '../../protocol/errors.js';
import { OperatorOps, RequestEnvelopeSchema, isOperatorOp, type OperatorOp, type OperatorParams, type WireError } from '../../protocol/operator.js';

export interface HandlerDeps {
  readonly queue: ApprovalQueue;
  readonly status: () => unknown;
  readonly onLock: () => void;
  readonly operatorName: string;
  /** Starts pushing queue events on this connection (idempotent). */
  readonly subscribe: () => void;
}

export type Outcome =
  | { readonly kind: 'result'; readonly id: number; readonly result: unknown }
  | { readonly kind: 'error'; readonly id: number | null; readonly error: WireError };

export function toWireError(e: unknown): WireError {
  if (isPosternError(e)) return { code: e.code, message: e.message.slice(0, 1000) };
  return { code: 'INTERNAL', message: 'the daemon failed to handle the command' };
}

function paramsOf<O extends OperatorOp>(op: O, params: unknown): OperatorParams<O> {
  const r = OperatorOps[op].params.safeParse(params);
  if (!r.success) throw new PosternError('USAGE', `invalid params for ${op}`);
  return r.data as OperatorParams<O>;
}

function run(op: OperatorOp, params: unknown, d: HandlerDeps): unknown {
  switch (op) {
    case 'approvals.list':
      paramsOf(op, params);
      return d.queue.list();
    case 'approvals.decide': {
      const p = paramsOf(op, params);
      return d.queue.decide(p.approval_id, p.verdict, d.operatorName);
    }
    case 'status':
      paramsOf(op, params);
      return d.status() ?? null;
    case 'lock':
      paramsOf(op, params);
      d.onLock();
      return { locked: true };
    case 'subscribe':
      paramsOf(op, params);
      d.subscribe();
      return { pending: d.queue.list() };
  }
}

/** Handles one verified message body. Never throws. */
export function handleRequest(body: string, d: HandlerDeps): Outcome {
  let raw: unknown;
  try {
    raw = JSON.parse(body);
  } catch {
    return { kind: 'error', id: null, error: { code: 'USAGE', message: 'the command is not JSON' } };
  }
  const env = RequestEnvelopeSchema.safeParse(raw);
  if (!env.success) return { kind: 'error', id: null, error: { code: 'USAGE', message: 'the command is not {id, op, params}' } };
  const { id, op, params } = env.data;
  if (!isOperatorOp(op)) return { kind: 'error', id, error: { code: 'USAGE', message: `unknown op ${JSON.stringify(op)}` } };
  try {
    return { kind: 'result', id, result: run(op, params ?? {}, d) };
  } catch (e) {
    return { kind: 'error', id, error: toWireError(e) };
  }
}
