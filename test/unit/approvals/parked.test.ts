// @subject time: parked-card lifetimes (run again a year ahead by .ci/run)
/** Cards left open for a call that stopped waiting (APPROVAL_PENDING): taken back once, dropped with their session or the vault. */
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApprovalQueue } from '../../../src/approvals/queue.js';
import type { ApprovalWait } from '../../../src/approvals/parked.js';
import { draft } from '../operator/helpers.js';
import { isPosternError } from '../../../src/rules/errors.js';
import { systemClock } from '../../../src/clock/index.js';

/** Every card a test opened, cancelled after it: an open card's 60 s timer would keep this process alive. */
const opened: AbortController[] = [];
afterEach(() => {
  for (const ctl of opened.splice(0)) ctl.abort();
});

function open(q: ApprovalQueue): ApprovalWait {
  const ctl = new AbortController();
  opened.push(ctl);
  const { card, decision } = q.request(draft(), { timeoutMs: 60_000, signal: ctl.signal });
  return { card, decision, cancel: () => ctl.abort() };
}

describe('ParkedApprovals', () => {
  it('an open card is taken back once, and its decision reaches the call that took it', async () => {
    const q = new ApprovalQueue(systemClock);
    const w = open(q);
    q.parked.park('k', 's1', w, 60_000);
    assert.deepEqual(q.list().map((c) => c.id), [w.card.id], 'the card stays in the queue');
    q.decide(w.card.id, { verdict: 'approve', scope: 'once' }, 'op');
    const back = q.parked.take('k');
    assert.ok(back !== undefined);
    assert.equal(back.card.id, w.card.id);
    assert.equal((await back.decision).kind, 'approved');
    assert.equal(q.parked.take('k'), undefined, 'a decision is consumed once');
  });

  it('a card cancelled while parked is dropped; nothing is left to take', async () => {
    const q = new ApprovalQueue(systemClock);
    const w = open(q);
    q.parked.park('k', 's1', w, 60_000);
    w.cancel();
    assert.equal((await w.decision).kind, 'cancelled');
    assert.equal(q.parked.take('k'), undefined);
    assert.throws(() => q.decide(w.card.id, { verdict: 'approve', scope: 'once' }, 'op'), (e) => isPosternError(e, 'APPROVAL_NOT_FOUND'));
  });

  it("the session's end cancels its open cards (they leave the queue) and leaves other sessions' alone", async () => {
    const q = new ApprovalQueue(systemClock);
    const mine = open(q);
    const theirs = open(q);
    q.parked.park('a', 's1', mine, 60_000);
    q.parked.park('b', 's2', theirs, 60_000);
    assert.equal(q.parked.dropSession('s1'), 1);
    assert.equal((await mine.decision).kind, 'cancelled');
    assert.deepEqual(q.list().map((c) => c.id), [theirs.card.id]);
    assert.equal(q.parked.take('b')?.card.id, theirs.card.id);
  });

  it('locking voids open cards and drops approvals given meanwhile', async () => {
    const q = new ApprovalQueue(systemClock);
    const pending = open(q);
    const approved = open(q);
    q.parked.park('p', 's1', pending, 60_000);
    q.parked.park('a', 's1', approved, 60_000);
    q.decide(approved.card.id, { verdict: 'approve', scope: 'once' }, 'op');
    await approved.decision;
    assert.equal(q.voidAll('vault locked'), 1);
    assert.equal((await pending.decision).kind, 'voided');
    assert.equal(q.parked.take('a'), undefined, 'an approval given before the lock does not survive it');
    assert.equal(q.parked.size, 0);
  });
});
