/**
 * The private in-process pair (spec: ./wire.ts, "The in-process pair"): a
 * MessagePort from a MessageChannel, usable across a worker_threads Worker.
 * `postern up` hands one end to the daemon (acceptPortTransport) and keeps the
 * other for its UI (connectPortTransport).
 *
 * Invariants: only strings cross the port, and every one is parsed and
 * validated by the receiver as if it came from a socket; the first message
 * must be the attach line (anything else closes the pair); consumed bytes
 * are acknowledged so `backlog()` on the sender measures what the receiver
 * has not yet handled; a closed port settles `closed` on both ends.
 */
import type { MessagePort } from 'node:worker_threads';
import { PosternError } from '../../rules/errors.js';
import type { OperatorTransport } from './transport.js';
import { OPERATOR_VERSION, PortAckSchema, PortAttachSchema, PortAttachedSchema, type OperatorRole } from './wire.js';

/** Bytes consumed before the receiver acknowledges them. */
const ACK_EVERY = 32 * 1024;

function parse(text: unknown): unknown {
  if (typeof text !== 'string') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const isControl = (text: string): boolean => text.startsWith('{"t":');

/** One end after the attach exchange: JSON text both ways, with acks interleaved (they never reach the listener). */
function endOf(port: MessagePort, role: OperatorRole, early: string[]): OperatorTransport {
  let listener: ((text: string) => void) | null = null;
  let finished: PosternError | null | undefined;
  let sent = 0;
  let acked = 0;
  let unacked = 0;
  let received = 0;
  let settle: (e: PosternError | null) => void = () => undefined;
  const closed = new Promise<PosternError | null>((r) => (settle = r));
  const finish = (err: PosternError | null): void => {
    if (finished !== undefined) return;
    finished = err;
    port.removeAllListeners('message');
    port.close();
    settle(err);
  };
  const deliver = (text: string): void => {
    if (finished !== undefined) return;
    if (isControl(text)) {
      const ack = PortAckSchema.safeParse(parse(text));
      if (ack.success) acked = Math.max(acked, Math.min(ack.data.bytes, sent));
      else finish(new PosternError('OPERATOR_AUTH_FAILED', 'the in-process operator channel sent a malformed control line'));
      return;
    }
    unacked += text.length;
    try {
      listener?.(text);
    } finally {
      if (unacked >= ACK_EVERY) {
        const bytes = unacked;
        unacked = 0;
        received += bytes;
        port.postMessage(JSON.stringify({ t: 'ack', bytes: received }));
      }
    }
  };
  port.on('message', (m: unknown) => {
    try {
      if (typeof m !== 'string') return finish(new PosternError('OPERATOR_AUTH_FAILED', 'the in-process operator channel carried a non-text message'));
      deliver(m);
    } catch (e) {
      finish(e instanceof PosternError ? e : new PosternError('INTERNAL', 'the operator connection failed unexpectedly', { cause: e }));
    }
  });
  port.once('close', () => finish(new PosternError('DAEMON_UNAVAILABLE', 'the in-process operator channel was closed')));
  return {
    role,
    send(text) {
      if (finished !== undefined) return;
      sent += text.length;
      port.postMessage(text);
    },
    onMessage(l) {
      listener = l;
      for (const t of early.splice(0)) deliver(t);
    },
    close: (error = null) => finish(error),
    closed,
    backlog: () => sent - acked,
  };
}

function firstMessage(port: MessagePort, timeoutMs: number, signal: AbortSignal | undefined): Promise<{ first: unknown; early: string[] }> {
  return new Promise((resolve, reject) => {
    const early: string[] = [];
    let first: unknown;
    let got = false;
    const done = (e: PosternError | null): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      port.removeListener('message', onMessage);
      port.removeListener('close', onClose);
      if (e === null) resolve({ first, early });
      else {
        port.close();
        reject(e);
      }
    };
    const onMessage = (m: unknown): void => {
      if (!got) {
        got = true;
        first = parse(m);
        // Messages right behind the first one are kept for the listener.
        setImmediate(() => done(null));
      } else if (typeof m === 'string') early.push(m);
    };
    const onClose = (): void => done(new PosternError('DAEMON_UNAVAILABLE', 'the in-process operator channel was closed'));
    const onAbort = (): void => done(new PosternError('CALL_CANCELLED', 'cancelled while attaching'));
    const timer = setTimeout(() => done(new PosternError('DAEMON_UNAVAILABLE', 'the in-process operator channel did not answer in time')), timeoutMs);
    timer.unref();
    if (signal?.aborted === true) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    port.on('message', onMessage);
    port.once('close', onClose);
  });
}

export interface PortTransportOptions {
  readonly role?: OperatorRole;
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

/** The UI's end: attach with a role, wait for the daemon's answer. */
export async function connectPortTransport(port: MessagePort, opts: PortTransportOptions = {}): Promise<OperatorTransport> {
  const role = opts.role ?? 'operator';
  const waiting = firstMessage(port, opts.timeoutMs ?? 10_000, opts.signal);
  port.postMessage(JSON.stringify({ t: 'attach', v: OPERATOR_VERSION, role }));
  const { first, early } = await waiting;
  const ok = PortAttachedSchema.safeParse(first);
  if (!ok.success || ok.data.role !== role) {
    port.close();
    throw new PosternError('OPERATOR_AUTH_FAILED', 'the in-process operator channel did not attach');
  }
  return endOf(port, role, early);
}

/** The daemon's end: wait for the attach line, answer it, and hand back the transport with the role asked for. */
export async function acceptPortTransport(port: MessagePort, opts: { readonly timeoutMs?: number } = {}): Promise<OperatorTransport> {
  const { first, early } = await firstMessage(port, opts.timeoutMs ?? 60_000, undefined);
  const a = PortAttachSchema.safeParse(first);
  if (!a.success) {
    port.close();
    throw new PosternError('OPERATOR_AUTH_FAILED', 'the in-process operator channel did not start with an attach line');
  }
  port.postMessage(JSON.stringify({ t: 'attached', v: OPERATOR_VERSION, role: a.data.role }));
  return endOf(port, a.data.role, early);
}
