/**
 * The client end of the MAC'd Unix socket (spec: ./wire.ts): connect, prove
 * K for the chosen role, check the daemon's proof, then carry sealed frames.
 *
 * Invariants: nothing but the handshake is sent before the daemon proved it
 * holds K (an impostor on the socket gets no command); any frame that fails
 * its MAC or sequence check closes the transport with OPERATOR_AUTH_FAILED;
 * the caller's key is copied and the copy zeroed once the handshake ends;
 * text from an unauthenticated peer never becomes an error message.
 */
import { connect, type Socket } from 'node:net';
import { PosternError } from '../../rules/errors.js';
import { FrameCodec, LineReader, clientProof, decodeB64u, encodeB64u, newNonce, sameBytes, serverProof, sessionKey } from './crypto.js';
import type { OperatorTransport } from './transport.js';
import { MAX_RESPONSE_LINE_BYTES, OPERATOR_VERSION, PREAUTH_LINE_BYTES, ServerHandshakeSchema, type OperatorRole, type WireError } from './wire.js';

export const NO_DAEMON_MESSAGE = 'no daemon is running for this home: start it with `postern daemon`';
const HANDSHAKE_DROPPED = 'the daemon closed the connection during the handshake';

export interface SocketTransportOptions {
  readonly role?: OperatorRole;
  readonly handshakeTimeoutMs?: number;
  /** Connections to try when the daemon drops one during the handshake (it evicts the oldest under a flood). Default 8. */
  readonly attempts?: number;
  readonly signal?: AbortSignal;
}

const authFailed = (why: string): PosternError => new PosternError('OPERATOR_AUTH_FAILED', why);

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

/**
 * Connects and authenticates both ways. Throws DAEMON_UNAVAILABLE,
 * OPERATOR_AUTH_FAILED, VAULT_LOCKED or CALL_CANCELLED (aborted). A
 * connection dropped before the handshake completed is retried on a fresh
 * one, a bounded number of times; nothing but the handshake was sent on it.
 */
export async function connectSocketTransport(socketPath: string, key: Uint8Array, opts: SocketTransportOptions = {}): Promise<OperatorTransport> {
  const attempts = Math.max(1, opts.attempts ?? 8);
  for (let i = 1; ; i++) {
    try {
      return await connectOnce(socketPath, key, opts);
    } catch (e) {
      if (i >= attempts || !(e instanceof PosternError) || e.message !== HANDSHAKE_DROPPED) throw e;
    }
  }
}

async function connectOnce(socketPath: string, key: Uint8Array, opts: SocketTransportOptions): Promise<OperatorTransport> {
  const role: OperatorRole = opts.role ?? 'operator';
  if (opts.signal?.aborted === true) throw new PosternError('CALL_CANCELLED', 'cancelled before connecting');
  const k = Uint8Array.from(key);
  const sock = await openSocket(socketPath);
  const reader = new LineReader(PREAUTH_LINE_BYTES);
  let codec: FrameCodec | null = null;
  let finished: PosternError | null | undefined;
  let listener: ((text: string) => void) | null = null;
  let settleClosed: (e: PosternError | null) => void = () => undefined;
  const closed = new Promise<PosternError | null>((r) => (settleClosed = r));
  const nc = newNonce();
  let ns: Buffer | null = null;
  let handshake: { resolve: () => void; reject: (e: PosternError) => void } | null = null;

  const finish = (err: PosternError | null): void => {
    if (finished !== undefined) return;
    finished = err;
    k.fill(0);
    codec?.destroy();
    sock.destroy();
    opts.signal?.removeEventListener('abort', onAbort);
    handshake?.reject(err ?? new PosternError('DAEMON_UNAVAILABLE', 'the operator connection was closed'));
    settleClosed(err);
  };
  const onAbort = (): void => {
    if (handshake !== null) finish(new PosternError('CALL_CANCELLED', 'cancelled while connecting to the daemon'));
  };
  opts.signal?.addEventListener('abort', onAbort, { once: true });

  const onHandshakeLine = (line: string): void => {
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      return finish(authFailed('the process on the operator socket does not speak the operator protocol'));
    }
    const m = ServerHandshakeSchema.safeParse(raw);
    if (!m.success) return finish(authFailed('the process on the operator socket does not speak this version of the operator protocol'));
    const msg = m.data;
    if (msg.t === 'error') return finish(fromPlainError(msg.error));
    if (msg.t === 'hello' && ns === null) {
      ns = decodeB64u(msg.nonce);
      if (ns === null) return finish(authFailed('malformed hello from the operator socket'));
      sock.write(`${JSON.stringify({ t: 'auth', v: OPERATOR_VERSION, role, nonce: encodeB64u(nc), proof: encodeB64u(clientProof(k, ns, nc, role)) })}\n`);
      return;
    }
    const proof = msg.t === 'welcome' && ns !== null && msg.role === role ? decodeB64u(msg.proof) : null;
    if (ns === null || proof === null || !sameBytes(proof, serverProof(k, ns, nc, role))) {
      return finish(authFailed('the process on the operator socket could not prove it is this home\'s daemon; nothing was sent to it'));
    }
    codec = new FrameCodec(sessionKey(k, ns, nc, role), 'client');
    k.fill(0);
    reader.setLimit(MAX_RESPONSE_LINE_BYTES);
    handshake?.resolve();
    handshake = null;
  };

  const onFrameLine = (line: string): void => {
    if (codec === null) return;
    const opened = codec.open(line);
    if (!opened.ok) return finish(authFailed('a message on the operator channel failed authentication (something may be relaying the socket); the connection was closed'));
    listener?.(opened.body);
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
      // A listener that throws ends the connection, not the process.
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
  opts.signal?.removeEventListener('abort', onAbort);

  return {
    role,
    send(text) {
      if (finished !== undefined || codec === null) return;
      sock.write(`${codec.seal(text)}\n`);
    },
    onMessage(l) {
      listener = l;
    },
    close: (error = null) => finish(error),
    closed,
    backlog: () => sock.writableLength,
  };
}
