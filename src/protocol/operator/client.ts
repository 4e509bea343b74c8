/**
 * The one operator client interface (implemented by ./operator-client.ts over
 * any OperatorTransport). The CLI (`postern approvals …`) and the TUI use
 * only this.
 *
 * Invariants: every answer is validated with its op's result schema before it
 * is returned; an error from the daemon arrives as a PosternError with a known
 * code and sanitized text; an aborted wait rejects with CALL_CANCELLED at once
 * (the request may still have reached the daemon: a decision is idempotent
 * per card, so re-reading the list tells what happened); when the connection
 * ends every pending request rejects with the reason `closed` settles with.
 */
import type { PosternError } from '../../rules/errors.js';
import type { OperatorEventEnvelope, OperatorOp, OperatorParams, OperatorResult, OperatorSnapshot } from './messages.js';
import type { OperatorRole } from './wire.js';

interface RequestOptions {
  readonly signal?: AbortSignal;
}

interface SubscribeOptions {
  readonly signal?: AbortSignal;
  /** Replay the retained events after this seq (the highest one this client saw before). */
  readonly since?: number;
}

export interface OperatorClient {
  readonly role: OperatorRole;
  request<O extends OperatorOp>(op: O, params: OperatorParams<O>, opts?: RequestOptions): Promise<OperatorResult<O>>;
  /**
   * Resolves with the snapshot; then `onEvent` gets each replayed event after
   * `since` and every live event, in seq order. Aborting `signal` stops the
   * events (the connection stays open). One subscription per client.
   */
  subscribe(onEvent: (e: OperatorEventEnvelope) => void, opts?: SubscribeOptions): Promise<OperatorSnapshot>;
  close(): void;
  /** Settles when the connection ends: null after close(), the error otherwise. */
  readonly closed: Promise<PosternError | null>;
}
