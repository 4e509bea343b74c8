/**
 * SshPool: catalog SSH commands over shared, authenticated connections.
 *
 *   check options and credential (nothing sent) → the connection for the key
 *   (opened on first use: connection.ts; the credential's key is parsed for a
 *   new connection only) → a channel slot (FIFO) → exec, caps,
 *   exit code / signal (channel.ts) → slot freed → idle close.
 *
 * Invariants:
 * - One connection per key = (host, port, user, pinned fingerprint,
 *   credential name, HMAC-SHA-256 of the credential's kind and secret bytes
 *   under a per-pool random key). A rotated secret gets a new connection; the
 *   old one closes when idle, or at once when the credential is `retire`d
 *   (rotate, rm): no new call gets it, its running channels finish with the
 *   secret they started with, then it ends. The key never holds the secret itself.
 * - Calls that arrive while a key's connection is being opened wait for that
 *   attempt; a failed attempt (host key, auth, network) fails all of them
 *   with `side_effect_started` false and is not kept.
 * - Every connection is opened as executeSsh opens one: TCP_NODELAY, host key
 *   equal to the pin, no agent, no forwarding, no PTY, no keyboard-interactive.
 * - At most maxChannelsPerConnection calls hold a channel on a connection;
 *   the others wait in arrival order, on their own deadline (TARGET_TIMEOUT
 *   or CALL_CANCELLED in phase `queue`, nothing sent). A slot is freed when
 *   the call's channel is gone, not merely when the call settled.
 * - A command never runs twice. A call whose connection is found lost before
 *   its exec request was written is tried once more on a fresh connection; once
 *   the exec request was written (`onExecSent` has run, exactly once) a lost
 *   connection fails the call: TARGET_ERROR, `side_effect_started` true.
 * - Timeout or cancel after exec: signal TERM, close the channel; the
 *   connection stays in the pool for later calls.
 * - A connection with no channel for idleMs is ended; idle connections and
 *   their timers never keep the process alive.
 * - close() fails every call in flight (TARGET_ERROR `pool_closed`,
 *   `side_effect_started` true iff its exec was sent) and ends every
 *   connection; calls made afterwards open new connections.
 * - Errors never contain key material or passwords (auth.ts, connection.ts).
 */
import { randomBytes } from 'node:crypto';
import { credentialDigest } from '../credential-digest.js';
import type { ResolvedSsh } from '../../contracts/calls/resolved.js';
import { isPosternError, PosternError } from '../../rules/errors.js';
import type { SshAuth } from './auth.js';
import { sshAuth } from './auth.js';
import type { Limits, StopError, Where } from './call.js';
import { CallStop, cancelledError, checkedCommand, checkedLimits, invalid, timeoutError } from './call.js';
import { runCommand } from './channel.js';
import type { CommandRun } from './channel.js';
import { SshConnection } from './connection.js';
import type { SshCredential, SshPoolExecOptions, SshPoolOptions, SshResult } from './types.js';
import { DEFAULT_SSH_CHANNELS_PER_CONNECTION, DEFAULT_SSH_IDLE_MS } from './types.js';

interface Entry {
  readonly key: string;
  /** The vault credential's name. */
  readonly credential: string;
  /** Set by retire(): end as soon as no channel uses it. */
  retired: boolean;
  readonly conn: SshConnection;
  /** Calls holding a channel slot. */
  active: number;
  /** Calls waiting for a slot, oldest first. */
  readonly queue: (() => void)[];
  idleTimer: NodeJS.Timeout | undefined;
}

export class SshPool {
  private readonly idleMs: number;
  private readonly maxChannels: number;
  private readonly entries = new Map<string, Entry>();
  /** Calls in flight, with the error each gets if the pool closes under it. */
  private readonly calls = new Map<CallStop, StopError>();
  private readonly keySecret = randomBytes(32);

  constructor(opts: SshPoolOptions = {}) {
    this.idleMs = opts.idleMs ?? DEFAULT_SSH_IDLE_MS;
    this.maxChannels = opts.maxChannelsPerConnection ?? DEFAULT_SSH_CHANNELS_PER_CONNECTION;
    for (const [name, n] of Object.entries({ idleMs: this.idleMs, maxChannelsPerConnection: this.maxChannels })) {
      if (!Number.isSafeInteger(n) || n < 1) throw invalid(`${name} must be a positive integer`);
    }
  }

  /** Connections open or being opened. */
  get size(): number {
    return this.entries.size;
  }

  async exec(action: ResolvedSsh, credential: SshCredential | null, opts: SshPoolExecOptions = {}): Promise<SshResult> {
    const limits = checkedLimits(opts);
    const command = checkedCommand(action.command);
    // A connection open (or being opened) under this key was made with these very bytes — the key
    // digests the kind and every secret part — so they passed sshAuth: only a new connection needs
    // the credential checked and its key parsed (sshAuth refuses a null credential).
    const key = credential === null ? null : connectionKey(action, credential, this.keySecret);
    let auth = key !== null && this.live(key) !== undefined ? null : sshAuth(credential, action.credential);
    const authFor = (): SshAuth => (auth ??= sshAuth(credential, action.credential));
    const where: Where = { host: action.host, port: action.port };
    const stop = new CallStop(limits.timeoutMs, timeoutError(where, limits.timeoutMs));
    stop.follow(opts.signal, cancelledError(where));
    this.calls.set(stop, closedError(where));
    try {
      for (let mayRetry = true; ; mayRetry = false) {
        if (stop.signal.aborted) throw stop.error('queue');
        const result = await this.attempt(this.entryFor(key as string, (credential as SshCredential).meta.name, action, authFor, limits), command, limits, stop, opts.onExecSent, mayRetry);
        if (result !== null) return result;
      }
    } finally {
      this.calls.delete(stop);
      stop.dispose();
    }
  }

