/**
 * Malformed JSON-RPC envelopes always get an answer (issue 8 item 9), and
 * the same one daemon or no daemon (docs/errors.md): unparseable lines are
 * -32700, a `tools/call` without a string name or with arguments that are
 * not an object is -32602. The SDK drops a request whose `params` is an array or `null` (or a string, a
 * number, a boolean; or whose `_meta` is not an object; or whose id is
 * unusable) without a word. Each variant of the corpus is spoken by hand —
 * straight to the daemon's agent socket, through the built `postern mcp`
 * with the daemon up, and through `postern mcp` with no daemon at all — and
 * must be answered with the same JSON-RPC error; none reaches the target,
 * and the session goes on. A notification is never answered: the ping sent
 * after it is the next message to arrive.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { childEnv, CLI } from '../helpers/cli.js';
import type { Installation } from '../helpers/daemon.js';

type Json = Record<string, unknown>;

/** Newline-delimited JSON-RPC spoken by hand; every wait is on the next message. */
class Peer {
  readonly messages: Json[] = [];
  #buf = '';
  #waiters: (() => void)[] = [];
  constructor(
    private readonly out: NodeJS.WritableStream,
    input: NodeJS.ReadableStream,
    readonly close: () => void,
  ) {
    input.on('data', (d: Buffer) => {
      this.#buf += d.toString('utf8');
      let nl: number;
      while ((nl = this.#buf.indexOf('\n')) >= 0) {
        const line = this.#buf.slice(0, nl);
        this.#buf = this.#buf.slice(nl + 1);
        this.messages.push(JSON.parse(line) as Json);
        for (const w of this.#waiters.splice(0)) w();
      }
    });
  }
  send(m: unknown): void {
    this.out.write(typeof m === 'string' || Buffer.isBuffer(m) ? m : `${JSON.stringify(m)}\n`);
  }
  /** The message at `index` (0-based), once it has arrived. */
  async at(index: number): Promise<Json> {
    while (this.messages.length <= index) await new Promise<void>((r) => this.#waiters.push(r));
    return this.messages[index]!;
  }
  /** Sends `m` and returns the next message, which must be its answer. */
  async exchange(m: unknown): Promise<Json> {
    const n = this.messages.length;
    this.send(m);
    return this.at(n);
  }
  async initialize(): Promise<void> {
    const r = await this.exchange({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw-peer', version: '1.0.0' } } });
    assert.ok(r['result'] !== undefined, JSON.stringify(r));
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }
}

const env = (home: string) => (childEnv(home));

async function socketPeer(path: string): Promise<Peer> {
  const sock = await new Promise<Socket>((resolve, reject) => {
    const s = connect(path);
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
  sock.on('error', () => undefined);
  return new Peer(sock, sock, () => sock.destroy());
}

function shimPeer(home: string): Peer {
  const child = spawn(process.execPath, [CLI, 'mcp'], { env: env(home), stdio: ['pipe', 'pipe', 'ignore'] });
  child.stdin.on('error', () => undefined);
  return new Peer(child.stdin, child.stdout, () => child.kill());
}

const call = (params: unknown) => ({ method: 'tools/call', params });
const goodCall = (extra: Json) => ({ name: 'echo_read', arguments: { q: 'never' }, ...extra });

/** Requests the SDK would drop: answered -32602 with their own id. */
const invalidParams: [string, Json][] = [
  ['tools/list, params an array', { method: 'tools/list', params: [] }],
  ['tools/list, params null', { method: 'tools/list', params: null }],
  ['tools/list, params a string', { method: 'tools/list', params: 'all' }],
  ['tools/list, params a number', { method: 'tools/list', params: 1 }],
  ['tools/list, params a boolean', { method: 'tools/list', params: true }],
  ['tools/call, params an array', call([{ name: 'echo_read', arguments: {} }])],
  ['tools/call, params null', call(null)],
  ['tools/call, params a string', call('echo_read')],
  ['tools/call, params a number', call(42)],
  ['tools/call, _meta an array', call(goodCall({ _meta: [] }))],
  ['tools/call, _meta null', call(goodCall({ _meta: null }))],
  ['tools/call, progress token an object', call(goodCall({ _meta: { progressToken: {} } }))],
  ['tools/call, progress token fractional', call(goodCall({ _meta: { progressToken: 1.5 } }))],
  ['ping, params an array', { method: 'ping', params: [] }],
  ['ping, params null', { method: 'ping', params: null }],
];

/** Requests whose tools/call params are an object but wrong: -32602 by the screen, daemon or no daemon. */
const badCallParams: [string, Json][] = [
  ['tools/call, params missing', { method: 'tools/call' }],
  ['tools/call, no name', call({ arguments: {} })],
  ['tools/call, name a number', call({ name: 5, arguments: {} })],
  ['tools/call, arguments an array', call({ name: 'echo_read', arguments: ['q'] })],
  ['tools/call, arguments null', call({ name: 'echo_read', arguments: null })],
  ['tools/call, arguments a string', call({ name: 'echo_read', arguments: 'q=x' })],
];

/** Messages that are not valid requests at all: answered -32600 (id null when the id is unusable). */
const invalidRequests: [string, unknown, unknown][] = [
  ['id null', { jsonrpc: '2.0', id: null, method: 'tools/list', params: {} }, null],
  ['id an object', { jsonrpc: '2.0', id: { x: 1 }, method: 'tools/list' }, null],
  ['id fractional', { jsonrpc: '2.0', id: 1.5, method: 'tools/list' }, null],
  ['id a boolean', { jsonrpc: '2.0', id: true, method: 'tools/call', params: goodCall({}) }, null],
  ['a batch', [{ jsonrpc: '2.0', id: 'b1', method: 'tools/list' }], null],
  ['an empty batch', [], null],
  ['a number', 5, null],
  ['jsonrpc 1.0', { jsonrpc: '1.0', id: 'v1', method: 'tools/list' }, 'v1'],
  ['method a number', { jsonrpc: '2.0', id: 'm1', method: 7 }, 'm1'],
];

/** Lines that are not JSON, or not UTF-8: -32700, with the id a lenient reading finds. */
const unparseable: [string, Buffer, unknown][] = [
  ['malformed JSON', Buffer.from('{"jsonrpc":"2.0","id":"j1","method":\n'), null],
  ['not JSON at all', Buffer.from('tools/list please\n'), null],
  ['invalid UTF-8 in a call', Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":"u1","method":"tools/call","params":{"name":"echo_read","arguments":{"q":"'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}}}\n')]), 'u1'],
  ['invalid UTF-8 in a listing', Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":"u2","method":"tools/list","params":{"cursor":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}}\n')]), 'u2'],
];

/** Notifications with bad params: never answered. */
const badNotifications: Json[] = [
  { jsonrpc: '2.0', method: 'notifications/cancelled', params: null },
  { jsonrpc: '2.0', method: 'notifications/initialized', params: [] },
  { jsonrpc: '2.0', method: 'notifications/progress', params: 'x' },
];

describe('malformed JSON-RPC envelopes are answered, never dropped', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let emptyHome: string;

  before(async () => {
    const obj = { type: 'object', properties: { q: { type: 'string', maxLength: 50 } }, required: [] };
    ({ http, inst } = await httpFixture({ token: canary('tok'), tools: { echo_read: { description: 'Echo.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: obj, http: { target: 'local', method: 'GET', path: '/echo', query: { q: '{q}' } } }] } } }));
    emptyHome = await mkdtemp(join(tmpdir(), 'postern-nodaemon-'));
  });

  after(async () => {
    await inst.cleanup();
    await http.close();
    await rm(emptyHome, { recursive: true, force: true });
  });

  const routes: [string, () => Promise<Peer>][] = [
    ['the agent socket', () => socketPeer(join(inst.sb.home, 'run', 'agent.sock'))],
    ['postern mcp, daemon up', () => Promise.resolve(shimPeer(inst.sb.home))],
    ['postern mcp, no daemon', () => Promise.resolve(shimPeer(emptyHome))],
  ];

  for (const [route, open] of routes) {
    it(`${route}: every variant gets its JSON-RPC error; nothing reaches the target; the session goes on`, { timeout: 120_000 }, async () => {
      const peer = await open();
      const before = http.requests.length;
      try {
        await peer.initialize();
        let n = 0;
        for (const [what, m] of invalidParams) {
          const id = `p${n++}`;
          const r = await peer.exchange({ jsonrpc: '2.0', id, ...m });
          assert.equal(r['id'], id, `${what}: ${JSON.stringify(r)}`);
          assert.equal((r['error'] as Json | undefined)?.['code'], -32602, `${what}: ${JSON.stringify(r)}`);
        }
        for (const [what, m] of badCallParams) {
          const id = `c${n++}`;
          const r = await peer.exchange({ jsonrpc: '2.0', id, ...m });
          assert.equal(r['id'], id, `${what}: ${JSON.stringify(r)}`);
          assert.equal((r['error'] as Json | undefined)?.['code'], -32602, `${what}: ${JSON.stringify(r)}`);
        }
        for (const [what, bytes, id] of unparseable) {
          const r = await peer.exchange(bytes);
          assert.equal(r['id'], id, `${what}: ${JSON.stringify(r)}`);
          assert.equal((r['error'] as Json | undefined)?.['code'], -32700, `${what}: ${JSON.stringify(r)}`);
        }
        for (const [what, m, id] of invalidRequests) {
          const r = await peer.exchange(m);
          assert.equal(r['id'], id, `${what}: ${JSON.stringify(r)}`);
          assert.equal((r['error'] as Json | undefined)?.['code'], -32600, `${what}: ${JSON.stringify(r)}`);
        }
        // A notification gets no answer: the answer to the ping after it is the next message.
        for (const m of badNotifications) peer.send(m);
        const pong = await peer.exchange({ jsonrpc: '2.0', id: 'alive', method: 'ping' });
        assert.equal(pong['id'], 'alive', JSON.stringify(pong));
        assert.deepEqual(pong['result'], {});
        if (!route.includes('no daemon')) {
          const ok = await peer.exchange({ jsonrpc: '2.0', id: 'works', method: 'tools/call', params: goodCall({}) });
          assert.equal((ok['result'] as Json | undefined)?.['isError'], undefined, JSON.stringify(ok));
          assert.equal(http.requests.length, before + 1, 'only the well-formed call reached the target');
        } else {
          assert.equal(http.requests.length, before);
        }
      } finally {
        peer.close();
      }
    });
  }
});
