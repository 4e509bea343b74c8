/**
 * Malformed and hostile agent traffic, end to end (THREATS 14, and the agent
 * side of 2 and 12): oversized, deeply nested and `__proto__` arguments;
 * malformed JSON, invalid UTF-8, duplicate ids and floods spoken straight to
 * the agent socket and through the `postern mcp` shim; approval-shaped data
 * from the agent and forged operator frames; socket permissions; a second
 * daemon on the same home; both MCP protocol eras. Every rejected path
 * asserts that the loopback service's request log did not grow. One
 * installation for the whole file.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import { childEnv, CLI } from '../helpers/cli.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { openJournals } from '../../src/journal/index.js';
import { waitFor } from '../helpers/wait.js';

const TOKEN = canary('tok');
const key = (): string => `key-${randomBytes(8).toString('hex')}`;
const b64u32 = (): string => randomBytes(32).toString('base64url');

type Json = Record<string, unknown>;
type Result = { isError?: boolean; structuredContent?: Record<string, unknown>; content?: { type: string; text?: string }[] };

function catalogFor(origin: string) {
  const obj = (props: Record<string, unknown>, required: string[] = []) => ({ type: 'object', properties: props, required });
  return {
    targets: { local: { http: { origin, credential: 'api-token', auth: 'bearer', allow_private: true } } },
    tools: {
      echo_read: { description: 'Echo the request.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: obj({ q: { type: 'string', maxLength: 200 } }), http: { target: 'local', method: 'GET', path: '/echo', query: { q: '{q}' } } }] },
      post_text: {
        description: 'Post a text.',
        effect: 'write',
        approval: 'none',
        revisions: [{ revision: 1, input: obj({ text: { type: 'string', maxLength: 1_048_576 } }, ['text']), http: { target: 'local', method: 'POST', path: '/echo', body: { text: '{text}' } } }],
      },
      delete_item: {
        description: 'Delete an item.',
        effect: 'destructive',
        approval: 'per-call',
        revisions: [{ revision: 1, input: obj({ id: { type: 'string', pattern: '^[a-z0-9]{1,20}$' }, comment: { type: 'string', maxLength: 500 } }, ['id', 'comment']), http: { target: 'local', method: 'DELETE', path: '/echo', query: { id: '{id}', comment: '{comment}' } } }],
      },
    },
  };
}

/** Newline-delimited JSON-RPC spoken by hand over a socket or a child's stdio. */
class RawPeer {
  readonly messages: Json[] = [];
  #buf = Buffer.alloc(0);
  #closed = false;
  constructor(
    private readonly out: NodeJS.WritableStream,
    input: NodeJS.ReadableStream,
  ) {
    input.on('data', (d: Buffer) => {
      this.#buf = Buffer.concat([this.#buf, d]);
      let nl: number;
      while ((nl = this.#buf.indexOf(0x0a)) >= 0) {
        const line = this.#buf.subarray(0, nl).toString('utf8');
        this.#buf = this.#buf.subarray(nl + 1);
        try {
          this.messages.push(JSON.parse(line) as Json);
        } catch {
          this.messages.push({ unparseable: line });
        }
      }
    });
    input.on('close', () => (this.#closed = true));
    input.on('end', () => (this.#closed = true));
  }
  get closed(): boolean {
    return this.#closed;
  }
  send(m: Json | string | Buffer): void {
    this.out.write(Buffer.isBuffer(m) ? m : typeof m === 'string' ? m : `${JSON.stringify(m)}\n`);
  }
  async reply(id: unknown, ms = 10_000): Promise<Json> {
    const find = (): Json | undefined => this.messages.find((m) => m['id'] === id && m['method'] === undefined);
    await waitFor(() => find() !== undefined, () => `an answer to id ${JSON.stringify(id)}; got ${JSON.stringify(this.messages).slice(0, 2000)}`, { timeoutMs: ms, everyMs: 20 });
    return find()!;
  }
  async initialize(): Promise<void> {
    this.send({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw-peer', version: '1.0.0' } } });
    const r = await this.reply('init');
    assert.ok(r['result'] !== undefined, JSON.stringify(r));
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }
}

async function rawAgentSocket(path: string): Promise<{ peer: RawPeer; sock: Socket }> {
  const sock = await new Promise<Socket>((resolve, reject) => {
    const s = connect(path);
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
  sock.on('error', () => undefined);
  return { peer: new RawPeer(sock, sock), sock };
}

/** A real `postern mcp` shim, driven by hand over its stdio. */
function rawShim(home: string): { peer: RawPeer; child: ChildProcessWithoutNullStreams } {
  const child = spawn(process.execPath, [CLI, 'mcp'], { env: childEnv(home), stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdout.on('error', () => undefined);
  child.stdin.on('error', () => undefined);
  return { peer: new RawPeer(child.stdin, child.stdout), child };
}

function nested(depth: number): unknown {
  let v: unknown = 'bottom';
  for (let i = 0; i < depth; i++) v = { d: v };
  return v;
}

describe('daemon: malformed and hostile agent traffic', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agent: Client;
  let bystander: Client;

  before(async () => {
    ({ http, inst } = await httpFixture({ token: TOKEN, catalog: (_targets, target) => catalogFor(target.origin) }));
    agent = await inst.client();
    bystander = await inst.client({ name: 'bystander' });
  });

  after(async () => {
    inst.sb.assertNeverPrinted(TOKEN, 'the token');
    await inst.cleanup();
    await http.close();
  });

  const call = async (name: string, args: Record<string, unknown>, c: Client = agent, meta?: Json): Promise<Result> =>
    (await c.callTool({ name, arguments: args, ...(meta === undefined ? {} : { _meta: meta }) })) as Result;
  const agentSock = (): string => join(inst.sb.home, 'run', 'agent.sock');
  const operatorSock = (): string => join(inst.sb.home, 'run', 'operator.sock');

  /** The bystander session and the daemon still work. */
  async function stillServing(): Promise<void> {
    const before = http.requests.length;
    const r = await call('echo_read', { q: 'alive' }, bystander);
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(http.requests.length, before + 1);
    assert.equal(inst.daemon?.exitCode, null, 'the daemon is still running');
  }

  it('oversized and deeply nested arguments are REQUEST_TOO_LARGE; a __proto__ key is VALIDATION_FAILED; nothing is sent', async () => {
    const before = http.requests.length;
    let r = await call('post_text', { text: 'x'.repeat(300 * 1024), idempotency_key: key() });
    assert.equal(r.structuredContent?.['error_code'], 'REQUEST_TOO_LARGE', JSON.stringify(r.structuredContent));
    assert.equal(r.structuredContent?.['side_effect_started'], false);
    r = await call('post_text', { text: 'deep', data: nested(100), idempotency_key: key() });
    assert.equal(r.structuredContent?.['error_code'], 'REQUEST_TOO_LARGE', JSON.stringify(r.structuredContent));
    // An own "__proto__" key (JSON.parse makes it a plain key). Nested, the pipeline's admission refuses it
    // before the schema looks (so `data` needs no place in the schema).
    for (const text of ['{"text": "p", "data": {"__proto__": {"polluted": true}}}', '{"text": "p", "data": [{"constructor": {"prototype": {"polluted": true}}}]}', '{"text": "p", "constructor": 1}']) {
      const args = JSON.parse(text) as Json;
      args['idempotency_key'] = key();
      r = await call('post_text', args);
      assert.equal(r.structuredContent?.['error_code'], 'VALIDATION_FAILED', `${text}: ${JSON.stringify(r.structuredContent)}`);
    }
    // At the top level of the arguments the MCP SDK's schema copy would silently drop the key (and re-parent the
    // object to its value), so the daemon refuses the request before the SDK sees it: Invalid params, the tool
    // error in `data`. Neither the key nor its value may slip through: {"__proto__": {"text": …}} must not run.
    for (const text of ['{"__proto__": {"polluted": true}, "text": "p"}', '{"__proto__": {"text": "inherited"}}', '{"__proto__": 1, "text": "p"}', '{"__proto__": null, "text": "p"}']) {
      const args = JSON.parse(text) as Json;
      args['idempotency_key'] = key();
      const refusal = await call('post_text', args).then(
        (res) => ({ via: 'result', code: res.structuredContent?.['error_code'], started: res.structuredContent?.['side_effect_started'] }),
        (e: { code?: number; data?: Json }) => ({ via: `rpc ${String(e.code)}`, code: e.data?.['error_code'], started: e.data?.['side_effect_started'] }),
      );
      assert.equal(refusal.code, 'VALIDATION_FAILED', `${text}: ${JSON.stringify(refusal)}`);
      assert.ok(refusal.via === 'result' || refusal.via === 'rpc -32602', refusal.via);
      assert.equal(refusal.started, false);
    }
    assert.equal(({} as Json)['polluted'], undefined);
    // Refused before the SDK or not, each refusal is journaled with its raw arguments, key included.
    const j = openJournals(join(inst.sb.home, 'journal'), { readonly: true });
    try {
      const rejected = j.activity.listCalls({ tool: 'post_text', error_code: 'VALIDATION_FAILED', limit: 100 });
      const screened = rejected.filter((c) => c.call.decision_path.includes('screen:proto_key'));
      assert.equal(screened.length, 4, JSON.stringify(rejected.map((c) => c.call.decision_path)));
      for (const c of screened) assert.ok(Object.prototype.hasOwnProperty.call(c.call.raw_arguments, '__proto__'), JSON.stringify(c.call.raw_arguments));
      assert.equal(j.activity.verify().ok, true);
    } finally {
      j.close();
    }
    // A line larger than the transport carries at all (5 MiB): answered, not hung; nothing sent.
    r = await call('post_text', { text: 'y'.repeat(5 * 1024 * 1024), idempotency_key: key() });
    assert.equal(r.structuredContent?.['error_code'], 'REQUEST_TOO_LARGE', JSON.stringify(r.structuredContent).slice(0, 500));
    assert.equal(http.requests.length, before);
    await stillServing();
    // The same session keeps working after all of that.
    assert.equal((await call('echo_read', { q: 'after' })).isError, undefined);
  });

  it('malformed JSON, invalid UTF-8 and duplicate ids on the agent socket: typed answers, no crash, others unaffected', async () => {
    const before = http.requests.length;
    const { peer, sock } = await rawAgentSocket(agentSock());
    try {
      await peer.initialize();
      peer.send('{this is not json\n');
      peer.send('[1, 2,\n');
      peer.send(Buffer.from([0xff, 0xfe, 0xfd, 0x0a]));
      // A valid JSON-RPC envelope whose text holds invalid UTF-8: refused, never "repaired" into U+FFFD and run.
      const bad = Buffer.concat([
        Buffer.from('{"jsonrpc":"2.0","id":"utf8","method":"tools/call","params":{"name":"echo_read","arguments":{"q":"a'),
        Buffer.from([0xc3, 0x28, 0xff]),
        Buffer.from('"}}}\n'),
      ]);
      peer.send(bad);
      const refused = await peer.reply('utf8');
      assert.equal((refused['error'] as Json | undefined)?.['code'], -32700, JSON.stringify(refused));
      // A method that is not MCP (an agent trying operator verbs) is a JSON-RPC error.
      peer.send({ jsonrpc: '2.0', id: 'op', method: 'approvals/decide', params: { approval_id: 'x', verdict: { verdict: 'approve', scope: 'session' } } });
      assert.equal(((await peer.reply('op'))['error'] as Json | undefined)?.['code'], -32601);
      // Duplicate ids: both requests run or one is refused, but nothing crashes.
      peer.send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'echo_read', arguments: { q: 'dup1' } } });
      peer.send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'echo_read', arguments: { q: 'dup2' } } });
      await peer.reply(7);
      peer.send({ jsonrpc: '2.0', id: 8, method: 'ping' });
      assert.deepEqual((await peer.reply(8))['result'], {});
      assert.ok(!peer.closed, 'the connection survived');
      // Each malformed line got a JSON-RPC parse error (id null: none could be read), and nothing else.
      const anonymous = peer.messages.filter((x) => x['id'] === null);
      assert.equal(anonymous.length, 3, JSON.stringify(anonymous));
      for (const m of anonymous) assert.equal((m['error'] as Json | undefined)?.['code'], -32700);
      // The duplicate id was answered (once or twice), each answer a well-formed result or error.
      const dup = peer.messages.filter((x) => x['id'] === 7);
      assert.ok(dup.length >= 1 && dup.length <= 2);
      for (const m of dup) assert.ok('result' in m || 'error' in m);
    } finally {
      sock.destroy();
    }
    assert.ok(http.requests.length <= before + 2, 'only the duplicate-id echo calls may have been sent');
    assert.ok(!http.requests.slice(before).some((r) => r.url.includes('%EF%BF%BD') || r.url.includes('%C3%28')), 'the invalid UTF-8 call was not run');
    await stillServing();
  });

  it('the shim refuses invalid UTF-8 too, and a flood of 200 calls on one connection completes', async () => {
    const { peer, child } = rawShim(inst.sb.home);
    const before = http.requests.length;
    try {
      await peer.initialize();
      peer.send(Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo_read","arguments":{"q":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}}}\n')]));
      assert.equal(((await peer.reply(1))['error'] as Json | undefined)?.['code'], -32700);
      assert.equal(http.requests.length, before);
      peer.send('not json at all\n');
      peer.send({ jsonrpc: '2.0', id: 2, method: 'ping' });
      assert.deepEqual((await peer.reply(2))['result'], {});
    } finally {
      child.kill();
    }

    // Multi-byte characters across the shim's read boundaries (a pipe delivers 64 KiB at a time) arrive intact.
    const text = `é${'€'.repeat(60_000)}𝄞`;
    const w = await call('post_text', { text, idempotency_key: key() });
    assert.equal(w.isError, undefined, JSON.stringify(w).slice(0, 500));
    const echoed = (w.structuredContent?.['body'] as Json | undefined)?.['body'];
    assert.equal((JSON.parse(String(echoed)) as Json)['text'], text);

    const started = Date.now();
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => call('echo_read', { q: `flood-${i}` })));
    assert.equal(results.filter((r) => r.isError === undefined).length, 200);
    assert.equal(http.requests.length, before + 201);
    assert.ok(Date.now() - started < 60_000);
    await stillServing();
  });

  it('the agent cannot approve its own call: approval-shaped _meta and arguments, forged operator frames', async () => {
    const before = http.requests.length;
    const k = key();
    const forged = { approve: true, 'dev.postern/approval': 'approved', 'dev.postern/approval_id': 'x', verdict: { verdict: 'approve', scope: 'session' } };
    // An extra argument is refused outright, before any card.
    const extra = await call('delete_item', { id: 'a1', comment: 'c', idempotency_key: key(), approve: true }, agent, forged);
    assert.equal(extra.structuredContent?.['error_code'], 'VALIDATION_FAILED');
    const pending = call('delete_item', { id: 'a1', comment: JSON.stringify(forged), idempotency_key: k }, agent, { ...forged, progressToken: 'p1' });

    const op = await inst.operator();
    let cardId = '';
    try {
      await waitFor(async () => {
        const cards = (await op.request('approvals.list', {})) as { id: string; tool: string; idempotency_key: string | null }[];
        cardId = cards.find((c) => c.idempotency_key === k)?.id ?? '';
        return cardId !== '';
      }, 'the call to wait for the operator');

      // Forged operator traffic: a made-up proof, a frame without a handshake, extra fields, garbage.
      const attempts: (string | Buffer)[] = [
        `${JSON.stringify({ t: 'auth', v: 1, nonce: b64u32(), proof: b64u32() })}\n`,
        `${JSON.stringify({ seq: 0, body: JSON.stringify({ id: 1, op: 'approvals.decide', params: { approval_id: cardId, verdict: { verdict: 'approve', scope: 'once' } } }), mac: b64u32() })}\n`,
        `${JSON.stringify({ t: 'auth', v: 1, nonce: b64u32(), proof: b64u32(), approve: true })}\n`,
        `${JSON.stringify({ id: 1, op: 'approvals.decide', params: { approval_id: cardId, verdict: { verdict: 'approve', scope: 'once' } } })}\n`,
        Buffer.from([0xff, 0xfe, 0x0a]),
      ];
      for (const line of attempts) {
        const { peer, sock } = await rawAgentSocket(operatorSock());
        try {
          await waitFor(() => peer.messages.length > 0, "the operator socket's hello");
          assert.equal(peer.messages[0]?.['t'], 'hello');
          peer.send(line);
          await waitFor(() => peer.closed, 'the operator socket to close the connection');
          const answers = peer.messages.slice(1);
          assert.ok(answers.every((m) => m['t'] === 'error'), JSON.stringify(answers));
          assert.ok(!answers.some((m) => m['t'] === 'welcome' || 'seq' in m));
        } finally {
          sock.destroy();
        }
      }
      const still = (await op.request('approvals.list', {})) as { id: string }[];
      assert.ok(still.some((c) => c.id === cardId), 'the approval is still pending');
    } finally {
      op.close();
    }
    const r = await pending;
    assert.equal(r.structuredContent?.['error_code'], 'APPROVAL_TIMEOUT', JSON.stringify(r.structuredContent));
    assert.equal(r.structuredContent?.['side_effect_started'], false);
    assert.equal(http.requests.length, before, 'nothing reached the target');
  });

  it('sockets are 0600 in a 0700 directory; a second daemon on the same home fails with DAEMON_RUNNING', async () => {
    const run = await stat(join(inst.sb.home, 'run'));
    assert.ok(run.isDirectory());
    assert.equal(run.mode & 0o777, 0o700);
    for (const p of [agentSock(), operatorSock()]) {
      const st = await stat(p);
      assert.ok(st.isSocket(), p);
      assert.equal(st.mode & 0o777, 0o600, p);
    }
    const second = spawn(process.execPath, [CLI, 'daemon', '--passphrase-file', inst.passFile], {
      env: childEnv(inst.sb.home),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    second.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    second.stderr.on('data', (d: Buffer) => (err += d.toString('utf8')));
    const code = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => {
        second.kill('SIGKILL');
        resolve(-1);
      }, 30_000);
      second.once('exit', (c) => {
        clearTimeout(timer);
        resolve(c);
      });
    });
    inst.sb.transcript.push(out, err);
    assert.equal(code, 1, err);
    assert.equal(out, '');
    assert.equal(err.trimEnd().split('\n').length, 1, err);
    assert.match(err, /DAEMON_RUNNING/);
    // The first daemon still serves, on the same sockets.
    await stillServing();
    assert.equal((await stat(agentSock())).mode & 0o777, 0o600);
  });

  it('both MCP protocol eras list and call tools: 2026-07-28 pinned and the 2025-11-25 default', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp'],
      env: childEnv(inst.sb.home),
      stderr: 'pipe',
    });
    const modern = new Client({ name: 'modern-agent', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await modern.connect(transport);
    try {
      assert.equal(modern.getNegotiatedProtocolVersion(), '2026-07-28');
      assert.equal(agent.getNegotiatedProtocolVersion(), '2025-11-25');
      for (const c of [modern, agent]) {
        const before = http.requests.length;
        const { tools } = await c.listTools();
        assert.deepEqual(tools.map((t) => t.name).sort(), ['delete_item', 'echo_read', 'post_text', 'postern_call_status']);
        const r = await call('echo_read', { q: 'era' }, c);
        assert.equal(r.isError, undefined, JSON.stringify(r));
        assert.equal(http.requests.length, before + 1);
        const w = await call('post_text', { text: 'era write', idempotency_key: key() }, c);
        assert.equal(w.isError, undefined, JSON.stringify(w));
        const bad = await call('post_text', { text: 'x'.repeat(300 * 1024), idempotency_key: key() }, c);
        assert.equal(bad.structuredContent?.['error_code'], 'REQUEST_TOO_LARGE');
        const proto = JSON.parse('{"__proto__": {"text": "inherited"}}') as Json;
        proto['idempotency_key'] = key();
        await assert.rejects(call('post_text', proto, c), (e: { code?: number; data?: Json }) => e.code === -32602 && e.data?.['error_code'] === 'VALIDATION_FAILED');
        assert.equal(http.requests.length, before + 2);
      }
    } finally {
      await modern.close();
    }
  });
});
