// Shared helpers for the operator-channel tests: a private run directory, a
// real server on a real socket, a raw protocol speaker for crafting frames, and
// a man-in-the-middle relay that can alter, drop, inject or replay lines.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, mkdirSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApprovalQueue, type CardDraft } from '../../../src/approvals/queue.js';
import { startOperatorServer, type OperatorNotice, type OperatorServerOptions } from '../../../src/daemon/operator/index.js';
import { createBackend } from '../../../src/daemon/operator/backend.js';
import { EventBus } from '../../../src/daemon/services/events.js';
import { GrantStore } from '../../../src/approvals/grants.js';
import { FrameCodec, clientProof, decodeB64u, encodeB64u, newNonce, sessionKey } from '../../../src/protocol/operator/crypto.js';
import { PosternError, type ErrorCode } from '../../../src/rules/errors.js';
import { systemClock } from '../../../src/clock/index.js';
import { waitFor } from '../../helpers/wait.js';

export const draft = (over: Partial<CardDraft> = {}): CardDraft => ({
  session: { id: 's1', client_name: 'agent', client_version: '1', pid: 42 },
  tool: 'create_issue',
  effect: 'write',
  revision: 2,
  revision_seen: 2,
  scope_allowed: 'session',
  reasons: ['policy: session'],
  widening: [],
  target: { kind: 'http', method: 'POST', origin: 'https://api.example.com', host: 'api.example.com', port: 443, path: '/repos/a/b/issues', query: [], headers: [], body: null },
  credential: 'gh',
  raw_arguments: { title: 'x' },
  normalized_arguments: { title: 'x' },
  adapter: null,
  idempotency_key: 'k1',
  call_digest: 'digest-1',
  ...over,
});

/** A fresh 0700 run directory; removed after the test. */
export function tempRun(t: { after: (fn: () => void) => void }): { dir: string; runDir: string; socket: string } {
  const dir = mkdtempSync(join(tmpdir(), 'postern-op-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const runDir = join(dir, 'run');
  mkdirSync(runDir, { mode: 0o700 });
  return { dir, runDir, socket: join(runDir, 'operator.sock') };
}

export interface Harness {
  readonly key: Uint8Array;
  readonly queue: ApprovalQueue;
  readonly bus: EventBus;
  readonly server: Awaited<ReturnType<typeof startOperatorServer>>;
  readonly socket: string;
  readonly notices: OperatorNotice[];
  readonly locks: number[];
  close(): Promise<void>;
}

export async function startHarness(
  t: { after: (fn: () => unknown) => void },
  over: Partial<OperatorServerOptions> & { socket?: string; operatorName?: string; onLock?: () => void } = {},
): Promise<Harness> {
  const socket = over.socket ?? tempRun(t).socket;
  const key = new Uint8Array(randomBytes(32));
  const queue = new ApprovalQueue(systemClock);
  const bus = new EventBus(systemClock);
  queue.subscribe((e) => {
    if (e.type === 'added') bus.emit({ type: 'approval.added', card: e.card });
    else bus.emit({ type: 'approval.resolved', id: e.id, decision: e.decision });
  });
  const notices: OperatorNotice[] = [];
  const locks: number[] = [];
  const backend = createBackend({
    queue,
    grants: new GrantStore(),
    journals: null,
    operatorName: over.operatorName ?? 'operator-cli',
    live: new Map(),
    status: () => ({
      pid: process.pid,
      locked: false,
      lock_reason: null,
      started_at: '2026-01-01T00:00:00.000Z',
      catalog: { digest: 'd', sequence: 1, accepted_at: null, tools: 0 },
      catalog_pending: false,
      approval_timeout_seconds: 120,
      vault_kdf: { opslimit: 3, memlimit: 268435456, below_floor: false },
    }),
    catalogPending: () => null,
    lock: () => {
      locks.push(locks.length);
      over.onLock?.();
    },
  });
  const { operatorName: _n, onLock: _l, ...rest } = over;
  const server = await startOperatorServer({
    socketPath: socket,
    key: () => key,
    backend,
    bus,
    failureDelayMs: 20,
    onNotice: (n) => notices.push(n),
    ...rest,
  });
  t.after(() => server.close());
  return { key, queue, bus, server, socket, notices, locks, close: () => server.close() };
}

/** Splits a socket's input into lines, as a queue the test can await. */
export class Lines {
  readonly #buf: string[] = [];
  readonly #waiters: ((l: string | null) => void)[] = [];
  #rest = '';
  #ended = false;

  constructor(sock: Socket) {
    sock.setEncoding('utf8');
    sock.on('data', (d: string) => {
      const parts = (this.#rest + d).split('\n');
      this.#rest = parts.pop() ?? '';
      for (const p of parts) this.#deliver(p);
    });
    sock.on('close', () => {
      this.#ended = true;
      for (const w of this.#waiters.splice(0)) w(null);
    });
    sock.on('error', () => undefined);
  }

  #deliver(l: string): void {
    const w = this.#waiters.shift();
    if (w !== undefined) w(l);
    else this.#buf.push(l);
  }

  /** The next line, or null once the peer closed. */
  next(timeoutMs = 3_000): Promise<string | null> {
    const l = this.#buf.shift();
    if (l !== undefined) return Promise.resolve(l);
    if (this.#ended) return Promise.resolve(null);
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('no line in time')), timeoutMs);
      this.#waiters.push((x) => {
        clearTimeout(t);
        resolve(x);
      });
    });
  }

  /** Every remaining line until the peer closes. */
  async rest(timeoutMs = 3_000): Promise<string[]> {
    const out: string[] = [];
    for (;;) {
      const l = await this.next(timeoutMs);
      if (l === null) return out;
      out.push(l);
    }
  }
}

