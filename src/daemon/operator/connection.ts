/**
 * One operator connection on the Unix socket, daemon side: the handshake
 * (spec: src/protocol/operator/wire.ts), then a sealed-frame transport handed
 * to serveOperator (./session.ts), shared with the in-process port.
 *
 * Invariants: no command is read before the client proved K for the role it
 * named; the server's proof is sent only after that; each connection gets one
 * proof attempt, and a failure is answered only after `failureDelayMs` (so
 * guessing is slow and costs a connection each time). K is read from `key()`
 * at the moment of the proof and not kept; a null, wrong-sized or all-zero
 * key refuses everyone. Any bad frame, oversized line, invalid UTF-8 or
 * handshake timeout closes the connection; nothing here throws into the server.
 */
import type { Socket } from 'node:net';
import {
  AuthSchema,
  MAX_REQUEST_LINE_BYTES,
  OPERATOR_PROTOCOL,
  OPERATOR_VERSION,
  PREAUTH_LINE_BYTES,
  type OperatorRole,
  type OperatorTransport,
  type WireError,
} from '../../protocol/operator/index.js';
import { FrameCodec, LineReader, clientProof, decodeB64u, encodeB64u, newNonce, sameBytes, serverProof, sessionKey, usableKey } from '../../protocol/operator/crypto.js';
import type { PosternError } from '../../rules/errors.js';

export type OperatorNotice =
  | { readonly type: 'authenticated'; readonly role: OperatorRole }
  /** The connection was refused or closed for a failed proof, a bad frame or a protocol violation. */
  | { readonly type: 'refused'; readonly code: string; readonly reason: string }
  | { readonly type: 'closed' };

interface HandshakeOptions {
  readonly key: () => Uint8Array | null;
  readonly handshakeTimeoutMs: number;
  readonly failureDelayMs: number;
  readonly notify: (n: OperatorNotice) => void;
  /** Called once the peer is authenticated, with the sealed transport. */
  readonly ready: (t: OperatorTransport) => void;
}

function currentKey(key: () => Uint8Array | null): Uint8Array | null {
  try {
    const k = key();
    return usableKey(k) ? Uint8Array.from(k) : null;
  } catch {
    return null; // a vault that throws VAULT_LOCKED is locked
  }
}

type AuthVerdict =
  | { readonly kind: 'refused'; readonly error: WireError; readonly reason: string; /** answered only after the failure delay */ readonly slow: boolean }
  | { readonly kind: 'proved'; readonly role: OperatorRole; readonly codec: FrameCodec; readonly proof: Uint8Array };

/** The client's auth line against K as read now (never kept): the role it proved, or why it is refused. */
function judgeAuth(line: string, key: () => Uint8Array | null, ns: Uint8Array): AuthVerdict {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    return { kind: 'refused', error: { code: 'OPERATOR_AUTH_FAILED', message: 'expected an auth message' }, reason: 'not JSON', slow: true };
  }
  const a = AuthSchema.safeParse(raw);
  const nc = a.success ? decodeB64u(a.data.nonce) : null;
  const proof = a.success ? decodeB64u(a.data.proof) : null;
  if (!a.success || nc === null || proof === null) {
    return { kind: 'refused', error: { code: 'OPERATOR_AUTH_FAILED', message: 'expected an auth message (this daemon speaks operator protocol version 2)' }, reason: 'malformed auth', slow: true };
  }
  const role = a.data.role;
  const k = currentKey(key);
  if (k === null) return { kind: 'refused', error: { code: 'VAULT_LOCKED', message: 'the daemon is locked' }, reason: 'locked', slow: false };
  try {
    if (!sameBytes(proof, clientProof(k, ns, nc, role))) {
      return { kind: 'refused', error: { code: 'OPERATOR_AUTH_FAILED', message: "the proof does not match this daemon's vault" }, reason: 'bad proof', slow: true };
    }
    return { kind: 'proved', role, codec: new FrameCodec(sessionKey(k, ns, nc, role), 'server'), proof: serverProof(k, ns, nc, role) };
  } finally {
    k.fill(0);
  }
}