  /**
   * Stop using every connection authenticated with `credential` (its secret
   * changed or was removed): they leave the pool now and end once their
   * running channels are done. Returns how many connections were retired.
   */
  retire(credential: string): number {
    let n = 0;
    for (const entry of [...this.entries.values()]) {
      if (entry.credential !== credential) continue;
      n++;
      entry.retired = true;
      this.forget(entry);
      this.endIfRetired(entry);
    }
    return n;
  }

  /** Ends every connection; the calls in flight fail with TARGET_ERROR `pool_closed`. */
  async close(): Promise<void> {
    for (const [stop, closed] of this.calls) stop.stopNow(closed);
    const entries = [...this.entries.values()];
    for (const entry of entries) this.forget(entry);
    await Promise.all(entries.map((entry) => entry.conn.end()));
  }

  /**
   * One try on `entry`. Resolves null when `mayRetry` and the connection was
   * lost before the exec request was written: nothing ran, a fresh connection
   * may be tried.
   */
  private async attempt(
    entry: Entry,
    command: string,
    limits: Limits,
    stop: CallStop,
    onExecSent: (() => void) | undefined,
    mayRetry: boolean,
  ): Promise<SshResult | null> {
    await this.takeSlot(entry, stop);
    let run: CommandRun | undefined;
    try {
      await stop.race(entry.conn.ready, 'connect');
      run = runCommand(entry.conn, command, limits, stop, onExecSent);
      return await run.result;
    } catch (e) {
      // Only a connection that was ready and then lost is retried: a failed handshake rejects `ready` above.
      const unsent = isPosternError(e, 'TARGET_ERROR') && !e.sideEffectStarted;
      if (mayRetry && unsent && run !== undefined && entry.conn.lost && !stop.signal.aborted) return null;
      throw e;
    } finally {
      if (run === undefined) this.release(entry);
      else void run.released.then(() => this.release(entry));
    }
  }

  /** The connection under `key`, unless there is none or it is lost. */
  private live(key: string): Entry | undefined {
    const known = this.entries.get(key);
    return known === undefined || known.conn.lost ? undefined : known;
  }

  private entryFor(key: string, credential: string, action: ResolvedSsh, auth: () => SshAuth, limits: Limits): Entry {
    const known = this.live(key);
    if (known !== undefined) return known;
    // The connection outlives this call: its handshake limit is not cut to this call's deadline.
    const conn = new SshConnection(action, auth(), limits.connectTimeoutMs);
    const entry: Entry = { key, credential, retired: false, conn, active: 0, queue: [], idleTimer: undefined };
    this.entries.set(key, entry);
    conn.onLost(() => this.forget(entry));
    conn.ready.then(
      () => this.idleIfUnused(entry),
      () => undefined,
    );
    return entry;
  }

  private takeSlot(entry: Entry, stop: CallStop): Promise<void> {
    if (stop.signal.aborted) return Promise.reject(stop.error('queue'));
    if ((entry.active < this.maxChannels && entry.queue.length === 0) || entry.conn.lost) {
      this.occupy(entry);
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const grant = (): void => {
        stop.signal.removeEventListener('abort', onStop);
        this.occupy(entry);
        resolve();
      };
      const onStop = (): void => {
        const i = entry.queue.indexOf(grant);
        if (i >= 0) entry.queue.splice(i, 1);
        reject(stop.error('queue'));
      };
      stop.signal.addEventListener('abort', onStop, { once: true });
      entry.queue.push(grant);
    });
  }

  private occupy(entry: Entry): void {
    entry.active += 1;
    clearTimeout(entry.idleTimer);
    entry.idleTimer = undefined;
    entry.conn.setIdle(false);
  }

  private release(entry: Entry): void {
    entry.active -= 1;
    const next = entry.queue.shift();
    if (next !== undefined) next();
    else this.idleIfUnused(entry);
  }

  private endIfRetired(entry: Entry): void {
    if (entry.retired && entry.active === 0 && entry.queue.length === 0) void entry.conn.end();
  }

  private idleIfUnused(entry: Entry): void {
    if (entry.retired) {
      this.endIfRetired(entry);
      return;
    }
    if (entry.active > 0 || !entry.conn.usable || entry.idleTimer !== undefined) return;
    entry.conn.setIdle(true);
    entry.idleTimer = setTimeout(() => {
      this.forget(entry);
      void entry.conn.end();
    }, this.idleMs);
    entry.idleTimer.unref();
  }

  /** Takes `entry` out of the pool; its waiting calls proceed (and find it lost). */
  private forget(entry: Entry): void {
    if (this.entries.get(entry.key) === entry) this.entries.delete(entry.key);
    clearTimeout(entry.idleTimer);
    entry.idleTimer = undefined;
    for (const grant of entry.queue.splice(0)) grant();
  }
}

function closedError(where: Where): StopError {
  return (phase) =>
    new PosternError(
      'TARGET_ERROR',
      phase === 'command'
        ? `the SSH connection pool closed while the command ran on ${where.host}:${where.port}`
        : `the SSH connection pool closed before the command was sent to ${where.host}:${where.port}`,
      { details: { ...where, reason: 'pool_closed', phase }, sideEffectStarted: phase === 'command' },
    );
}

/** The pool key; the secret enters only through a keyed digest. */
function connectionKey(action: ResolvedSsh, credential: SshCredential, keySecret: Buffer): string {
  const pin = action.hostKey.state === 'pinned' ? action.hostKey.fingerprint.replace(/=+$/, '') : null;
  return JSON.stringify([action.host, action.port, action.user, pin, credential.meta.name, credentialDigest(credential, keySecret)]);
}
