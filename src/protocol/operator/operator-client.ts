/**
 * The OperatorClient (./client.ts) over any OperatorTransport: correlation
 * ids, answer validation, events in seq order, aborts.
 *
 * Invariants: every answer is validated with its op's result schema; a
 * message that does not parse as a ServerMessage closes the connection (the
 * transport already refused forged frames); errors from the daemon keep only
 * known codes and sanitized text; an abort rejects the wait with
 * CALL_CANCELLED and forgets the request; when the transport closes, every
 * pending request rejects with that reason; an event listener that throws
 * does not break the connection's other waits.
 */
import { PosternError, type ErrorCode, ErrorCodes } from '../../rules/errors.js';
import { sanitizeForTerminal } from '../../rules/terminal-text.js';
import type { OperatorClient } from './client.js';
import { OperatorOps, ServerMessageSchema, type OperatorEventEnvelope, type OperatorOp, type OperatorParams, type OperatorResult } from './messages.js';
import type { OperatorTransport } from './transport.js';
import type { WireError } from './wire.js';

/** An error the daemon reported. Only known codes are kept; the text is sanitized. */
export function fromWire(e: WireError): PosternError {
  const code: ErrorCode = Object.prototype.hasOwnProperty.call(ErrorCodes, e.code) ? (e.code as ErrorCode) : 'INTERNAL';
  return new PosternError(code, sanitizeForTerminal(e.message, 300));
}

export interface OperatorClientOptions {
  /** A request the daemon does not answer within this long fails with DAEMON_UNAVAILABLE (default 30 s; 0 = no limit). */
  readonly requestTimeoutMs?: number;
}

interface Waiting {
  readonly op: OperatorOp;
  readonly resolve: (v: unknown) => void;
  readonly reject: (e: PosternError) => void;
  readonly cleanup: () => void;
}

export function createOperatorClient(transport: OperatorTransport, opts: OperatorClientOptions = {}): OperatorClient {
  const requestTimeoutMs = opts.requestTimeoutMs ?? 30_000;
  const pending = new Map<number, Waiting>();
  let nextId = 1;
  let ended: PosternError | null | undefined;
  let onEvent: ((e: OperatorEventEnvelope) => void) | null = null;
  let lastSeq = 0;

  const fail = (e: PosternError): void => transport.close(e);
  void transport.closed.then((err) => {
    ended = err;
    const reason = err ?? new PosternError('DAEMON_UNAVAILABLE', 'the operator connection was closed');
    for (const w of pending.values()) {
      w.cleanup();
      w.reject(reason);
    }
    pending.clear();
    onEvent = null;
  });

  transport.onMessage((text) => {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return fail(new PosternError('INTERNAL', 'the daemon sent a malformed message'));
    }
    const m = ServerMessageSchema.safeParse(raw);
    if (!m.success) return fail(new PosternError('INTERNAL', 'the daemon sent a malformed message'));
    const msg = m.data;
    switch (msg.kind) {
      case 'fatal':
        return fail(fromWire(msg.error));
      case 'event': {
        // Replays and live events arrive in order; anything at or below what was seen is a duplicate.
        if (msg.envelope.seq <= lastSeq) return;
        lastSeq = msg.envelope.seq;
        try {
          onEvent?.(msg.envelope);
        } catch {
          // the listener's failure is its own; the connection goes on
        }
        return;
      }
      case 'response': {
        const w = msg.id === null ? undefined : pending.get(msg.id);
        if (w === undefined) {
          if (msg.id === null && !msg.ok) return fail(fromWire(msg.error));
          return;
        }
        pending.delete(msg.id as number);
        w.cleanup();
        if (!msg.ok) return w.reject(fromWire(msg.error));
        const r = OperatorOps[w.op].result.safeParse(msg.result);
        if (r.success) w.resolve(r.data);
        else w.reject(new PosternError('INTERNAL', `the daemon sent a malformed answer to ${w.op}`));
      }
    }
  });

  const request = <O extends OperatorOp>(op: O, params: OperatorParams<O>, ro: { signal?: AbortSignal } = {}): Promise<OperatorResult<O>> =>
    new Promise<OperatorResult<O>>((resolve, reject) => {
      if (ended !== undefined) return reject(ended ?? new PosternError('DAEMON_UNAVAILABLE', 'the operator connection is closed'));
      if (ro.signal?.aborted === true) return reject(new PosternError('CALL_CANCELLED', `${op} was cancelled`));
      const id = nextId++;
      const onAbort = (): void => {
        pending.delete(id);
        cleanup();
        reject(new PosternError('CALL_CANCELLED', `${op} was cancelled`));
      };
      const timer = requestTimeoutMs > 0
        ? setTimeout(() => {
            pending.delete(id);
            cleanup();
            reject(new PosternError('DAEMON_UNAVAILABLE', `the daemon did not answer ${op} in time`));
          }, requestTimeoutMs)
        : undefined;
      const cleanup = (): void => {
        clearTimeout(timer);
        ro.signal?.removeEventListener('abort', onAbort);
      };
      ro.signal?.addEventListener('abort', onAbort, { once: true });
      pending.set(id, { op, resolve: (v) => resolve(v as OperatorResult<O>), reject, cleanup });
      transport.send(JSON.stringify({ id, op, params: params ?? {} }));
    });

  return {
    role: transport.role,
    request,
    async subscribe(listener, so = {}) {
      if (onEvent !== null) throw new PosternError('USAGE', 'this client is already subscribed');
      const stop = (): void => {
        if (onEvent === listener) onEvent = () => undefined;
      };
      if (so.signal?.aborted === true) throw new PosternError('CALL_CANCELLED', 'subscribe was cancelled');
      onEvent = listener;
      so.signal?.addEventListener('abort', stop, { once: true });
      if (so.since !== undefined) lastSeq = so.since;
      try {
        const snap = await request('subscribe', so.since === undefined ? {} : { since: so.since }, so.signal === undefined ? {} : { signal: so.signal });
        // Replayed events follow the answer; live ones at or below the snapshot were already in it.
        if (so.since === undefined) lastSeq = Math.max(lastSeq, snap.last_seq);
        return snap;
      } catch (e) {
        onEvent = null;
        throw e;
      }
    },
    close: () => transport.close(null),
    closed: transport.closed,
  };
}
