/**
 * list / approve / deny / subscribe through a real socket against a real
 * ApprovalQueue: what the operator says is what the waiting call receives.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connectOperator } from '../../../src/protocol/operator/connect.js';
import type { OperatorEvent } from '../../../src/protocol/operator/index.js';
import { draft, rejectsWith, startHarness, until } from './helpers.js';

describe('operator commands end to end', () => {
  it('lists pending cards and approves one; the waiting call gets the approval, by operator-cli', async (t) => {
    const h = await startHarness(t);
    const a = h.queue.request(draft(), { timeoutMs: 10_000 });
    const b = h.queue.request(draft({ call_digest: 'digest-2' }), { timeoutMs: 10_000 });
    t.after(() => h.queue.voidAll('test over'));
    const c = await connectOperator(h.socket, h.key);
    const cards = await c.request('approvals.list', {});
    assert.deepEqual(cards.map((x) => x.id).sort(), [a.card.id, b.card.id].sort());
    assert.deepEqual(cards.find((x) => x.id === a.card.id), a.card);
    const d = await c.request('approvals.decide', { approval_id: a.card.id, verdict: { verdict: 'approve', scope: 'once', call_digest: 'digest-1' } });
    assert.deepEqual([d.kind, d.kind === 'approved' && d.scope, d.kind === 'approved' && d.by], ['approved', 'once', 'operator-cli']);
    assert.deepEqual(await a.decision, d);
    assert.deepEqual(h.queue.list().map((x) => x.id), [b.card.id]);
    c.close();
  });

  it('a wrong digest is APPROVAL_MISMATCH and an unknown id APPROVAL_NOT_FOUND; nothing changes', async (t) => {
    const h = await startHarness(t);
    const a = h.queue.request(draft(), { timeoutMs: 10_000 });
    t.after(() => h.queue.voidAll('test over'));
    const c = await connectOperator(h.socket, h.key);
    await rejectsWith(c.request('approvals.decide', { approval_id: a.card.id, verdict: { verdict: 'approve', scope: 'once', call_digest: 'other' } }), 'APPROVAL_MISMATCH');
    await rejectsWith(c.request('approvals.decide', { approval_id: 'no-such-id', verdict: { verdict: 'deny', reason: null } }), 'APPROVAL_NOT_FOUND');
    assert.equal(h.queue.list().length, 1);
    // The connection survives ordinary errors.
    assert.equal((await c.request('approvals.list', {})).length, 1);
    c.close();
  });

  it('a session grant for a per-call card is refused (USAGE)', async (t) => {
    const h = await startHarness(t);
    const a = h.queue.request(draft({ scope_allowed: 'per-call', widening: ['adds method DELETE'] }), { timeoutMs: 10_000 });
    t.after(() => h.queue.voidAll('test over'));
    const c = await connectOperator(h.socket, h.key);
    await rejectsWith(c.request('approvals.decide', { approval_id: a.card.id, verdict: { verdict: 'approve', scope: 'session' } }), 'USAGE');
    assert.equal(h.queue.list().length, 1);
    c.close();
  });

  it('deny carries the reason and the configured operator name', async (t) => {
    const h = await startHarness(t, { operatorName: 'alice@laptop' });
    const a = h.queue.request(draft(), { timeoutMs: 10_000 });
    const c = await connectOperator(h.socket, h.key);
    await c.request('approvals.decide', { approval_id: a.card.id, verdict: { verdict: 'deny', reason: 'not on a Friday' } });
    assert.deepEqual(await a.decision.then((d) => (d.kind === 'denied' ? [d.reason, d.by] : d.kind)), ['not on a Friday', 'alice@laptop']);
    c.close();
  });

  it('subscribe returns the pending snapshot, then pushes added and resolved events', async (t) => {
    const h = await startHarness(t);
    const first = h.queue.request(draft(), { timeoutMs: 10_000 });
    t.after(() => h.queue.voidAll('test over'));
    const watcher = await connectOperator(h.socket, h.key);
    const events: OperatorEvent[] = [];
    const snapshot = await watcher.subscribe((e) => events.push(e.event));
    assert.deepEqual(snapshot.pending.map((x) => x.id), [first.card.id]);

    const second = h.queue.request(draft({ call_digest: 'digest-2' }), { timeoutMs: 10_000 });
    const decider = await connectOperator(h.socket, h.key);
    await decider.request('approvals.decide', { approval_id: first.card.id, verdict: { verdict: 'deny', reason: null } });
    await until(() => events.length >= 2);
    assert.deepEqual(events[0], { type: 'approval.added', card: second.card });
    const resolved = events[1];
    assert.ok(resolved?.type === 'approval.resolved' && resolved.id === first.card.id && resolved.decision.kind === 'denied');
    // Answers and events interleave on one channel without breaking the sequence.
    assert.equal((await watcher.request('approvals.list', {})).length, 1);
    watcher.close();
    decider.close();
  });

  it('status is typed; a throwing lock is an error answer, not a crash', async (t) => {
    const h = await startHarness(t, { onLock: () => { throw new Error('boom'); } });
    const c = await connectOperator(h.socket, h.key);
    const st = await c.request('status', {});
    assert.equal(st.role, 'operator');
    assert.equal(st.protocol_version, 2);
    await rejectsWith(c.request('lock', {}), 'INTERNAL');
    assert.deepEqual(await c.request('approvals.list', {}), []);
    c.close();
  });
});
