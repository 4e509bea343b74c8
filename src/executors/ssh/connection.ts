/**
 * SshConnection: one authenticated SSH connection to a pinned host, on which
 * exec channels are opened (channel.ts).
 *
 *   TCP connect with TCP_NODELAY → host key must equal the pin →
 *   authenticate → ready; later: lost (closed, ended, failed) or ended by us.
 *
 * Invariants:
 * - The host verifier accepts only the pinned SHA-256 fingerprint; an
 *   unpinned or changed key fails the handshake before authentication, so
 *   nothing runs (HOST_KEY_UNKNOWN / HOST_KEY_MISMATCH with fingerprints).
 * - No agent, no agent/X11/port forwarding, no keyboard-interactive, no
 *   keepalive; channels carry exec only (no PTY).
 * - What ssh2 writes within one tick leaves in one write (coalesceWrites):
 *   the same bytes in the same order, without one TCP segment per piece.
 * - `ready` settles once; its errors have `side_effect_started` false and
 *   never contain key material or passwords.
 * - An exec request is announced (the `onSent` hook of `exec`) right before it
 *   is written and never otherwise: an exec whose channel open failed or was
 *   never confirmed was not sent, so its command cannot have run.
 * - Once lost, a connection never becomes usable again; every watcher hears
 *   of the loss exactly once.
 */
import { Socket } from 'node:net';
import { ssh2 } from '../../libraries.js';
import type { Client, ClientChannel, ConnectConfig } from 'ssh2';
import type { ResolvedSsh } from '../../contracts/calls/resolved.js';
import { PosternError } from '../../rules/errors.js';
import type { SshAuth } from './auth.js';
import type { Where } from './call.js';
import { checkHostKey, hostKeyError, sshFingerprint } from './host-key.js';
import type { HostKeyVerdict } from './host-key.js';

/** How long a server gets to close the connection after our disconnect. */
export const CLOSE_GRACE_MS = 2000;

type SshError = Error & { level?: string; code?: unknown };

export class SshConnection {
  readonly where: Where;
  /** Fulfilled once authenticated; rejected (PosternError, nothing sent) if the handshake fails. */
  readonly ready: Promise<void>;
  private readonly client = new (ssh2().Client)();
  private readonly socket: Socket;
  private state: 'connecting' | 'ready' | 'lost' = 'connecting';
  private verdict: HostKeyVerdict | null = null;
  private readonly watchers = new Set<(err: Error | null) => void>();
  private readonly execHooks = new Map<Buffer, () => void>();
  private readonly execHooked: boolean;
  private readonly closed: Promise<void>;

  constructor(action: ResolvedSsh, auth: SshAuth, readyTimeoutMs: number) {
    const { host, port } = action;
    this.where = { host, port };
    // Set before connect, it applies as the socket opens (a `noDelay` option of connect() would be ignored here).
    this.socket = new Socket().setNoDelay(true);
    this.closed = new Promise<void>((resolve) => this.socket.once('close', () => resolve()));
    // ssh2 reports socket errors through the client; this only covers a connect() that threw.
    this.socket.on('error', () => undefined);
    let settleReady: { resolve: () => void; reject: (e: PosternError) => void } | undefined;
    this.ready = new Promise<void>((resolve, reject) => (settleReady = { resolve, reject }));
    // Awaited by the callers that need it; never an unhandled rejection.
    this.ready.catch(() => undefined);

    const lose = (err: Error | null): void => {
      if (this.state === 'lost') return;
      const handshake = this.state === 'connecting';
      this.state = 'lost';
      if (handshake) settleReady?.reject(this.handshakeError(err, readyTimeoutMs));
      for (const w of [...this.watchers]) w(err);
      this.watchers.clear();
      if (!this.socket.destroyed) this.socket.end();
    };
    this.client.on('ready', () => {
      if (this.state !== 'connecting') return;
      this.state = 'ready';
      settleReady?.resolve();
    });
    // Keeps ssh2 from throwing on late errors; a close always follows.
    this.client.on('error', (err: SshError) => lose(err));
    this.client.on('end', () => lose(null));
    this.client.on('close', () => lose(null));

    const config: ConnectConfig = {
      sock: this.socket,
      username: action.user,
      ...auth,
      hostVerifier: (key: Buffer): boolean => {
        this.verdict = checkHostKey(action.hostKey, sshFingerprint(key));
        return this.verdict.kind === 'ok';
      },
      readyTimeout: readyTimeoutMs,
      tryKeyboard: false,
      agentForward: false,
      keepaliveInterval: 0,
    };
    try {
      this.socket.connect({ host, port });
      // After connect(), which puts back the socket's own write.
      coalesceWrites(this.socket);
      this.client.connect(config);
    } catch (e) {
      this.socket.destroy();
      lose(e instanceof Error ? e : new Error('connect failed'));
    }
    this.execHooked = hookExecRequests(this.client, this.execHooks);
  }

  /** `SHA256:…` of the host key the server presented (once past the handshake: the pinned one). */
  get fingerprint(): string {
    return this.verdict?.offered ?? '';
  }

  /** Authenticated and not lost: new channels may be opened. */
  get usable(): boolean {
    return this.state === 'ready';
  }

  get lost(): boolean {
    return this.state === 'lost';
  }

