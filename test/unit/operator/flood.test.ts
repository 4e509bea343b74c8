/**
 * THREATS 14/15 (floods; the operator locked out): a same-user process that
 * keeps opening connections to the operator socket cannot keep the operator
 * from approving. New connections evict the oldest unauthenticated one, the
 * handshake window is short, and an authenticated operator is never evicted.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { connectOperator } from '../../../src/protocol/operator/connect.js';
import { HANDSHAKE_TIMEOUT_MS } from '../../../src/daemon/operator/index.js';
import { draft, rawConnect, startHarness, until } from './helpers.js';

/** Keeps `width` connections open at all times, reopening each one the daemon drops, until stopped. */
function flood(path: string, width: number): { stop: () => void; opened: () => number } {
  let stopped = false;
  let opened = 0;
  const live = new Set<Socket>();
  const open = (): void => {
    if (stopped) return;
    const s = connect(path);
    opened++;
    live.add(s);
    s.resume(); // read (and drop) the hello, so the daemon's close is noticed
    s.on('error', () => undefined);
    s.on('close', () => {
      live.delete(s);
      setImmediate(open);
    });
  };
  for (let i = 0; i < width; i++) open();
  return {
    stop: () => {
      stopped = true;
      for (const s of live) s.destroy();
    },
    opened: () => opened,
  };
}

describe('operator socket under a connection flood', () => {
  it('the handshake window is short by default, and an idle peer is dropped within it', async (t) => {
    assert.ok(HANDSHAKE_TIMEOUT_MS <= 1_000);
    const h = await startHarness(t, { handshakeTimeoutMs: undefined });
    const { sock } = await rawConnect(h.socket);
    await new Promise<void>((resolve) => sock.once('close', () => resolve()));
    assert.ok(h.notices.some((n) => n.type === 'refused' && n.reason === 'timeout'));
  });

  it('every handshake slot held by idle connections: the operator still gets in, the oldest idle one is evicted', async (t) => {
    const h = await startHarness(t, { maxUnauthenticated: 4, handshakeTimeoutMs: 60_000 });
    const idle = await Promise.all([0, 1, 2, 3].map(() => rawConnect(h.socket)));
    const firstClosed = new Promise<void>((resolve) => idle[0]!.sock.once('close', () => resolve()));
    const c = await connectOperator(h.socket, h.key, { attempts: 1 });
    assert.equal((await c.request('status', {})).pending, 0);
    await firstClosed;
    assert.equal(idle[3]!.sock.destroyed, false, 'the newest idle connection is still there');
    c.close();
    for (const i of idle) i.sock.destroy();
  });

  it('a process that keeps opening connections does not keep the operator from approving', async (t) => {
    const h = await startHarness(t, { handshakeTimeoutMs: 60_000 });
    const pending = h.queue.request(draft(), { timeoutMs: 30_000 });
    t.after(() => h.queue.voidAll('test over'));
    const f = flood(h.socket, 64);
    t.after(() => f.stop());
    await until(() => f.opened() > 200, 10_000);
    for (let round = 0; round < 5; round++) {
      const c = await connectOperator(h.socket, h.key);
      assert.equal((await c.request('approvals.list', {})).length, 1);
      c.close();
    }
    const c = await connectOperator(h.socket, h.key);
    const d = await c.request('approvals.decide', { approval_id: pending.card.id, verdict: { verdict: 'approve', scope: 'once', call_digest: 'digest-1' } });
    assert.equal(d.kind, 'approved');
    assert.equal((await pending.decision).kind, 'approved', 'the waiting call got the approval');
    c.close();
    f.stop();
  });

  it('an authenticated operator is never evicted by a flood', async (t) => {
    const h = await startHarness(t, { maxUnauthenticated: 2, maxConnections: 4, handshakeTimeoutMs: 60_000 });
    const c = await connectOperator(h.socket, h.key);
    const f = flood(h.socket, 16);
    t.after(() => f.stop());
    await until(() => f.opened() > 100, 10_000);
    assert.equal((await c.request('status', {})).pending, 0);
    f.stop();
    c.close();
    assert.equal(await c.closed, null, 'closed by us, not by the daemon');
  });
});
