/**
 * The operator protocol v2 seam: schemas, the one client over both
 * transports (the MAC'd socket and the in-process port, also across a
 * worker thread), aborts, malformed and forged messages, the observer role,
 * subscribe with replay, and a subscriber that falls behind.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MessageChannel, Worker } from 'node:worker_threads';
import { join } from 'node:path';
import { connectOperator } from '../../../src/protocol/operator/connect.js';
import {
  MUTATING_OPS,
  OperatorEventEnvelopeSchema,
  OperatorOps,
  ServerMessageSchema,
  type OperatorEventEnvelope,
} from '../../../src/protocol/operator/index.js';
import { createOperatorClient } from '../../../src/protocol/operator/operator-client.js';
import { connectPortTransport } from '../../../src/protocol/operator/port-transport.js';
import { draft, rawConnect, rejectsWith, startHarness, startRelay, tempRun, until } from './helpers.js';

describe('operator protocol schemas', () => {
  it('every op has params and result schemas; mutating ops are a subset', () => {
    for (const op of MUTATING_OPS) assert.ok(op in OperatorOps);
    for (const [op, s] of Object.entries(OperatorOps)) {
      assert.ok(typeof s.params.safeParse === 'function' && typeof s.result.safeParse === 'function', op);
    }
    assert.deepEqual([...MUTATING_OPS].sort(), ['approvals.decide', 'audit.checkpoint', 'catalog.accept', 'catalog.reject', 'catalog.shadow', 'devices.pair', 'devices.revoke', 'grants.revoke', 'lock']);
  });

  it('an event envelope validates strictly: unknown types, extra fields and seq 0 are refused', () => {
    const ok = { seq: 1, at: '2026-01-01T00:00:00.000Z', event: { type: 'daemon.locked', reason: 'idle' } };
    assert.ok(OperatorEventEnvelopeSchema.safeParse(ok).success);
    assert.ok(!OperatorEventEnvelopeSchema.safeParse({ ...ok, seq: 0 }).success);
    assert.ok(!OperatorEventEnvelopeSchema.safeParse({ ...ok, event: { type: 'approval.approved', id: 'x' } }).success);
    assert.ok(!OperatorEventEnvelopeSchema.safeParse({ ...ok, event: { type: 'daemon.locked', reason: 'x', approve: true } }).success);
    assert.ok(ServerMessageSchema.safeParse({ kind: 'event', envelope: ok }).success);
    assert.ok(!ServerMessageSchema.safeParse({ kind: 'event', event: ok.event }).success, 'v1 events are not v2 messages');
  });

  it('params are strict: an unknown field or an out-of-range limit is refused', () => {
    assert.ok(OperatorOps['activity.recent'].params.safeParse({ limit: 10, tool: 'x', error_code: true }).success);
    assert.ok(!OperatorOps['activity.recent'].params.safeParse({ limit: 100_000 }).success);
    assert.ok(!OperatorOps['catalog.accept'].params.safeParse({ digest: 'abc' }).success);
    assert.ok(!OperatorOps['approvals.list'].params.safeParse({ as: 'admin' }).success);
  });
});

describe('the operator client over the socket', () => {
  it('an observer reads but every deciding or changing op is refused with OBSERVER_READ_ONLY', async (t) => {
    const h = await startHarness(t);
    const a = h.queue.request(draft(), { timeoutMs: 10_000 });
    t.after(() => h.queue.voidAll('test over'));
    const c = await connectOperator(h.socket, h.key, { role: 'observer' });
    t.after(() => c.close());
    assert.equal(c.role, 'observer');
    assert.deepEqual((await c.request('approvals.list', {})).map((x) => x.id), [a.card.id]);
    assert.equal((await c.request('status', {})).role, 'observer');
    await rejectsWith(c.request('approvals.decide', { approval_id: a.card.id, verdict: { verdict: 'approve', scope: 'once' } }), 'OBSERVER_READ_ONLY');
    await rejectsWith(c.request('lock', {}), 'OBSERVER_READ_ONLY');
    await rejectsWith(c.request('grants.revoke', { id: 'g' }), 'OBSERVER_READ_ONLY');
    await rejectsWith(c.request('catalog.accept', { digest: 'a'.repeat(64) }), 'OBSERVER_READ_ONLY');
    assert.equal(h.queue.list().length, 1, 'nothing was decided');
    assert.equal(h.locks.length, 0, 'nothing was locked');
  });

  it('a relay that turns an observer handshake into an operator one is refused, and nothing is sent', async (t) => {
    const { dir } = tempRun(t);
    const h = await startHarness(t);
    const relay = await startRelay(join(dir, 'relay.sock'), h.socket, {
      c2s: (line, i) => (i === 0 ? [line.replace('"role":"observer"', '"role":"operator"')] : [line]),
    });
    t.after(() => relay.close());
    await rejectsWith(connectOperator(relay.path, h.key, { role: 'observer', attempts: 1 }), 'OPERATOR_AUTH_FAILED');
    assert.ok(relay.c2sSeen.length <= 1, 'only the auth line crossed');
  });

  it('an aborted request rejects at once with CALL_CANCELLED; the connection stays usable', async (t) => {
    const h = await startHarness(t);
    const c = await connectOperator(h.socket, h.key);
    t.after(() => c.close());
    const ac = new AbortController();
    ac.abort();
    await rejectsWith(c.request('approvals.list', {}, { signal: ac.signal }), 'CALL_CANCELLED');
    const ac2 = new AbortController();
    const p = c.request('status', {}, { signal: ac2.signal });
    ac2.abort();
    await rejectsWith(p, 'CALL_CANCELLED');
    assert.deepEqual(await c.request('approvals.list', {}), []);
  });

  it('a v1 client is told, not served', async (t) => {
    const h = await startHarness(t);
    const { sock, lines } = await rawConnect(h.socket);
    const hello = JSON.parse((await lines.next()) ?? 'null');
    assert.equal(hello.v, 2);
    sock.write(`${JSON.stringify({ t: 'auth', v: 1, nonce: hello.nonce, proof: hello.nonce })}\n`);
    const answer = JSON.parse((await lines.next()) ?? 'null');
    assert.equal(answer.t, 'error');
    assert.equal(answer.error.code, 'OPERATOR_AUTH_FAILED');
    sock.destroy();
  });

  it('subscribe: snapshot, then live events in seq order; a re-attach with since replays what it missed', async (t) => {
    const h = await startHarness(t);
    t.after(() => h.queue.voidAll('test over'));
    const c = await connectOperator(h.socket, h.key);
    t.after(() => c.close());
    const seen: OperatorEventEnvelope[] = [];
    const snap = await c.subscribe((e) => seen.push(e));
    assert.equal(snap.last_seq, 0);
    assert.equal(snap.gap, false);
    const a = h.queue.request(draft(), { timeoutMs: 10_000 });
    await until(() => seen.length === 1);
    c.close();
    const b = h.queue.request(draft({ call_digest: 'd2' }), { timeoutMs: 10_000 });
    h.queue.decide(a.card.id, { verdict: 'deny', reason: null }, 'test');
    const again = await connectOperator(h.socket, h.key);
    t.after(() => again.close());
    const replayed: OperatorEventEnvelope[] = [];
    const snap2 = await again.subscribe((e) => replayed.push(e), { since: seen[0]!.seq });
    assert.deepEqual(snap2.pending.map((x) => x.id), [b.card.id]);
    await until(() => replayed.length === 2);
    assert.deepEqual(replayed.map((e) => [e.seq, e.event.type]), [[2, 'approval.added'], [3, 'approval.resolved']]);
  });
});

describe('the operator client over the in-process port', () => {
  it('attaches, answers, and pushes events exactly like the socket', async (t) => {
    const h = await startHarness(t);
    t.after(() => h.queue.voidAll('test over'));
    const { port1, port2 } = new MessageChannel();
    const served = h.server.attachPort(port1);
    const c = createOperatorClient(await connectPortTransport(port2, { role: 'operator' }));
    await served;
    t.after(() => c.close());
    const events: OperatorEventEnvelope[] = [];
    await c.subscribe((e) => events.push(e));
    const a = h.queue.request(draft(), { timeoutMs: 10_000 });
    await until(() => events.length === 1);
    const d = await c.request('approvals.decide', { approval_id: a.card.id, verdict: { verdict: 'approve', scope: 'once' } });
    assert.equal(d.kind, 'approved');
    assert.equal((await a.decision).kind, 'approved');
    await until(() => events.length === 2);
    assert.equal(events[1]?.event.type, 'approval.resolved');
  });

  it('an observer port is read-only too', async (t) => {
    const h = await startHarness(t);
    const { port1, port2 } = new MessageChannel();
    h.server.attachPort(port1).catch(() => undefined);
    const c = createOperatorClient(await connectPortTransport(port2, { role: 'observer' }));
    t.after(() => c.close());
    await rejectsWith(c.request('lock', {}), 'OBSERVER_READ_ONLY');
  });

  it('a malformed message from the daemon end closes the client with a clear error, failing its waits', async (t) => {
    const { port1, port2 } = new MessageChannel();
    port1.on('message', (m: string) => {
      const msg = JSON.parse(m);
      if (msg.t === 'attach') port1.postMessage(JSON.stringify({ t: 'attached', v: 2, role: 'operator' }));
      else port1.postMessage('{"kind":"response","id":1,"ok":true,"result":[],"approved":true}');
    });
    t.after(() => port1.close());
    const c = createOperatorClient(await connectPortTransport(port2));
    await rejectsWith(c.request('approvals.list', {}), 'INTERNAL', /malformed/);
    const why = await c.closed;
    assert.equal(why?.code, 'INTERNAL');
  });

  it('a port that answers the wrong role is not attached', async (t) => {
    const { port1, port2 } = new MessageChannel();
    port1.on('message', () => port1.postMessage(JSON.stringify({ t: 'attached', v: 2, role: 'operator' })));
    t.after(() => port1.close());
    await rejectsWith(connectPortTransport(port2, { role: 'observer' }), 'OPERATOR_AUTH_FAILED');
  });

  it('a subscriber that stops reading is dropped with OPERATOR_TOO_SLOW; the daemon goes on', async (t) => {
    const h = await startHarness(t, { maxBufferedBytes: 64 * 1024 });
    t.after(() => h.queue.voidAll('test over'));
    const { port1, port2 } = new MessageChannel();
    h.server.attachPort(port1).catch(() => undefined);
    // A raw peer: attaches and subscribes, then never acknowledges anything.
    const closed = new Promise<void>((resolve) => port2.once('close', () => resolve()));
    port2.postMessage(JSON.stringify({ t: 'attach', v: 2, role: 'observer' }));
    port2.postMessage(JSON.stringify({ id: 1, op: 'subscribe', params: {} }));
    port2.on('message', () => undefined);
    const big = 'x'.repeat(4_000);
    for (let i = 0; i < 40; i++) h.queue.request(draft({ call_digest: `d${i}`, raw_arguments: { big } }), { timeoutMs: 10_000 });
    await closed;
    assert.equal(h.queue.list().length, 40, 'the daemon kept every request');
    assert.ok(h.notices.some((n) => n.type === 'refused' && n.code === 'OPERATOR_TOO_SLOW'));
  });

  it('works across a worker thread: the port is handed to a worker that runs the client', async (t) => {
    const h = await startHarness(t);
    const a = h.queue.request(draft(), { timeoutMs: 10_000 });
    t.after(() => h.queue.voidAll('test over'));
    const { port1, port2 } = new MessageChannel();
    h.server.attachPort(port1).catch(() => undefined);
    // The same bootstrap src/vault/kdf.ts uses to run TypeScript in a worker: register tsx, then import.
    const entry = new URL('./fixtures/port-worker.ts', import.meta.url).href;
    const boot = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`;
    const w = new Worker(boot, { eval: true, workerData: { port: port2 }, transferList: [port2], execArgv: [] });
    t.after(() => w.terminate());
    const answer = await new Promise((resolve) => w.once('message', resolve));
    assert.equal(answer, 'denied');
    const d = await a.decision;
    assert.ok(d.kind === 'denied' && d.reason === 'from a worker');
  });
});
