/**
 * The operator side of the operator channel (spec: src/protocol/operator.ts):
 * connect to the daemon's operator socket, prove K, check the daemon's proof,
 * then send MAC'd commands and receive MAC'd answers and queue events.
 *
 * Invariants: nothing but the handshake is sent before the daemon proved it
 * holds K (an impostor on the socket gets no command); any frame that fails
 * its MAC or sequence check fails every pending request with
 * OPERATOR_AUTH_FAILED and closes the connection; every answer is validated
 * with its op's schema before it is returned; text from the daemon is
 * sanitized before it becomes an error message; the caller's key is copied
 * and the copy zeroed after the handshake.
 */
import { connect, type Socket } from 'node:net';
import { PosternError, type ErrorCode, ErrorCodes } from '../protocol/errors.js';
import type { ApprovalCard } from '../protocol/approvals.js';
import {
  MAX_RESPONSE_LINE_BYTES,
  OperatorOps,
  PREAUTH_LINE_BYTES,
  ServerHandshakeSchema,
  ServerMessageSchema,
  OPERATOR_VERSION,
  type OperatorEvent,
  type OperatorOp,
  type OperatorParams,
  type OperatorResult,
  type WireError,
} from '../protocol/operator.js';
import { FrameCodec, LineReader, clientProof, decodeB64u, encodeB64u, newNonce, sameBytes, serverProof, sessionKey } from '../daemon/operator/channel.js';
import { sanitizeForTerminal } from '../protocol/terminal-text.js';

export const NO_DAEMON_MESSAGE = 'no daemon is running for this home: start it with `postern daemon`';

export interface OperatorClientOptions {
  readonly handshakeTimeoutMs?: number;
  readonly requestTimeoutMs?: number;
  /** Connections to try when the daemon drops one during the handshake (it evicts the oldest under a flood). Default 8. */
  readonly attempts?: number;
}

export interface OperatorConnection {
  request<O extends OperatorOp>(op: O, params?: OperatorParams<O>): Promise<OperatorResult<O>>;
  /** Starts queue events; resolves with the cards pending at that moment. */
  subscribe(onEvent: (e: OperatorEvent) => void): Promise<ApprovalCard[]>;
  close(): void;
  /** Settles when the connection ends: null after close(), the error otherwise. */
  readonly closed: Promise<PosternError | null>;
}

const authFailed = (why: string): PosternError => new PosternError('OPERATOR_AUTH_FAILED', why);

/** An error the daemon reported. Only known codes are kept; the text is sanitized. */
function fromWire(e: WireError): PosternError {
  const code: ErrorCode = Object.prototype.hasOwnProperty.call(ErrorCodes, e.code) ? (e.code as ErrorCode) : 'INTERNAL';
  return new PosternError(code, sanitizeForTerminal(e.message, 300));
}

/** The socket's answer before authentication is unauthenticated: keep its code, not its words. */
function fromPlainError(e: WireError): PosternError {
  switch (e.code) {
    case 'VAULT_LOCKED':
      return new PosternError('VAULT_LOCKED', 'the daemon is locked: restart it (`postern daemon`) to unlock the vault');
    case 'REQUEST_TOO_LARGE':
      return new PosternError('REQUEST_TOO_LARGE', 'the daemon refused an oversized handshake line');
    default:
      return authFailed('the daemon did not accept the proof: this passphrase opens a different vault than the running daemon\'s');
  }
}

function openSocket(path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(path);
    s.once('connect', () => {
      s.removeAllListeners('error');
      resolve(s);
    });
    s.once('error', (e: NodeJS.ErrnoException) => {
      reject(new PosternError('DAEMON_UNAVAILABLE', NO_DAEMON_MESSAGE, { details: { errno: e.code ?? 'error' }, cause: e }));
    });
  });
}

const HANDSHAKE_DROPPED = 'the daemon closed the connection during the handshake';

/**
 * Connects and authenticates both ways. Throws DAEMON_UNAVAILABLE,
 * OPERATOR_AUTH_FAILED or VAULT_LOCKED. A connection the daemon drops before
 * the handshake completed (under a connection flood it evicts the oldest
 * unauthenticated one) is retried on a fresh connection, a bounded number of
 * times; nothing but the handshake was sent on it.
 */
export async function connectOperator(socketPath: string, key: Uint8Array, opts: OperatorClientOptions = {}): Promise<OperatorConnection> {
  const attempts = Math.max(1, opts.attempts ?? 8);
  for (let i = 1; ; i++) {
    try {
      return await connectOnce(socketPath, key, opts);
    } catch (e) {
      if (i >= attempts || !(e instanceof PosternError) || e.message !== HANDSHAKE_DROPPED) throw e;
    }
  }
}

