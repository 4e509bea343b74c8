/**
 * THREATS row 2 (the agent approves its own calls): the operator channel's
 * mutual handshake. Only a holder of the vault's operator-auth key gets in,
 * and the CLI only talks to a peer that proves the same key.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { connectOperator, NO_DAEMON_MESSAGE } from '../../../src/protocol/operator/connect.js';
import { decodeB64u, encodeB64u, serverProof } from '../../../src/protocol/operator/crypto.js';
import { draft, Lines, rawConnect, rejectsWith, startHarness, tempRun, until } from './helpers.js';

describe('operator handshake', () => {
  it('a client with the key authenticates and is answered', async (t) => {
    const h = await startHarness(t);
    const c = await connectOperator(h.socket, h.key);
    assert.equal((await c.request('status', {})).pending, 0);
    c.close();
    assert.equal(await c.closed, null);
    assert.ok(h.notices.some((n) => n.type === 'authenticated'));
  });

  it('a wrong key fails on both sides with OPERATOR_AUTH_FAILED and changes nothing', async (t) => {
    const h = await startHarness(t);
    const pending = h.queue.request(draft(), { timeoutMs: 10_000 });
    t.after(() => h.queue.voidAll('test over'));
    await rejectsWith(connectOperator(h.socket, new Uint8Array(randomBytes(32))), 'OPERATOR_AUTH_FAILED', /different vault/);
    assert.ok(h.notices.some((n) => n.type === 'refused' && n.code === 'OPERATOR_AUTH_FAILED' && n.reason === 'bad proof'));
    assert.equal(h.notices.filter((n) => n.type === 'authenticated').length, 0);
    assert.deepEqual(h.queue.list().map((c) => c.id), [pending.card.id]);
  });

  it('answers a failed proof only after the failure delay', async (t) => {
    const h = await startHarness(t, { failureDelayMs: 200 });
    const started = Date.now();
    await rejectsWith(connectOperator(h.socket, new Uint8Array(randomBytes(32))), 'OPERATOR_AUTH_FAILED');
    assert.ok(Date.now() - started >= 190);
  });

  it('detects an impostor server that cannot prove the key, and sends it no command', async (t) => {
    const { socket } = tempRun(t);
    const key = new Uint8Array(randomBytes(32));
    const received: string[] = [];
    let served: Promise<void> = Promise.resolve();
    const impostor = createServer((sock) => {
      const lines = new Lines(sock);
      sock.write(`${JSON.stringify({ t: 'hello', protocol: 'postern-operator', v: 2, nonce: encodeB64u(randomBytes(32)) })}\n`);
      served = (async () => {
        for (;;) {
          const l = await lines.next(5_000).catch(() => null);
          if (l === null) return;
          received.push(l);
          const auth = JSON.parse(l);
          // It answers with a proof from the key it does have (not the vault's).
          const wrong = serverProof(randomBytes(32), randomBytes(32), decodeB64u(auth.nonce)!, 'operator');
          sock.write(`${JSON.stringify({ t: 'welcome', v: 2, role: 'operator', proof: encodeB64u(wrong) })}\n`);
        }
      })();
    });
    await new Promise<void>((r) => impostor.listen(socket, r));
    t.after(() => impostor.close());
    await rejectsWith(connectOperator(socket, key), 'OPERATOR_AUTH_FAILED', /could not prove/);
    // The client hangs up on the failed proof. The impostor's reader ends (next() is null) once
    // the socket has closed and every line that came before the close was read, so a command the
    // client sent after its auth line would be in `received` by then. (It also ends after 5 s
    // without a line, which only bounds a client that never hangs up.)
    await served;
    assert.equal(received.length, 1, 'only the auth line reached the impostor');
    assert.equal(JSON.parse(received[0]!).t, 'auth');
  });

  it('an impostor that skips the hello or speaks something else is refused', async (t) => {
    const { socket } = tempRun(t);
    const impostor = createServer((sock) => {
      sock.write('{"t":"welcome","v":2,"role":"operator","proof":"' + encodeB64u(randomBytes(32)) + '"}\n');
    });
    await new Promise<void>((r) => impostor.listen(socket, r));
    t.after(() => impostor.close());
    await rejectsWith(connectOperator(socket, new Uint8Array(randomBytes(32))), 'OPERATOR_AUTH_FAILED');
  });

  it('a locked daemon (key() null, throwing, or a zeroed key) refuses every handshake', async (t) => {
    for (const key of [() => null, () => { throw new Error('VAULT_LOCKED'); }, () => new Uint8Array(32)]) {
      const h = await startHarness(t, { key });
      await rejectsWith(connectOperator(h.socket, new Uint8Array(32)), 'VAULT_LOCKED');
      await rejectsWith(connectOperator(h.socket, new Uint8Array(randomBytes(32))), 'VAULT_LOCKED');
      assert.equal(h.notices.filter((n) => n.type === 'authenticated').length, 0);
    }
  });

  it('lock: the daemon is told, and no later command is served', async (t) => {
    let locked = false;
    const key = new Uint8Array(randomBytes(32));
    const h = await startHarness(t, { key: () => (locked ? null : key), onLock: () => (locked = true) });
    const c = await connectOperator(h.socket, key);
    assert.deepEqual(await c.request('lock', {}), { locked: true });
    await rejectsWith(c.request('approvals.list', {}), 'VAULT_LOCKED');
    await rejectsWith(connectOperator(h.socket, key), 'VAULT_LOCKED');
  });

  it('no daemon: a missing socket or a stale one is DAEMON_UNAVAILABLE with a clear line', async (t) => {
    const { socket } = tempRun(t);
    const e = await rejectsWith(connectOperator(socket, new Uint8Array(32)), 'DAEMON_UNAVAILABLE');
    assert.equal(e.message, NO_DAEMON_MESSAGE);
    const h = await startHarness(t, { socket });
    await h.close();
    await rejectsWith(connectOperator(socket, new Uint8Array(32)), 'DAEMON_UNAVAILABLE');
  });

  it('a peer that never authenticates is dropped after the handshake timeout', async (t) => {
    const h = await startHarness(t, { handshakeTimeoutMs: 100 });
    const { lines } = await rawConnect(h.socket);
    assert.equal(JSON.parse((await lines.next())!).t, 'hello');
    const rest = await lines.rest();
    assert.equal(JSON.parse(rest[0]!).error.code, 'OPERATOR_AUTH_FAILED');
    await until(() => h.notices.some((n) => n.type === 'refused' && n.reason === 'timeout'));
  });
});