export function serveSocket(sock: Socket, o: HandshakeOptions): void {
  const reader = new LineReader(PREAUTH_LINE_BYTES);
  const ns = newNonce();
  let stage: 'hello' | 'judging' | 'ready' | 'closed' = 'hello';
  let codec: FrameCodec | null = null;
  let listener: ((text: string) => void) | null = null;
  let settle: (e: PosternError | null) => void = () => undefined;
  const closed = new Promise<PosternError | null>((r) => (settle = r));

  const close = (err: PosternError | null = null): void => {
    if (stage === 'closed') return;
    stage = 'closed';
    clearTimeout(timer);
    codec?.destroy();
    sock.end();
    // end() lets the last line out; destroy() bounds how long a peer can hold us.
    setTimeout(() => sock.destroy(), 1_000).unref();
    settle(err);
    o.notify({ type: 'closed' });
  };
  const plainFail = (error: WireError, reason: string, delayMs: number): void => {
    if (stage === 'closed') return;
    stage = 'judging';
    clearTimeout(timer);
    sock.pause();
    o.notify({ type: 'refused', code: error.code, reason });
    setTimeout(() => {
      if (stage === 'closed') return;
      sock.write(`${JSON.stringify({ t: 'error', error })}\n`);
      close();
    }, delayMs).unref();
  };
  /** A sealed fatal message from the transport layer itself (bad frame, oversized line). */
  const fatal = (error: WireError, reason: string): void => {
    o.notify({ type: 'refused', code: error.code, reason });
    if (codec !== null && stage === 'ready') sock.write(`${codec.seal(JSON.stringify({ kind: 'fatal', error }))}\n`);
    close();
  };

  const timer = setTimeout(() => plainFail({ code: 'OPERATOR_AUTH_FAILED', message: 'handshake timed out' }, 'timeout', 0), o.handshakeTimeoutMs);
  timer.unref();

  const transport = (role: OperatorRole): OperatorTransport => ({
    role,
    send(text) {
      if (codec === null || stage !== 'ready') return;
      sock.write(`${codec.seal(text)}\n`);
    },
    onMessage(l) {
      listener = l;
    },
    close: (err = null) => close(err),
    closed,
    backlog: () => sock.writableLength,
  });

  const onAuth = (line: string): void => {
    const j = judgeAuth(line, o.key, ns);
    if (j.kind === 'refused') return plainFail(j.error, j.reason, j.slow ? o.failureDelayMs : 0);
    codec = j.codec;
    clearTimeout(timer);
    stage = 'ready';
    reader.setLimit(MAX_REQUEST_LINE_BYTES);
    sock.write(`${JSON.stringify({ t: 'welcome', v: OPERATOR_VERSION, role: j.role, proof: encodeB64u(j.proof) })}\n`);
    o.notify({ type: 'authenticated', role: j.role });
    o.ready(transport(j.role));
  };

  const onFrame = (line: string): void => {
    if (codec === null) return;
    const opened = codec.open(line);
    if (!opened.ok) return fatal({ code: 'OPERATOR_AUTH_FAILED', message: 'a message failed authentication; the connection is closed' }, opened.why);
    listener?.(opened.body);
  };

  const onData = (chunk: Buffer): void => {
    for (const ev of reader.push(chunk)) {
      if (stage === 'closed' || stage === 'judging') return;
      switch (ev.kind) {
        case 'too-long':
          return stage === 'ready'
            ? fatal({ code: 'REQUEST_TOO_LARGE', message: 'the line is too long' }, 'oversized line')
            : plainFail({ code: 'REQUEST_TOO_LARGE', message: 'the line is too long' }, 'oversized line', 0);
        case 'bad-utf8':
          return stage === 'ready'
            ? fatal({ code: 'OPERATOR_AUTH_FAILED', message: 'invalid UTF-8' }, 'bad utf-8')
            : plainFail({ code: 'OPERATOR_AUTH_FAILED', message: 'invalid UTF-8' }, 'bad utf-8', 0);
        case 'line':
          if (stage === 'hello') onAuth(ev.line);
          else onFrame(ev.line);
          break;
      }
    }
  };
  sock.on('data', (chunk: Buffer) => {
    try {
      onData(chunk);
    } catch {
      // Never let one connection's surprise reach the daemon's event loop.
      o.notify({ type: 'refused', code: 'INTERNAL', reason: 'unexpected failure' });
      close();
    }
  });
  sock.on('error', () => close());
  sock.on('close', () => close());
  sock.write(`${JSON.stringify({ t: 'hello', protocol: OPERATOR_PROTOCOL, v: OPERATOR_VERSION, nonce: encodeB64u(ns) })}\n`);
}
