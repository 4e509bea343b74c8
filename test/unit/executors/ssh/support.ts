/**
 * Test support: an in-process ssh2 server on 127.0.0.1 that accepts one
 * client key and one password, runs every exec with `/bin/sh -c` (so quoting
 * round-trips are real) and records what it saw: execs, signals, auth tries,
 * connections accepted and the peak of concurrent exec channels on one
 * connection. It can refuse session channels beyond a per-connection limit
 * and drop a connection at its next session request (for the pool tests).
 * Children run in their own process group and are killed when the channel
 * closes, so a timed-out `sleep 30` does not outlive the test.
 */
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import type { Writable } from 'node:stream';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import ssh2 from 'ssh2';
import type { Connection, ParsedKey, ServerChannel } from 'ssh2';
import type { ResolvedSsh } from '../../../../src/contracts/index.js';
import type { SshCredential } from '../../../../src/executors/ssh/index.js';
import { sshFingerprint } from '../../../../src/executors/ssh/index.js';
import { sshAction, sshKeyCredential, sshPasswordCredential } from '../../../helpers/ssh-fixtures.js';

export const PASSWORD = 'pw-CANARY-7f3a9c';

export interface KeyPair {
  readonly private: string;
  readonly public: string;
  /** Independent fingerprint: sha256 of the base64 blob in the public line. */
  readonly fingerprint: string;
}

/** Keys come from ssh-keygen: ssh2's own generator now and then yields an ed25519 key its parser rejects. */
export function keyPair(): KeyPair {
  const dir = mkdtempSync(join(tmpdir(), 'postern-sshkey-'));
  try {
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'k')]);
    const kp = { private: readFileSync(join(dir, 'k'), 'utf8'), public: readFileSync(join(dir, 'k.pub'), 'utf8').trim() };
    return withFingerprint(kp);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function withFingerprint(kp: { private: string; public: string }): KeyPair {
  const blob = Buffer.from(kp.public.split(' ')[1] ?? '', 'base64');
  return { private: kp.private, public: kp.public, fingerprint: sshFingerprint(blob) };
}

export const CLIENT_KEY = keyPair();

export interface TestSshServer {
  readonly port: number;
  readonly hostKey: KeyPair;
  readonly execs: string[];
  readonly signals: string[];
  readonly authFailures: number;
  /** Connections that reached the SSH handshake, ever. */
  readonly accepted: number;
  /** Connections open now. */
  readonly openConnections: number;
  /** The most exec channels ever open at once on a single connection. */
  readonly peakExecsPerConnection: number;
  /** Ends every client connection (as a server going away would), leaving commands running. */
  dropConnections(): void;
  /** The next `n` session channel requests end their connection instead of opening (nothing runs). */
  dropAtNextSessions(n?: number): void;
  close(): Promise<void>;
}

export interface TestSshServerOptions {
  /** Session channels open at once per connection beyond which the server refuses more. */
  readonly maxSessions?: number;
  /** Disable Nagle on the server's sockets (as for benchmarks; otherwise small replies can wait for a delayed ACK). */
  readonly noDelay?: boolean;
}

