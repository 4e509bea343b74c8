// @subject time: recovery of interrupted calls, journal times (run again a year ahead by .ci/run)
/**
 * Idempotency, crashes and a failing journal, end to end (THREATS 8, 9, 10;
 * DESIGN §6.5): the official MCP client over real stdio (`postern mcp`) → the
 * real daemon → a loopback HTTP service with an append-only request log. The
 * daemon is killed with SIGKILL mid-call and restarted on the same home; the
 * journal is locked from this process. Every rejected path asserts that the
 * service's log did not grow. One installation for the whole file (every vault
 * KDF costs seconds).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import { childEnv, CLI, encodingsOf } from '../helpers/cli.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { waitFor } from '../helpers/wait.js';
import { openJournals, type CallView } from '../../src/journal/index.js';

const TOKEN = canary('tok');
const key = (): string => `key-${randomBytes(8).toString('hex')}`;

type Result = { isError?: boolean; structuredContent?: Record<string, unknown>; content?: { type: string; text?: string }[] };

const obj = (props: Record<string, unknown>, required: string[] = []) => ({ type: 'object', properties: props, required });
const note = obj({ title: { type: 'string', maxLength: 100 } }, ['title']);

/** A write tool that POSTs the title to `path` on `target`. */
const write = (description: string, approval: 'none' | 'per-call', target: string, path: string) => ({
  description,
  effect: 'write',
  approval,
  revisions: [{ revision: 1, input: note, http: { target, method: 'POST', path, body: { title: '{title}' } } }],
});

function catalogFor(origin: string, tlsOrigin: string) {
  return {
    targets: {
      local: { http: { origin, credential: 'api-token', auth: 'bearer', allow_private: true, idempotency_header: true } },
      // Accepts TCP and never answers the TLS handshake: the intent is committed, nothing HTTP is ever sent.
      stalled_tls: { http: { origin: tlsOrigin, credential: 'api-token', auth: 'bearer', allow_private: true } },
    },
    tools: {
      quick_write: write('A write that needs no approval.', 'none', 'local', '/echo'),
      approved_write: write('A write that needs a per-call approval.', 'per-call', 'local', '/echo'),
      hanging_write: write('A write whose target may not answer.', 'none', 'local', '/hang'),
      reset_write: write('A write whose target drops the connection after reading the request.', 'none', 'local', '/reset'),
      stalled_write: write('A write whose TLS handshake never completes.', 'none', 'stalled_tls', '/never'),
    },
  };
}

