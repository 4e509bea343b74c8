/**
 * One operator connection on the daemon side: handshake, then verified
 * commands and pushed events (spec: src/protocol/operator.ts).
 *
 * Invariants: no command is read before the client proved K; the server's
 * proof is sent only after that; each connection gets one proof attempt, and
 * a failure is answered only after `failureDelayMs` (so guessing is slow and
 * costs a connection each time). K is read from `key()` at the moment of the
 * proof and not kept; a null, wrong-sized or all-zero key refuses everyone.
 * Any bad frame, oversized line, invalid UTF-8 or handshake timeout closes the
 * connection; nothing here throws into the server. Commands are refused once
 * the vault is locked. A subscriber that stops reading is dropped, not buffered.
 */
import type { Socket } from 'node:net';
import {
  AuthSchema,
  MAX_REQUEST_LINE_BYTES,
  OPERATOR_PROTOCOL,
  OPERATOR_VERSION,
  PREAUTH_LINE_BYTES,
  MAX_RESPONSE_LINE_BYTES,
  type ServerMessage,
  type WireError,
} from '../../protocol/operator.js';
import type { ApprovalQueue, QueueEvent } from '../../approvals/queue.js';
import { FrameCodec, LineReader, clientProof, decodeB64u, encodeB64u, newNonce, sameBytes, serverProof, sessionKey, usableKey } from './channel.js';
import { handleRequest, type HandlerDeps } from './handlers.js';

export type OperatorNotice =
  | { readonly type: 'authenticated' }
  /** The connection was refused or closed for a failed proof, a bad frame or a protocol violation. */
  | { readonly type: 'refused'; readonly code: string; readonly reason: string }
  | { readonly type: 'closed' };

export interface ConnectionOptions {
  readonly key: () => Uint8Array | null;
  readonly queue: ApprovalQueue;
  readonly status: () => unknown;
  readonly onLock: () => void;
  readonly operatorName: string;
  readonly handshakeTimeoutMs: number;
  readonly failureDelayMs: number;
  readonly maxBufferedBytes: number;
  readonly notify: (n: OperatorNotice) => void;
}

function currentKey(key: () => Uint8Array | null): Uint8Array | null {
  try {
    const k = key();
    return usableKey(k) ? Uint8Array.from(k) : null;
  } catch {
    return null; // a vault that throws VAULT_LOCKED is locked
  }
}

export function serveConnection(sock: Socket, o: ConnectionOptions): void {
  const reader = new LineReader(PREAUTH_LINE_BYTES);
  const ns = newNonce();
  let stage: 'hello' | 'judging' | 'ready' | 'closed' = 'hello';
  let codec: FrameCodec | null = null;
  let unsubscribe: (() => void) | null = null;

  const close = (): void => {
    if (stage === 'closed') return;
    stage = 'closed';
    clearTimeout(timer);
    unsubscribe?.();
    codec?.destroy();
    sock.end();
    // end() lets the last line out; destroy() bounds how long a peer can hold us.
    setTimeout(() => sock.destroy(), 1_000).unref();
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
  const send = (msg: ServerMessage): void => {
    if (codec === null || stage !== 'ready') return;
    let line: string;
    try {
      line = codec.seal(JSON.stringify(msg));
    } catch {
      // A value the daemon handed us that JSON cannot carry (a BigInt, a cycle).
      const id = msg.kind === 'response' ? msg.id : null;
      line = codec.seal(JSON.stringify({ kind: 'response', id, ok: false, error: { code: 'INTERNAL', message: 'the answer could not be encoded' } }));
    }
    if (line.length > MAX_RESPONSE_LINE_BYTES) {
      const error = { code: 'RESPONSE_TOO_LARGE', message: 'the answer is larger than the operator channel allows' };
      if (msg.kind !== 'response' || msg.id === null) return fatal(error, 'oversized event');
      sock.write(`${codec.seal(JSON.stringify({ kind: 'response', id: msg.id, ok: false, error }))}\n`);
      return;
    }
    sock.write(`${line}\n`);
    if (sock.writableLength > o.maxBufferedBytes) close();
  };
  const fatal = (error: WireError, reason: string): void => {
    o.notify({ type: 'refused', code: error.code, reason });
    send({ kind: 'fatal', error });
    close();
  };

  const timer = setTimeout(() => plainFail({ code: 'OPERATOR_AUTH_FAILED', message: 'handshake timed out' }, 'timeout', 0), o.handshakeTimeoutMs);
  timer.unref();

  const onAuth = (line: string): void => {
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      return plainFail({ code: 'OPERATOR_AUTH_FAILED', message: 'expected an auth message' }, 'not JSON', o.failureDelayMs);
    }
    const a = AuthSchema.safeParse(raw);
    const nc = a.success ? decodeB64u(a.data.nonce) : null;
    const proof = a.success ? decodeB64u(a.data.proof) : null;
    if (!a.success || nc === null || proof === null) {
      return plainFail({ code: 'OPERATOR_AUTH_FAILED', message: 'expected an auth message' }, 'malformed auth', o.failureDelayMs);
    }
    const k = currentKey(o.key);
    if (k === null) return plainFail({ code: 'VAULT_LOCKED', message: 'the daemon is locked' }, 'locked', 0);
    try {
      if (!sameBytes(proof, clientProof(k, ns, nc))) {
        return plainFail({ code: 'OPERATOR_AUTH_FAILED', message: 'the proof does not match this daemon\'s vault' }, 'bad proof', o.failureDelayMs);
      }
      const ps = serverProof(k, ns, nc);
      codec = new FrameCodec(sessionKey(k, ns, nc), 'server');
      clearTimeout(timer);
      stage = 'ready';
      reader.setLimit(MAX_REQUEST_LINE_BYTES);
      sock.write(`${JSON.stringify({ t: 'welcome', v: OPERATOR_VERSION, proof: encodeB64u(ps) })}\n`);
      o.notify({ type: 'authenticated' });
    } finally {
      k.fill(0);
    }
  };

  const deps: HandlerDeps = {
    queue: o.queue,
    status: o.status,
    onLock: o.onLock,
    operatorName: o.operatorName,
    subscribe: () => {
      unsubscribe ??= o.queue.subscribe((e: QueueEvent) => {
        send({ kind: 'event', event: e.type === 'added' ? { type: 'added', card: e.card } : { type: 'resolved', id: e.id, decision: e.decision } });
      });
    },
  };

  const onFrame = (line: string): void => {
    if (codec === null) return;
    const opened = codec.open(line);
    if (!opened.ok) return fatal({ code: 'OPERATOR_AUTH_FAILED', message: 'a message failed authentication; the connection is closed' }, opened.why);
    if (currentKey(o.key) === null) return fatal({ code: 'VAULT_LOCKED', message: 'the daemon is locked' }, 'locked');
    const out = handleRequest(opened.body, deps);
    if (out.kind === 'result') send({ kind: 'response', id: out.id, ok: true, result: out.result });
    else send({ kind: 'response', id: out.id, ok: false, error: out.error });
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
