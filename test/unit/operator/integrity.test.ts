/**
 * THREATS rows 2 and 14: after the handshake, a same-user process that
 * replaced the socket and relays bytes cannot inject, alter, replay or reorder
 * commands or answers; malformed input closes one connection, never the server.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { connectOperator } from '../../../src/protocol/operator/connect.js';
import { encodeB64u } from '../../../src/protocol/operator/crypto.js';
import { MAX_REQUEST_LINE_BYTES, PREAUTH_LINE_BYTES } from '../../../src/protocol/operator/index.js';
import { draft, openBody, rawConnect, rawSession, rejectsWith, startHarness, startRelay, tempRun, until, type Harness } from './helpers.js';

async function setup(t: Parameters<typeof startHarness>[0]): Promise<{ h: Harness; relayPath: string; cardId: string }> {
  const { dir } = tempRun(t);
  const h = await startHarness(t);
  const card = h.queue.request(draft(), { timeoutMs: 10_000 }).card;
  t.after(() => h.queue.voidAll('test over'));
  return { h, relayPath: join(dir, 'impostor.sock'), cardId: card.id };
}

const frame = (line: string): { seq: number; body: string; mac: string } => JSON.parse(line);

describe('operator channel integrity', () => {
  it('a faithful relay is harmless: commands pass unchanged', async (t) => {
    const { h, relayPath, cardId } = await setup(t);
    const relay = await startRelay(relayPath, h.socket);
    t.after(() => relay.close());
    const c = await connectOperator(relay.path, h.key);
    assert.deepEqual((await c.request('approvals.list', {})).map((x) => x.id), [cardId]);
    c.close();
  });

  it('a relay that alters a command (deny → approve) is refused on both sides, nothing decided', async (t) => {
    const { h, relayPath, cardId } = await setup(t);
    const relay = await startRelay(relayPath, h.socket, {
      c2s: (line, i) => {
        if (i < 1) return [line]; // the auth line
        const f = frame(line);
        return [JSON.stringify({ ...f, body: f.body.replace('"deny"', '"approve"').replace('"reason":null', '"scope":"once"') })];
      },
    });
    t.after(() => relay.close());
    const c = await connectOperator(relay.path, h.key);
    await rejectsWith(c.request('approvals.decide', { approval_id: cardId, verdict: { verdict: 'deny', reason: null } }), 'OPERATOR_AUTH_FAILED');
    assert.match(relay.c2sSeen[1] ?? '', /approvals\.decide/);
    assert.deepEqual(h.queue.list().map((x) => x.id), [cardId]);
    assert.ok(h.notices.some((n) => n.type === 'refused' && n.reason === 'bad MAC'));
  });

  it('a relay that injects its own command after the handshake is refused, nothing decided', async (t) => {
    const { h, relayPath, cardId } = await setup(t);
    const relay = await startRelay(relayPath, h.socket);
    t.after(() => relay.close());
    const c = await connectOperator(relay.path, h.key);
    const body = JSON.stringify({ id: 99, op: 'approvals.decide', params: { approval_id: cardId, verdict: { verdict: 'approve', scope: 'session' } } });
    relay.inject(JSON.stringify({ seq: 0, body, mac: encodeB64u(randomBytes(32)) }));
    assert.ok((await c.closed)?.code === 'OPERATOR_AUTH_FAILED');
    assert.deepEqual(h.queue.list().map((x) => x.id), [cardId]);
  });

  it('a replayed command is refused within a connection and on another connection', async (t) => {
    const { h, cardId } = await setup(t);
    const s1 = await rawSession(h.socket, h.key);
    const list = s1.codec.seal(JSON.stringify({ id: 1, op: 'approvals.list', params: {} }));
    s1.sock.write(`${list}\n`);
    assert.equal(openBody(s1.codec, await s1.lines.next()).ok, true);
    s1.sock.write(`${list}\n`); // same frame again
    const fatal = openBody(s1.codec, await s1.lines.next());
    assert.equal(fatal.kind, 'fatal');
    assert.equal(fatal.error.code, 'OPERATOR_AUTH_FAILED');
    assert.equal(await s1.lines.next(), null, 'the server closed the connection');

    // An approve captured on one connection, replayed on a fresh authenticated one.
    const s2 = await rawSession(h.socket, h.key);
    const approve = s2.codec.seal(JSON.stringify({ id: 1, op: 'approvals.decide', params: { approval_id: cardId, verdict: { verdict: 'approve', scope: 'once' } } }));
    s2.sock.destroy();
    const s3 = await rawSession(h.socket, h.key);
    s3.sock.write(`${approve}\n`);
    assert.equal(openBody(s3.codec, await s3.lines.next()).kind, 'fatal');
    assert.deepEqual(h.queue.list().map((x) => x.id), [cardId]);
  });

  it('reordered commands are refused', async (t) => {
    const { h } = await setup(t);
    const s = await rawSession(h.socket, h.key);
    const a = s.codec.seal(JSON.stringify({ id: 1, op: 'status', params: {} }));
    const b = s.codec.seal(JSON.stringify({ id: 2, op: 'status', params: {} }));
    s.sock.write(`${b}\n${a}\n`);
    assert.equal(openBody(s.codec, await s.lines.next()).kind, 'fatal');
  });

  it('a relay that alters an answer is detected by the client', async (t) => {
    const { h, relayPath } = await setup(t);
    const relay = await startRelay(relayPath, h.socket, {
      s2c: (line, i) => {
        if (i < 2) return [line]; // hello, welcome
        const f = frame(line);
        return [JSON.stringify({ ...f, body: f.body.replace('create_issue', 'harmless_read') })];
      },
    });
    t.after(() => relay.close());
    const c = await connectOperator(relay.path, h.key);
    await rejectsWith(c.request('approvals.list', {}), 'OPERATOR_AUTH_FAILED', /relaying/);
  });

  it('a relay that drops an answer cannot slip the next one in its place', async (t) => {
    const { h, relayPath } = await setup(t);
    const relay = await startRelay(relayPath, h.socket, { s2c: (line, i) => (i === 2 ? [] : [line]) });
    t.after(() => relay.close());
    const c = await connectOperator(relay.path, h.key, { requestTimeoutMs: 300 });
    const first = c.request('status', {});
    const second = c.request('approvals.list', {});
    await rejectsWith(second, 'OPERATOR_AUTH_FAILED');
    await rejectsWith(first, 'OPERATOR_AUTH_FAILED');
  });

  it('an unknown op or bad params is an error answer, and the connection keeps working', async (t) => {
    const { h } = await setup(t);
    const s = await rawSession(h.socket, h.key);
    s.sock.write(`${s.codec.seal(JSON.stringify({ id: 1, op: 'approvals.approve_all', params: {} }))}\n`);
    const r1 = openBody(s.codec, await s.lines.next());
    assert.deepEqual([r1.id, r1.ok, r1.error.code], [1, false, 'USAGE']);
    s.sock.write(`${s.codec.seal('{"id":2,"op":"approvals.decide","params":{"approval_id":"x","verdict":{"verdict":"approve","scope":"once"},"__proto__":{"admin":true}}}')}\n`);
    assert.equal(openBody(s.codec, await s.lines.next()).error.code, 'USAGE');
    s.sock.write(`${s.codec.seal('not json')}\n`);
    assert.deepEqual(openBody(s.codec, await s.lines.next()), { kind: 'response', id: null, ok: false, error: { code: 'USAGE', message: 'the command is not JSON' } });
    s.sock.write(`${s.codec.seal(JSON.stringify({ id: 3, op: 'status' }))}\n`);
    assert.equal(openBody(s.codec, await s.lines.next()).ok, true);
  });

  it('oversized lines, garbage and invalid UTF-8 close that connection only; others are still served', async (t) => {
    const { h } = await setup(t);
    const attacks: (() => Promise<void>)[] = [
      async () => {
        const { sock, lines } = await rawConnect(h.socket);
        sock.write('x'.repeat(PREAUTH_LINE_BYTES + 10));
        const rest = await lines.rest();
        assert.equal(JSON.parse(rest.at(-1)!).error.code, 'REQUEST_TOO_LARGE');
      },
      async () => {
        const { sock, lines } = await rawConnect(h.socket);
        sock.write('{"t":"auth", garbage\n');
        assert.equal(JSON.parse((await lines.rest()).at(-1)!).error.code, 'OPERATOR_AUTH_FAILED');
      },
      async () => {
        const { sock, lines } = await rawConnect(h.socket);
        sock.write(Buffer.from([0xff, 0xfe, 0x0a]));
        assert.equal(JSON.parse((await lines.rest()).at(-1)!).error.code, 'OPERATOR_AUTH_FAILED');
      },
      async () => {
        const s = await rawSession(h.socket, h.key);
        s.sock.write('y'.repeat(MAX_REQUEST_LINE_BYTES + 1));
        assert.equal(openBody(s.codec, await s.lines.next()).error.code, 'REQUEST_TOO_LARGE');
        assert.equal(await s.lines.next(), null);
      },
      async () => {
        const s = await rawSession(h.socket, h.key);
        s.sock.write('{{{{ not a frame\n');
        assert.equal(openBody(s.codec, await s.lines.next()).error.code, 'OPERATOR_AUTH_FAILED');
        assert.equal(await s.lines.next(), null);
      },
    ];
    const bystander = await connectOperator(h.socket, h.key);
    for (const attack of attacks) await attack();
    assert.equal((await bystander.request('approvals.list', {})).length, 1);
    const fresh = await connectOperator(h.socket, h.key);
    assert.equal((await fresh.request('approvals.list', {})).length, 1);
    fresh.close();
    bystander.close();
    await until(() => h.notices.filter((n) => n.type === 'refused').length >= 5);
  });
});