async function connectOnce(socketPath: string, key: Uint8Array, opts: OperatorClientOptions): Promise<OperatorConnection> {
  const k = Uint8Array.from(key);
  const sock = await openSocket(socketPath);
  const reader = new LineReader(PREAUTH_LINE_BYTES);
  let codec: FrameCodec | null = null;
  let nextId = 1;
  let finished: PosternError | null | undefined;
  let onEvent: ((e: OperatorEvent) => void) | null = null;
  const pending = new Map<number, { op: OperatorOp; resolve: (v: unknown) => void; reject: (e: PosternError) => void; timer: NodeJS.Timeout }>();
  let settleClosed: (e: PosternError | null) => void = () => undefined;
  const closed = new Promise<PosternError | null>((r) => (settleClosed = r));

  // Handshake state.
  const nc = newNonce();
  let ns: Buffer | null = null;
  let handshake: { resolve: () => void; reject: (e: PosternError) => void } | null = null;

  const finish = (err: PosternError | null): void => {
    if (finished !== undefined) return;
    finished = err;
    k.fill(0);
    codec?.destroy();
    sock.destroy();
    const failure = err ?? new PosternError('DAEMON_UNAVAILABLE', 'the operator connection was closed');
    handshake?.reject(failure);
    for (const p of pending.values()) {
      clearTimeout(p.timer);
      p.reject(failure);
    }
    pending.clear();
    settleClosed(err);
  };

  const onHandshakeLine = (line: string): void => {
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      return finish(authFailed('the process on the operator socket does not speak the operator protocol'));
    }
    const m = ServerHandshakeSchema.safeParse(raw);
    if (!m.success) return finish(authFailed('the process on the operator socket does not speak the operator protocol'));
    const msg = m.data;
    if (msg.t === 'error') return finish(fromPlainError(msg.error));
    if (msg.t === 'hello' && ns === null) {
      ns = decodeB64u(msg.nonce);
      if (ns === null) return finish(authFailed('malformed hello from the operator socket'));
      sock.write(`${JSON.stringify({ t: 'auth', v: OPERATOR_VERSION, nonce: encodeB64u(nc), proof: encodeB64u(clientProof(k, ns, nc)) })}\n`);
      return;
    }
    const proof = msg.t === 'welcome' && ns !== null ? decodeB64u(msg.proof) : null;
    if (ns === null || proof === null || !sameBytes(proof, serverProof(k, ns, nc))) {
      return finish(authFailed('the process on the operator socket could not prove it is this home\'s daemon; nothing was sent to it'));
    }
    codec = new FrameCodec(sessionKey(k, ns, nc), 'client');
    k.fill(0);
    reader.setLimit(MAX_RESPONSE_LINE_BYTES);
    handshake?.resolve();
    handshake = null;
  };

  const onFrameLine = (line: string): void => {
    if (codec === null) return;
    const opened = codec.open(line);
    if (!opened.ok) return finish(authFailed('a message on the operator channel failed authentication (something may be relaying the socket); the connection was closed'));
    let raw: unknown;
    try {
      raw = JSON.parse(opened.body);
    } catch {
      return finish(new PosternError('INTERNAL', 'the daemon sent a malformed message'));
    }
    const m = ServerMessageSchema.safeParse(raw);
    if (!m.success) return finish(new PosternError('INTERNAL', 'the daemon sent a malformed message'));
    const msg = m.data;
    switch (msg.kind) {
      case 'fatal':
        return finish(fromWire(msg.error));
      case 'event':
        onEvent?.(msg.event);
        return;
      case 'response': {
        const p = msg.id === null ? undefined : pending.get(msg.id);
        if (p === undefined) return;
        pending.delete(msg.id ?? -1);
        clearTimeout(p.timer);
        if (!msg.ok) return p.reject(fromWire(msg.error));
        const r = OperatorOps[p.op].result.safeParse(msg.result);
        if (r.success) p.resolve(r.data);
        else p.reject(new PosternError('INTERNAL', `the daemon sent a malformed answer to ${p.op}`));
      }
    }
  };

  sock.on('data', (chunk: Buffer) => {
    try {
      for (const ev of reader.push(chunk)) {
        if (finished !== undefined) return;
        if (ev.kind !== 'line') return finish(authFailed('the operator socket sent an oversized or invalid line'));
        if (codec === null) onHandshakeLine(ev.line);
        else onFrameLine(ev.line);
      }
    } catch (e) {
      // An event listener that throws ends the connection, not the process.
      finish(e instanceof PosternError ? e : new PosternError('INTERNAL', 'the operator connection failed unexpectedly', { cause: e }));
    }
  });
  sock.on('error', () => finish(new PosternError('DAEMON_UNAVAILABLE', codec === null ? HANDSHAKE_DROPPED : 'the operator connection failed')));
  sock.on('close', () => finish(new PosternError('DAEMON_UNAVAILABLE', codec === null ? HANDSHAKE_DROPPED : 'the daemon closed the operator connection')));

  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => finish(new PosternError('DAEMON_UNAVAILABLE', 'the daemon did not complete the handshake in time')), opts.handshakeTimeoutMs ?? 5_000);
    handshake = {
      resolve: () => (clearTimeout(t), resolve()),
      reject: (e) => (clearTimeout(t), reject(e)),
    };
  });

  const requestTimeoutMs = opts.requestTimeoutMs ?? 30_000;
  const request = <O extends OperatorOp>(op: O, params?: OperatorParams<O>): Promise<OperatorResult<O>> =>
    new Promise<OperatorResult<O>>((resolve, reject) => {
      if (finished !== undefined || codec === null) return reject(finished ?? new PosternError('DAEMON_UNAVAILABLE', 'the operator connection is closed'));
      const id = nextId++;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new PosternError('DAEMON_UNAVAILABLE', `the daemon did not answer ${op} in time`));
      }, requestTimeoutMs);
      pending.set(id, { op, resolve: (v) => resolve(v as OperatorResult<O>), reject, timer });
      sock.write(`${codec.seal(JSON.stringify({ id, op, params: params ?? {} }))}\n`);
    });

  return {
    request,
    async subscribe(listener) {
      onEvent = listener;
      return (await request('subscribe')).pending;
    },
    close: () => finish(null),
    closed,
  };
}
