// @subject time: approval timeouts and card expiry (run again a year ahead by .ci/run)
/** The approval queue: one promise per request, every request settles exactly once. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApprovalQueue } from '../../../src/approvals/queue.js';
import { draft } from '../operator/helpers.js';
import { isPosternError } from '../../../src/rules/errors.js';
import { systemClock } from '../../../src/clock/index.js';
import { presentation } from '../../../src/protocol/operator/index.js';
import { PAYLOAD } from '../../helpers/unseen-corpus.js';

describe('ApprovalQueue', () => {
  it('a second request does not replace the first: both settle independently', async () => {
    const q = new ApprovalQueue(systemClock);
    const a = q.request(draft(), { timeoutMs: 5_000 });
    const b = q.request(draft({ call_digest: 'd2' }), { timeoutMs: 5_000 });
    assert.deepEqual(q.list().map((c) => c.id).sort(), [a.card.id, b.card.id].sort());
    q.decide(b.card.id, { verdict: 'deny', reason: 'no' }, 'op');
    q.decide(a.card.id, { verdict: 'approve', scope: 'once' }, 'op');
    assert.equal((await a.decision).kind, 'approved');
    const db = await b.decision;
    assert.equal(db.kind, 'denied');
    if (db.kind === 'denied') assert.equal(db.reason, 'no');
    assert.equal(q.list().length, 0);
  });

  it('times out as a timeout, not a denial', async () => {
    const q = new ApprovalQueue(systemClock);
    const a = q.request(draft(), { timeoutMs: 30 });
    assert.equal((await a.decision).kind, 'timeout');
    assert.throws(() => q.decide(a.card.id, { verdict: 'approve', scope: 'once' }, 'op'), (e) => isPosternError(e, 'APPROVAL_NOT_FOUND'));
  });

  it('refuses a verdict for another call digest and a session grant on a per-call card', async () => {
    const q = new ApprovalQueue(systemClock);
    const a = q.request(draft({ scope_allowed: 'per-call' }), { timeoutMs: 5_000 });
    assert.throws(() => q.decide(a.card.id, { verdict: 'approve', scope: 'once', call_digest: 'other' }, 'op'), (e) => isPosternError(e, 'APPROVAL_MISMATCH'));
    assert.throws(() => q.decide(a.card.id, { verdict: 'approve', scope: 'session' }, 'op'), (e) => isPosternError(e, 'USAGE'));
    q.decide(a.card.id, { verdict: 'approve', scope: 'once', call_digest: a.card.call_digest }, 'op');
    assert.equal((await a.decision).kind, 'approved');
  });

  it('voids everything on lock and honours client cancellation', async () => {
    const q = new ApprovalQueue(systemClock);
    const ac = new AbortController();
    const a = q.request(draft(), { timeoutMs: 5_000, signal: ac.signal });
    const b = q.request(draft(), { timeoutMs: 5_000 });
    ac.abort();
    assert.equal((await a.decision).kind, 'cancelled');
    assert.equal(q.voidAll('vault locked'), 1);
    assert.equal((await b.decision).kind, 'voided');
  });

  it('emits added and resolved events', async () => {
    const q = new ApprovalQueue(systemClock);
    const events: string[] = [];
    q.subscribe((e) => events.push(e.type));
    const a = q.request(draft(), { timeoutMs: 5_000 });
    q.decide(a.card.id, { verdict: 'deny', reason: null }, 'op');
    await a.decision;
    assert.deepEqual(events, ['added', 'resolved']);
  });

  it('a card too large for one view is approved only naming its presentation as seen (APPROVAL_UNSEEN otherwise); a denial always goes through', async () => {
    const q = new ApprovalQueue(systemClock);
    const text = `${'please summarise the logs '.repeat(200)}${PAYLOAD}`;
    const big = q.request(draft({ raw_arguments: { text }, normalized_arguments: { text } }), { timeoutMs: 5_000 });
    const digest = presentation(big.card).digest;
    assert.equal(presentation(big.card).needsSeen, true);
    const unseen = (e: unknown): boolean => isPosternError(e, 'APPROVAL_UNSEEN') && !e.sideEffectStarted && e.requiredAction === 'show_the_whole_card_then_approve';
    assert.throws(() => q.decide(big.card.id, { verdict: 'approve', scope: 'once' }, 'op'), unseen);
    assert.throws(() => q.decide(big.card.id, { verdict: 'approve', scope: 'once', seen: { presentation: '0'.repeat(64) } }, 'op'), unseen);
    assert.equal(q.list().length, 1, 'still waiting');
    q.decide(big.card.id, { verdict: 'approve', scope: 'once', seen: { presentation: digest } }, 'op');
    assert.equal((await big.decision).kind, 'approved');
    const small = q.request(draft(), { timeoutMs: 5_000 });
    assert.equal(presentation(small.card).needsSeen, false);
    assert.throws(() => q.decide(small.card.id, { verdict: 'approve', scope: 'once', seen: { presentation: digest } }, 'op'), unseen, 'a seen naming another card is refused');
    const other = q.request(draft({ raw_arguments: { text }, normalized_arguments: { text } }), { timeoutMs: 5_000 });
    q.decide(other.card.id, { verdict: 'deny', reason: null }, 'op');
    assert.equal((await other.decision).kind, 'denied');
    q.decide(small.card.id, { verdict: 'approve', scope: 'once' }, 'op');
    assert.equal((await small.decision).kind, 'approved');
  });
});