/** A TCP listener that accepts and reads but never writes a byte. */
async function startSilentServer(): Promise<{ server: Server; port: number; received: () => number; first: () => Buffer; connections: () => number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  let bytes = 0;
  let head = Buffer.alloc(0);
  let conns = 0;
  const server = createServer((s) => {
    conns++;
    sockets.add(s);
    s.on('data', (d: Buffer) => {
      bytes += d.length;
      if (head.length < 16) head = Buffer.concat([head, d]).subarray(0, 16);
    });
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    received: () => bytes,
    first: () => head,
    connections: () => conns,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** An MCP client pinned to the 2026-07-28 era, over its own `postern mcp` shim. */
async function pinnedClient(home: string): Promise<Client> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], env: childEnv(home), stderr: 'pipe' });
  const c = new Client({ name: 'modern-agent', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await c.connect(transport);
  return c;
}

describe('daemon: idempotency, crash recovery and the journal', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let silent: Awaited<ReturnType<typeof startSilentServer>>;
  let agent: Client;
  /** While true, /hang never answers. */
  let hang = true;
  const keys = { parallel: key(), approved: key(), crashed: key(), stalled: key(), reset: key() };

  before(async () => {
    silent = await startSilentServer();
    ({ http, inst } = await httpFixture({
      token: TOKEN,
      routes: {
        '/hang': (req, res, body) => {
          if (hang) return; // the response is never written; close() destroys the socket
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ answered: true, body: body.toString('utf8') }));
        },
        // Reads the whole request, then drops the connection without a word.
        '/reset': (req) => void req.socket.destroy(),
      },
      catalog: (_targets, target) => catalogFor(target.origin, `https://127.0.0.1:${silent.port}`),
    }));
    agent = await inst.client();
  });

  after(async () => {
    inst.sb.assertNeverPrinted(TOKEN, 'the token');
    await inst.cleanup();
    await http.close();
    await silent.close();
  });

  /** Starts the daemon again on the same home (startDaemon waits for this child's own "ready"). */
  const restart = (): Promise<void> => inst.startDaemon();

  const call = async (name: string, args: Record<string, unknown>, c: Client = agent): Promise<Result> => (await c.callTool({ name, arguments: args })) as Result;
  const hits = (k: string): number => http.requests.filter((r) => r.headers.some(([n, v]) => n.toLowerCase() === 'idempotency-key' && v === k)).length;

  it('20 parallel calls with one key and no approval: one request, the rest replay or are in progress', async () => {
    const k = keys.parallel;
    const before = http.requests.length;
    const results = await Promise.all(Array.from({ length: 20 }, () => call('quick_write', { title: 'once', idempotency_key: k })));
    assert.equal(http.requests.length, before + 1, 'exactly one request reached the target');
    assert.equal(hits(k), 1);
    const fresh = results.filter((r) => r.isError === undefined && r.structuredContent?.['replayed'] !== true);
    const replays = results.filter((r) => r.isError === undefined && r.structuredContent?.['replayed'] === true);
    const busy = results.filter((r) => r.structuredContent?.['error_code'] === 'CALL_IN_PROGRESS');
    assert.equal(fresh.length, 1, JSON.stringify(results.map((r) => r.structuredContent?.['error_code'] ?? r.structuredContent?.['replayed'] ?? 'ok')));
    assert.equal(fresh.length + replays.length + busy.length, 20, 'nothing else happened');
    for (const r of busy) assert.equal(r.structuredContent?.['side_effect_started'], false);
    const original = fresh[0]!.structuredContent!;
    for (const r of replays) assert.deepEqual(r.structuredContent?.['body'], original['body'], 'a replay returns the same result');

    // Later, and from another session: a replay of the same result, still one request.
    const other = await inst.client({ name: 'second-agent' });
    const again = await call('quick_write', { title: 'once', idempotency_key: k }, other);
    assert.equal(again.structuredContent?.['replayed'], true);
    assert.deepEqual(again.structuredContent?.['body'], original['body']);
    const conflict = await call('quick_write', { title: 'other', idempotency_key: k }, other);
    assert.equal(conflict.structuredContent?.['error_code'], 'IDEMPOTENCY_KEY_CONFLICT');
    assert.equal(http.requests.length, before + 1);
    await other.close();
  });

  it('20 parallel calls with one key on a per-call tool: one approval card, one request', async () => {
    const k = keys.approved;
    const before = http.requests.length;
    const settled: Result[] = [];
    const all = Array.from({ length: 20 }, () => call('approved_write', { title: 'approve me', idempotency_key: k }).then((r) => (settled.push(r), r)));
    await waitFor(() => settled.length >= 19, '19 calls to be answered');
    const op = await inst.operator();
    try {
      const cards = (await op.request('approvals.list', {})) as { id: string; tool: string; idempotency_key: string | null }[];
      const mine = cards.filter((c) => c.tool === 'approved_write');
      assert.equal(mine.length, 1, 'exactly one pending approval card');
      assert.equal(mine[0]!.idempotency_key, k);
      for (const r of settled) assert.equal(r.structuredContent?.['error_code'], 'CALL_IN_PROGRESS', JSON.stringify(r.structuredContent));
      assert.equal(http.requests.length, before, 'nothing sent before the approval');
      await op.request('approvals.decide', { approval_id: mine[0]!.id, verdict: { verdict: 'approve', scope: 'once' } });
    } finally {
      op.close();
    }
    const results = await Promise.all(all);
    assert.equal(results.filter((r) => r.isError === undefined).length, 1);
    assert.equal(http.requests.length, before + 1);
    assert.equal(hits(k), 1);
    // A retry with the key after completion is a replay, with no new approval.
    const replay = await call('approved_write', { title: 'approve me', idempotency_key: k });
    assert.equal(replay.structuredContent?.['replayed'], true);
    assert.equal(http.requests.length, before + 1);
  });

  it('kill -9 after the intent (request sent, and not yet sent): outcome_unknown, never run again', async () => {
    const before = http.requests.length;
    // The request reaches the target, which never answers.
    const crashed = call('hanging_write', { title: 'in flight', idempotency_key: keys.crashed });
    // The intent is committed, a TCP connection is open, but the TLS handshake never completes: no HTTP request is written.
    const stalled = call('stalled_write', { title: 'not sent', idempotency_key: keys.stalled });
    await waitFor(() => http.requests.length === before + 1, 'the request to arrive at the target');
    await waitFor(() => silent.received() > 0, 'the TLS client hello to arrive');
    assert.equal(http.requests[before]?.url, '/hang');
    assert.equal(silent.first()[0], 0x16, 'only a TLS handshake record reached the stalled target, no HTTP');
    assert.equal(await inst.stopDaemon('SIGKILL'), null);

    // The in-flight calls end (the shim answers them when the daemon goes away); they do not hang.
    for (const r of await Promise.all([crashed, stalled])) {
      assert.equal(r.isError, true);
      assert.equal(r.structuredContent?.['error_code'], 'DAEMON_UNAVAILABLE');
      assert.equal(r.structuredContent?.['side_effect_started'], null, 'a call lost mid-flight may have started: unknown');
    }

    await restart();
    assert.match(inst.daemonLog, /interrupted: recorded as outcome_unknown/);
    hang = false;
    const connectionsBefore = silent.connections();
    for (const [tool, k] of [['hanging_write', keys.crashed], ['stalled_write', keys.stalled]] as const) {
      const title = tool === 'hanging_write' ? 'in flight' : 'not sent';
      const r = await call(tool, { title, idempotency_key: k });
      assert.equal(r.structuredContent?.['error_code'], 'OUTCOME_UNKNOWN', JSON.stringify(r.structuredContent));
      assert.equal(r.structuredContent?.['side_effect_started'], null, 'the effect is unknown, as postern_call_status says, never "not started"');
      const status = await call('postern_call_status', { idempotency_key: k });
      assert.equal(status.isError, undefined, JSON.stringify(status));
      assert.equal(status.structuredContent?.['status'], 'outcome_unknown');
      assert.equal(status.structuredContent?.['tool'], tool);
      assert.equal(status.structuredContent?.['side_effect_started'], null, 'after a crash the effect is unknown, never "not started"');
    }
    assert.equal(http.requests.length, before + 1, 'no second request at the target');
    assert.equal(silent.connections(), connectionsBefore, 'not even a new connection to the stalled target');

    // A new key runs normally.
    const fresh = await call('hanging_write', { title: 'in flight', idempotency_key: key() });
    assert.equal(fresh.isError, undefined, JSON.stringify(fresh));
    assert.equal((fresh.structuredContent?.['body'] as Record<string, unknown> | undefined)?.['answered'], true);
    assert.equal(http.requests.length, before + 2);
  });

  it('a connection dropped after the request was sent leaves the outcome unknown: a retry is not replayed a failure', async () => {
    const before = http.requests.length;
    const r = await call('reset_write', { title: 'dropped', idempotency_key: keys.reset });
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent?.['error_code'], 'TARGET_ERROR', JSON.stringify(r.structuredContent));
    assert.equal(r.structuredContent?.['side_effect_started'], true);
    assert.equal(http.requests.length, before + 1, 'the request did arrive');
    const status = await call('postern_call_status', { idempotency_key: keys.reset });
    assert.equal(status.structuredContent?.['status'], 'outcome_unknown');
    const retry = await call('reset_write', { title: 'dropped', idempotency_key: keys.reset });
    assert.equal(retry.structuredContent?.['error_code'], 'OUTCOME_UNKNOWN', JSON.stringify(retry.structuredContent));
    assert.equal(retry.structuredContent?.['replayed'], undefined);
    assert.equal(http.requests.length, before + 1, 'and is never sent again');
  });

  it('the same MCP client survives a daemon restart: DAEMON_UNAVAILABLE while down, then it works again', async () => {
    const before = http.requests.length;
    const modern = await pinnedClient(inst.sb.home);
    const others: Client[] = [modern];
    try {
      assert.equal(modern.getNegotiatedProtocolVersion(), '2026-07-28');
      assert.equal(await inst.stopDaemon('SIGTERM'), 0);
      for (const c of [agent, modern]) {
        const down = await call('quick_write', { title: 'while down', idempotency_key: key() }, c);
        assert.equal(down.isError, true);
        assert.equal(down.structuredContent?.['error_code'], 'DAEMON_UNAVAILABLE');
        assert.equal(down.structuredContent?.['side_effect_started'], false);
        const listed = await c.listTools(undefined, { cacheMode: 'bypass' });
        assert.ok(Array.isArray(listed.tools), 'tools/list is answered while the daemon is down');
        if (c === agent) await c.ping(); // (ping is not a 2026-07-28 method)
      }
      // A client that starts while the daemon is down connects, and is served once the daemon is back.
      const late = await inst.client({ name: 'late-agent' });
      const lateModern = await pinnedClient(inst.sb.home);
      others.push(lateModern);
      assert.equal(lateModern.getNegotiatedProtocolVersion(), '2026-07-28');
      for (const c of [late, lateModern]) {
        assert.equal((await call('quick_write', { title: 'late', idempotency_key: key() }, c)).structuredContent?.['error_code'], 'DAEMON_UNAVAILABLE');
      }
      assert.equal(http.requests.length, before);

      await restart();
      for (const c of [agent, modern, late, lateModern]) {
        const { tools } = await c.listTools(undefined, { cacheMode: 'refresh' });
        assert.ok(tools.some((t) => t.name === 'quick_write'));
        const up = await call('quick_write', { title: 'after restart', idempotency_key: key() }, c);
        assert.equal(up.isError, undefined, JSON.stringify(up));
      }
      assert.equal(http.requests.length, before + 4);
    } finally {
      for (const c of others) await c.close();
      if (inst.daemon === null) await restart(); // later tests need it, whatever happened here
    }
  });

  it('a locked journal refuses the call before anything is sent; released, the next call works', async () => {
    const before = http.requests.length;
    const db = new Database(join(inst.sb.home, 'journal', 'activity.db'), { timeout: 100 });
    try {
      db.exec('BEGIN EXCLUSIVE');
      const k = key();
      const r = await call('quick_write', { title: 'locked out', idempotency_key: k });
      assert.equal(r.isError, true);
      assert.equal(r.structuredContent?.['error_code'], 'JOURNAL_UNAVAILABLE', JSON.stringify(r.structuredContent));
      assert.equal(r.structuredContent?.['side_effect_started'], false);
      assert.equal(http.requests.length, before, 'no intent, no request');
      db.exec('ROLLBACK');
      // The refused call did not consume its key.
      const ok = await call('quick_write', { title: 'locked out', idempotency_key: k });
      assert.equal(ok.isError, undefined, JSON.stringify(ok));
      assert.equal(http.requests.length, before + 1);
    } finally {
      if (db.inTransaction) db.exec('ROLLBACK');
      db.close();
    }
  });

  it('the Activity journal records raw and normalized arguments, the handler revision and the outcomes; its chain verifies', () => {
    const j = openJournals(join(inst.sb.home, 'journal'), { readonly: true });
    try {
      assert.deepEqual(j.activity.verify().ok, true);
      const byKey = (k: string): CallView[] => j.activity.listCalls({ idempotency_key: k, limit: 1000 });

      const crashed = byKey(keys.crashed);
      const ran = crashed.filter((c) => c.status !== 'rejected' && c.status !== 'replayed');
      assert.equal(ran.length, 1, 'one call ran under the crashed key');
      const c = ran[0]!;
      assert.equal(c.status, 'outcome_unknown');
      assert.equal(c.outcome?.recovered, true);
      assert.equal(c.outcome?.claim, 'outcome_unknown');
      assert.deepEqual(c.call.raw_arguments, { title: 'in flight', idempotency_key: keys.crashed });
      assert.deepEqual(c.call.normalized_arguments, { title: 'in flight' });
      assert.equal(c.call.revision_executed, 1);
      assert.equal(typeof c.call.handler_revision, 'string');
      assert.ok(c.call.handler_revision.length > 0);
      assert.equal(c.target?.kind, 'http');
      const retries = crashed.filter((x) => x.status === 'rejected');
      assert.ok(retries.length >= 1);
      for (const x of retries) assert.equal(x.rejection?.error_code, 'OUTCOME_UNKNOWN');

      const stalled = byKey(keys.stalled).filter((x) => x.status !== 'rejected');
      assert.equal(stalled.length, 1);
      assert.equal(stalled[0]!.status, 'outcome_unknown');

      const reset = byKey(keys.reset).filter((x) => x.status !== 'rejected');
      assert.equal(reset.length, 1);
      assert.equal(reset[0]!.status, 'outcome_unknown');
      assert.equal(reset[0]!.outcome?.recovered, false);
      assert.equal(reset[0]!.outcome?.side_effect_started, true);
      assert.equal(reset[0]!.outcome?.error_code, 'TARGET_ERROR');

      const parallel = byKey(keys.parallel);
      assert.equal(parallel.filter((x) => x.status === 'success').length, 1, 'one execution under the parallel key');
      for (const x of parallel.filter((y) => y.status !== 'success')) {
        assert.ok(x.status === 'replayed' || (x.status === 'rejected' && ['CALL_IN_PROGRESS', 'IDEMPOTENCY_KEY_CONFLICT'].includes(x.rejection?.error_code ?? '')), JSON.stringify(x));
      }
      const success = parallel.find((x) => x.status === 'success')!;
      assert.equal(success.outcome?.response_status, 200);
      assert.equal(success.outcome?.side_effect_started, true);

      const approved = byKey(keys.approved).filter((x) => x.status === 'success');
      assert.equal(approved.length, 1);
      assert.equal(approved[0]!.call.approval?.mode, 'per-call');
      assert.equal(approved[0]!.call.approval?.outcome, 'approved');

      // No call under any key of this file was left in progress.
      for (const k of Object.values(keys)) for (const x of byKey(k)) assert.notEqual(x.status, 'in_progress');
      // No journaled value holds the token.
      const dump: string[] = [];
      j.activity.exportJsonl((line) => dump.push(line));
      for (const form of encodingsOf(TOKEN)) assert.ok(!dump.join('\n').includes(form));
    } finally {
      j.close();
    }
  });
});