export function rawConnect(path: string): Promise<{ sock: Socket; lines: Lines }> {
  return new Promise((resolve, reject) => {
    const sock = connect(path);
    const lines = new Lines(sock);
    sock.once('connect', () => resolve({ sock, lines }));
    sock.once('error', reject);
  });
}

/** Performs the client handshake by hand and returns the client's codec, for crafting frames. */
export async function rawSession(path: string, key: Uint8Array): Promise<{ sock: Socket; lines: Lines; codec: FrameCodec }> {
  const { sock, lines } = await rawConnect(path);
  const hello = JSON.parse((await lines.next()) ?? 'null');
  const ns = decodeB64u(hello.nonce)!;
  const nc = newNonce();
  sock.write(`${JSON.stringify({ t: 'auth', v: 2, role: 'operator', nonce: encodeB64u(nc), proof: encodeB64u(clientProof(key, ns, nc, 'operator')) })}\n`);
  const welcome = JSON.parse((await lines.next()) ?? 'null');
  assert.equal(welcome.t, 'welcome');
  return { sock, lines, codec: new FrameCodec(sessionKey(key, ns, nc, 'operator'), 'client') };
}

/** A server message as the tests read it (fields absent on other kinds). */
export interface ServerBody {
  kind: string;
  id: number | null;
  ok: boolean;
  error: { code: string; message: string };
  result: unknown;
}

/** Opens a server frame with the client codec and parses its body. */
export function openBody(codec: FrameCodec, line: string | null): ServerBody {
  assert.ok(line !== null, 'the server closed instead of answering');
  const o = codec.open(line);
  assert.ok(o.ok, 'the server frame must verify');
  return JSON.parse(o.body);
}

export interface RelayHooks {
  /** Rewrites a client→server line; return the lines to forward (none = drop). */
  c2s?: (line: string, index: number) => string[];
  s2c?: (line: string, index: number) => string[];
}

export interface Relay {
  readonly path: string;
  readonly c2sSeen: string[];
  /** Writes a line to the server side of the most recent connection. */
  inject(line: string): void;
  close(): Promise<void>;
}

/** A same-user impostor: listens on `path` and relays every connection to `upstream`, line by line. */
export async function startRelay(path: string, upstream: string, hooks: RelayHooks = {}): Promise<Relay> {
  const c2sSeen: string[] = [];
  const socks = new Set<Socket>();
  let lastUp: Socket | null = null;
  const pipeLines = (from: Socket, to: Socket, hook: ((l: string, i: number) => string[]) | undefined, seen?: string[]): void => {
    let rest = '';
    let i = 0;
    from.setEncoding('utf8');
    from.on('data', (d: string) => {
      const parts = (rest + d).split('\n');
      rest = parts.pop() ?? '';
      for (const p of parts) {
        seen?.push(p);
        for (const out of hook === undefined ? [p] : hook(p, i)) to.write(`${out}\n`);
        i++;
      }
    });
    from.on('close', () => to.destroy());
    from.on('error', () => to.destroy());
  };
  const server: Server = createServer((down) => {
    const up = connect(upstream);
    lastUp = up;
    socks.add(down).add(up);
    pipeLines(down, up, hooks.c2s, c2sSeen);
    pipeLines(up, down, hooks.s2c);
  });
  await new Promise<void>((r) => server.listen(path, r));
  return {
    path,
    c2sSeen,
    inject: (line) => lastUp?.write(`${line}\n`),
    close: () =>
      new Promise<void>((r) => {
        for (const s of socks) s.destroy();
        server.close(() => r());
      }),
  };
}

export async function rejectsWith(p: Promise<unknown>, code: ErrorCode, message?: RegExp): Promise<PosternError> {
  let caught: unknown;
  try {
    await p;
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof PosternError, `expected PosternError ${code}, got ${String(caught)}`);
  assert.equal(caught.code, code, `expected ${code}, got ${caught.code}: ${caught.message}`);
  if (message !== undefined) assert.match(caught.message, message);
  return caught;
}

/** Fails if `s` holds anything a terminal would interpret or hide (newlines allowed when `lines`). */
export function assertInert(s: string, lines = false): void {
  for (const ch of lines ? s.replace(/\n/g, '') : s) {
    const cp = ch.codePointAt(0) ?? 0;
    const bad = cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp === 0x2028 || cp === 0x2029 || /\p{Cf}/u.test(ch);
    assert.ok(!bad, `raw U+${cp.toString(16)} in ${JSON.stringify(s.slice(0, 200))}`);
  }
}

/** Waits until `pred` holds (polling, with waitFor), failing with `what` after `timeoutMs`. */
export function until(pred: () => boolean, timeoutMs = 10_000, what = 'a condition polled with until()'): Promise<void> {
  return waitFor(pred, what, { timeoutMs, everyMs: 5 });
}