  /** Calls `watcher` once when the connection is lost (with the error, if there was one); returns the unsubscribe. */
  onLost(watcher: (err: Error | null) => void): () => void {
    if (this.state === 'lost') {
      watcher(null);
      return () => undefined;
    }
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }

  /**
   * Opens a session channel and requests exec of `command` on it. `onSent`
   * runs once, right before the exec request is written (ssh2 writes it from
   * inside its channel-open handler). Throws when the connection cannot send.
   */
  exec(command: string, onSent: () => void, done: (err: Error | undefined, channel: ClientChannel | undefined) => void): void {
    if (!this.usable) throw new Error('the connection is not usable');
    const request = Buffer.from(command, 'utf8');
    let sent = false;
    const markSent = (): void => {
      if (sent) return;
      sent = true;
      onSent();
    };
    this.execHooks.set(request, markSent);
    try {
      // ssh2 writes a Buffer command as is; the Buffer's identity tells the hook which call it is.
      this.client.exec(request as unknown as string, {}, (err, channel: ClientChannel | undefined) => {
        this.execHooks.delete(request);
        if (err === undefined) markSent();
        done(err, channel);
      });
    } catch (e) {
      this.execHooks.delete(request);
      throw e;
    }
    // Without the hook the channel request itself counts as sent: safe, only less precise.
    if (!this.execHooked) markSent();
  }

  /** While idle the socket does not keep the process alive. */
  setIdle(idle: boolean): void {
    if (idle) this.socket.unref();
    else this.socket.ref();
  }

  /** Disconnects; resolves once the socket is closed (forced after CLOSE_GRACE_MS). */
  end(): Promise<void> {
    this.client.end();
    // A server that ignores the disconnect must not keep the socket open.
    const force = setTimeout(() => this.socket.destroy(), CLOSE_GRACE_MS);
    force.unref();
    return this.closed.finally(() => clearTimeout(force));
  }

  private handshakeError(err: SshError | null, readyTimeoutMs: number): PosternError {
    const { host, port } = this.where;
    const at = `${host}:${port}`;
    if (this.verdict !== null && this.verdict.kind !== 'ok') return hostKeyError(this.verdict, host, port);
    if (err === null) {
      return new PosternError('TARGET_ERROR', `the SSH connection to ${at} closed before the command was sent`, {
        details: { ...this.where, reason: 'connection_closed' },
        sideEffectStarted: false,
      });
    }
    if (err.level === 'client-timeout') {
      return new PosternError('TARGET_TIMEOUT', `the SSH handshake with ${at} did not finish within ${readyTimeoutMs} ms`, {
        details: { ...this.where, phase: 'connect' },
        sideEffectStarted: false,
        cause: err,
      });
    }
    if (err.level === 'client-authentication') {
      return new PosternError('TARGET_ERROR', `the SSH server on ${at} rejected the credential`, {
        details: { ...this.where, reason: 'auth_failed' },
        sideEffectStarted: false,
        cause: err,
      });
    }
    return new PosternError('TARGET_ERROR', `could not connect to the SSH server on ${at}`, {
      details: { ...this.where, reason: errorReason(err) },
      sideEffectStarted: false,
      cause: err,
    });
  }
}

/**
 * ssh2 hands the socket each packet in pieces (with AES-GCM: the length, the
 * ciphertext, the tag), one write each; with TCP_NODELAY every piece is sent
 * as its own segment and the server wakes for each (without it, Nagle holds
 * the second piece for the first one's delayed ACK). Corking the socket for
 * the rest of the tick makes the pieces, and any packets written with them,
 * one writev: nothing is held longer than the current tick.
 */
function coalesceWrites(socket: Socket): void {
  const write = socket.write.bind(socket);
  let corked = false;
  const uncork = (): void => {
    corked = false;
    socket.uncork();
  };
  socket.write = ((...args: Parameters<Socket['write']>): boolean => {
    if (!corked) {
      corked = true;
      socket.cork();
      process.nextTick(uncork);
    }
    return write(...args);
  }) as Socket['write'];
}

/** A short, secret-free reason for an ssh2 failure: the socket error code, else ssh2's level. */
export function errorReason(err: SshError): string {
  return err.level === 'client-socket' && typeof err.code === 'string' ? err.code : (err.level ?? 'ssh_error');
}

interface ExecWriter {
  exec: (channel: number, command: string | Buffer, wantReply?: boolean) => unknown;
}

/**
 * ssh2 has no public hook between "channel open confirmed" and "exec request
 * written": it writes the request from inside its open handler. This wraps
 * the connection's packet writer (ssh2 1.x `Protocol#exec`) so the hook
 * registered for a command Buffer runs right before that Buffer is written.
 * Returns false when the writer is not there; callers then count the channel
 * request as the exec.
 */
function hookExecRequests(client: Client, hooks: Map<Buffer, () => void>): boolean {
  const writer = (client as unknown as { _protocol?: Partial<ExecWriter> })._protocol;
  const write = writer?.exec;
  if (writer === undefined || typeof write !== 'function') return false;
  writer.exec = (channel, command, wantReply) => {
    if (Buffer.isBuffer(command)) {
      const hook = hooks.get(command);
      hooks.delete(command);
      hook?.();
    }
    return write.call(writer, channel, command, wantReply);
  };
  return true;
}