export async function startSshServer(hostKey: KeyPair = keyPair(), opts: TestSshServerOptions = {}): Promise<TestSshServer> {
  const clientPub = ssh2.utils.parseKey(CLIENT_KEY.public) as ParsedKey;
  const execs: string[] = [];
  const signals: string[] = [];
  const conns = new Set<Connection>();
  const kills = new Set<(sig: NodeJS.Signals) => void>();
  let authFailures = 0;
  let accepted = 0;
  let peak = 0;
  let dropSessions = 0;
  const server = new ssh2.Server({ hostKeys: [hostKey.private] }, (conn) => {
    accepted += 1;
    conns.add(conn);
    // ssh2's server Connection has setNoDelay; @types/ssh2 does not declare it.
    if (opts.noDelay === true) (conn as Connection & { setNoDelay(on: boolean): void }).setNoDelay(true);
    conn.on('close', () => conns.delete(conn));
    conn.on('error', () => undefined);
    conn.on('authentication', (ctx) => {
      if (ctx.method === 'password' && ctx.password === PASSWORD) return ctx.accept();
      if (ctx.method === 'publickey' && ctx.key.algo === clientPub.type && sameBytes(ctx.key.data, clientPub.getPublicSSH())) {
        if (ctx.signature === undefined || ctx.blob === undefined) return ctx.accept();
        if (clientPub.verify(ctx.blob, ctx.signature, ctx.hashAlgo) === true) return ctx.accept();
      }
      if (ctx.method !== 'none') authFailures += 1;
      ctx.reject(['publickey', 'password']);
    });
    conn.on('ready', () => {
      let sessions = 0;
      let running = 0;
      conn.on('session', (acceptSession, rejectSession) => {
        if (dropSessions > 0) {
          dropSessions -= 1;
          conn.end();
          return;
        }
        if (opts.maxSessions !== undefined && sessions >= opts.maxSessions) {
          rejectSession();
          return;
        }
        sessions += 1;
        const session = acceptSession();
        let kill: (sig: NodeJS.Signals) => void = () => undefined;
        session.on('signal', (accept, _reject, info) => {
          signals.push(info.name);
          accept?.();
          kill(`SIG${info.name}` as NodeJS.Signals);
        });
        session.on('exec', (accept, _reject, info) => {
          execs.push(info.command);
          const stream = accept();
          running += 1;
          peak = Math.max(peak, running);
          stream.once('close', () => {
            running -= 1;
            sessions -= 1;
          });
          const child = spawn('/bin/sh', ['-c', info.command], { detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
          kill = (sig) => {
            try {
              if (child.pid !== undefined) process.kill(-child.pid, sig);
            } catch {
              // already gone
            }
          };
          const forward = forwardSerially(child, stream);
          kills.add(kill);
          // The client's channel close ends the readable side; it only ends once read.
          stream.resume();
          const stop = (): void => {
            forward.stop();
            kill('SIGKILL');
          };
          // Only the channel's close stops the command: the client's EOF on stdin must not
          // cut a command that is still writing (e.g. `echo done >&2` after a capped stdout).
          stream.on('close', stop);
          stream.on('error', () => undefined);
          stream.stderr.on('error', () => undefined);
          // ssh2's server channel sends EOF and CLOSE as soon as its stdout side finishes, even
          // when stderr still waits for window space: end only once everything forwarded has
          // been written and stderr has flushed too.
          const endChannel = (code: number | null, sig: NodeJS.Signals | null): void => {
            try {
              if (code !== null) stream.exit(code);
              else if (sig !== null) stream.exit(sig.replace(/^SIG/, ''), false, '');
              stream.end();
            } catch {
              // the client closed the channel first
            }
          };
          child.on('close', (code, sig) => {
            forward.drained(() => {
              stream.stderr.once('finish', () => endChannel(code, sig));
              stream.stderr.end();
            });
          });
        });
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    hostKey,
    execs,
    signals,
    get authFailures() {
      return authFailures;
    },
    get accepted() {
      return accepted;
    },
    get openConnections() {
      return conns.size;
    },
    get peakExecsPerConnection() {
      return peak;
    },
    dropAtNextSessions: (n = 1) => {
      dropSessions += n;
    },
    dropConnections: () => {
      for (const c of conns) c.end();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const k of kills) k('SIGKILL');
        for (const c of conns) c.end();
        server.close(() => resolve());
      }),
  };
}

function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

export function keyCredential(privateKey: string = CLIENT_KEY.private): SshCredential {
  return sshKeyCredential(privateKey);
}

export function passwordCredential(password: string = PASSWORD): SshCredential {
  return sshPasswordCredential(password);
}

/** A resolved action for the test server. */
export function action(srv: TestSshServer, argv: readonly string[], pin: string | null = srv.hostKey.fingerprint): ResolvedSsh {
  return sshAction({ host: '127.0.0.1', port: srv.port, user: 'deploy' }, argv, pin);
}

/** Runs an async function expected to reject; returns the rejection. */
export async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection');
}

/**
 * Forwards a command's stdout and stderr to its channel one write at a
 * time, in the order they came: ssh2's server never resumes a stderr write
 * queued behind a stdout write that waited for window space, so here the two
 * never wait at once (a command's streams then reach the client in the order
 * it wrote them, whatever the load). The child is paused while writes queue.
 */
function forwardSerially(child: ChildProcessWithoutNullStreams, stream: ServerChannel): { stop(): void; drained(then: () => void): void } {
  const HIGH = 16;
  const queue: { readonly to: Writable; readonly chunk: Buffer }[] = [];
  let writing = false;
  let stopped = false;
  let whenDrained: (() => void) | null = null;
  const flow = (on: boolean): void => {
    for (const r of [child.stdout, child.stderr]) {
      if (on) r.resume();
      else r.pause();
    }
  };
  const pump = (): void => {
    if (writing) return;
    const next = stopped ? undefined : queue.shift();
    if (next === undefined) {
      flow(true);
      const then = whenDrained;
      whenDrained = null;
      then?.();
      return;
    }
    writing = true;
    if (queue.length < HIGH / 2) flow(true);
    next.to.write(next.chunk, () => {
      writing = false;
      pump();
    });
  };
  const take = (to: Writable) => (chunk: Buffer) => {
    if (stopped) return;
    queue.push({ to, chunk });
    if (queue.length >= HIGH) flow(false);
    pump();
  };
  child.stdout.on('data', take(stream));
  child.stderr.on('data', take(stream.stderr));
  return {
    stop: () => {
      stopped = true;
      queue.length = 0;
      flow(true);
    },
    drained: (then) => {
      whenDrained = then;
      pump();
    },
  };
}
