/**
 * One authenticated operator connection, on any transport (the socket after
 * its handshake, or the in-process port): commands in, answers and events out.
 *
 * Invariants: commands are refused once the vault is locked (fatal
 * VAULT_LOCKED); answers go out in the order commands complete, each with its
 * id; after `subscribe` the client gets its answer, then the retained events
 * after `since`, then live events, in seq order and never one twice; a
 * connection whose transport backlog passes `maxBacklogBytes` is dropped with
 * OPERATOR_TOO_SLOW (the daemon never waits for it); nothing here throws into
 * the daemon.
 */
import type { OperatorEventEnvelope, OperatorSnapshot, OperatorTransport, ServerMessage, WireError } from '../../protocol/operator/index.js';
import { MAX_RESPONSE_LINE_BYTES } from '../../protocol/operator/index.js';
import { PosternError } from '../../rules/errors.js';
import type { EventBus } from '../services/events.js';
import { handleRequest, type OperatorBackend } from './handlers.js';

interface SessionOptions {
  readonly backend: OperatorBackend;
  readonly bus: EventBus;
  readonly isLocked: () => boolean;
  readonly maxBacklogBytes: number;
  readonly onRefused?: (code: string, reason: string) => void;
}

/** A snapshot of everything a front end shows, as of the bus's last seq. */
export function snapshotOf(backend: OperatorBackend, bus: EventBus, role: OperatorTransport['role'], since: number | undefined): OperatorSnapshot {
  const gap = since === undefined ? false : bus.since(since).gap;
  return {
    pending: backend.queue.list(),
    sessions: backend.sessions({ include_ended: true, limit: 100 }),
    grants: backend.grants(undefined),
    recent: backend.activity({ limit: 100 }),
    catalog: backend.catalogPending(),
    status: backend.status(role),
    last_seq: bus.lastSeq,
    gap,
  };
}

export function serveOperator(t: OperatorTransport, o: SessionOptions): void {
  let done = false;
  let unsubscribe: (() => void) | null = null;
  /** Events that arrived between the subscribe command and its answer. */
  let held: OperatorEventEnvelope[] | null = null;
  let subscribedAt = 0;
  /** The snapshot whose answer releases the held events. */
  let heldFor: OperatorSnapshot | null = null;

  const send = (msg: ServerMessage): void => {
    if (done) return;
    let text: string;
    try {
      text = JSON.stringify(msg);
    } catch {
      const id = msg.kind === 'response' ? msg.id : null;
      text = JSON.stringify({ kind: 'response', id, ok: false, error: { code: 'INTERNAL', message: 'the answer could not be encoded' } });
    }
    if (text.length > MAX_RESPONSE_LINE_BYTES - 1024) {
      const error = { code: 'RESPONSE_TOO_LARGE', message: 'the answer is larger than the operator channel allows' };
      if (msg.kind !== 'response' || msg.id === null) return fatal(error, 'oversized event');
      text = JSON.stringify({ kind: 'response', id: msg.id, ok: false, error });
    }
    t.send(text);
    if (t.backlog() > o.maxBacklogBytes) {
      const err = new PosternError('OPERATOR_TOO_SLOW', 'the operator connection fell too far behind the daemon\'s events and was dropped; attach again');
      o.onRefused?.(err.code, 'backlog');
      stop(err);
    }
  };
  const stop = (err: PosternError | null): void => {
    if (done) return;
    done = true;
    unsubscribe?.();
    t.close(err);
  };
  const fatal = (error: WireError, reason: string): void => {
    o.onRefused?.(error.code, reason);
    send({ kind: 'fatal', error });
    stop(null);
  };
  const deliver = (env: OperatorEventEnvelope): void => {
    if (env.seq <= subscribedAt) return;
    if (held !== null) held.push(env);
    else send({ kind: 'event', envelope: env });
  };

  const subscribe = (since: number | undefined): OperatorSnapshot => {
    if (unsubscribe !== null) throw new PosternError('USAGE', 'this connection is already subscribed');
    const snap = snapshotOf(o.backend, o.bus, t.role, since);
    held = since === undefined ? [] : o.bus.since(since).events.filter((e) => e.seq <= snap.last_seq);
    subscribedAt = since ?? snap.last_seq;
    unsubscribe = o.bus.subscribe(deliver);
    heldFor = snap;
    return snap;
  };

  t.onMessage((body) => {
    if (done) return;
    if (o.isLocked()) return fatal({ code: 'VAULT_LOCKED', message: 'the daemon is locked' }, 'locked');
    void handleRequest(body, { backend: o.backend, role: t.role, subscribe })
      .then((out) => {
        if (out.kind === 'result') send({ kind: 'response', id: out.id, ok: true, result: out.result });
        else send({ kind: 'response', id: out.id, ok: false, error: out.error });
        if (held !== null && out.kind === 'result' && out.result === heldFor) {
          const flush = held;
          held = null;
          for (const env of flush) send({ kind: 'event', envelope: env });
        }
      })
      .catch(() => fatal({ code: 'INTERNAL', message: 'the daemon failed to handle the command' }, 'unexpected failure'));
  });
  void t.closed.then(() => stop(null));
}
