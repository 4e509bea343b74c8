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

  it('APPROVAL_NOT_FOUND says what became of the card: expired, decided, withdrawn or unknown', async () => {
    const q = new ApprovalQueue(systemClock);
    const stateOf = (id: string): unknown => {
      try {
        q.decide(id, { verdict: 'approve', scope: 'once' }, 'op');
      } catch (e) {
        if (isPosternError(e, 'APPROVAL_NOT_FOUND')) return [e.details['state'], e.details['decision'] ?? null, e.message];
        throw e;
      }
      return 'decided now';
    };
    const expired = q.request(draft(), { timeoutMs: 10 });
    await expired.decision;
    const approved = q.request(draft(), { timeoutMs: 5_000 });
    q.decide(approved.card.id, { verdict: 'approve', scope: 'once' }, 'op');
    const denied = q.request(draft(), { timeoutMs: 5_000 });
    q.decide(denied.card.id, { verdict: 'deny', reason: null }, 'op');
    const voided = q.request(draft(), { timeoutMs: 5_000 });
    q.voidAll('vault locked');
    const rows: [string, string, string | null, RegExp][] = [
      [expired.card.id, 'expired', 'timeout', /expired at .*nobody decided in time/],
      [approved.card.id, 'decided', 'approved', /already approved \(once\)/],
      [denied.card.id, 'decided', 'denied', /already denied/],
      [voided.card.id, 'withdrawn', 'voided', /withdrawn/],
      ['no-such-id', 'unknown', null, /knows no approval with that id/],
    ];
    for (const [id, state, decision, message] of rows) {
      const got = stateOf(id) as [string, string | null, string];
      assert.deepEqual(got.slice(0, 2), [state, decision], id);
      assert.match(got[2], message);
    }
  });

  it('remembers the last 1024 resolved cards, forgetting the oldest first', async () => {
    const q = new ApprovalQueue(systemClock);
    const ids: string[] = [];
    for (let i = 0; i < 1025; i++) {
      const r = q.request(draft(), { timeoutMs: 5_000 });
      q.decide(r.card.id, { verdict: 'deny', reason: null }, 'op');
      ids.push(r.card.id);
      await r.decision;
    }
    assert.equal(q.resolved.get(ids[0] ?? ''), undefined, 'the oldest is forgotten');
    assert.equal(q.resolved.get(ids[1] ?? '')?.kind, 'denied');
    assert.equal(q.resolved.get(ids[1024] ?? '')?.kind, 'denied');
    assert.deepEqual(q.resolved.matching((ids[1024] ?? '').slice(0, 36)).map((r) => r.id), [ids[1024]]);
    assert.deepEqual(q.resolved.matching(''), []);
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
