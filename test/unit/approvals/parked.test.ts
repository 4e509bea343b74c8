// @subject time: parked-card lifetimes (run again a year ahead by .ci/run)
/**
 * Cards left open for a call that stopped waiting (APPROVAL_PENDING): taken back once, by any session
 * when keyed (a keyless one only by its own, and dropped with it), dropped with the vault; an entry no
 * call took back reports how it ended, once.
 */
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApprovalQueue } from '../../../src/approvals/queue.js';
import type { ApprovalWait } from '../../../src/approvals/parked.js';
import { draft } from '../operator/helpers.js';
import { isPosternError } from '../../../src/rules/errors.js';
import { systemClock } from '../../../src/clock/index.js';
import { waitFor } from '../../helpers/wait.js';

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
    const back = q.parked.take('k', 's1');
    assert.ok(back !== undefined);
    assert.equal(back.card.id, w.card.id);
    assert.equal((await back.decision).kind, 'approved');
    assert.equal(q.parked.take('k', 's1'), undefined, 'a decision is consumed once');
  });

  it('a card cancelled while parked is dropped; nothing is left to take', async () => {
    const q = new ApprovalQueue(systemClock);
    const w = open(q);
    q.parked.park('k', 's1', w, 60_000);
    w.cancel();
    assert.equal((await w.decision).kind, 'cancelled');
    assert.equal(q.parked.take('k', 's1'), undefined);
    assert.throws(() => q.decide(w.card.id, { verdict: 'approve', scope: 'once' }, 'op'), (e) => isPosternError(e, 'APPROVAL_NOT_FOUND'));
  });

  it("the session's end cancels the open cards bound to it (they leave the queue) and leaves other sessions' alone", async () => {
    const q = new ApprovalQueue(systemClock);
    const mine = open(q);
    const theirs = open(q);
    q.parked.park('a', 's1', mine, 60_000);
    q.parked.park('b', 's2', theirs, 60_000);
    assert.equal(q.parked.dropSession('s1'), 1);
    assert.equal((await mine.decision).kind, 'cancelled');
    assert.deepEqual(q.list().map((c) => c.id), [theirs.card.id]);
    assert.equal(q.parked.take('b', 's2')?.card.id, theirs.card.id);
  });

  it("a keyed entry outlives its session's end and is taken by another session; a bound one only by its own", async () => {
    const q = new ApprovalQueue(systemClock);
    const keyed = open(q);
    const bound = open(q);
    q.parked.park('keyed', null, keyed, 60_000);
    q.parked.park('bound', 's1', bound, 60_000);
    assert.equal(q.parked.take('bound', 's2'), undefined, 'another session cannot take a keyless call back');
    assert.equal(q.parked.dropSession('s1'), 1);
    assert.equal((await bound.decision).kind, 'cancelled');
    assert.deepEqual(q.list().map((c) => c.id), [keyed.card.id], 'the keyed card stays in the queue');
    q.decide(keyed.card.id, { verdict: 'approve', scope: 'once' }, 'op');
    assert.equal(q.parked.take('keyed', 's2')?.card.id, keyed.card.id, 'a reconnected agent takes the decision');
  });

  it('an entry that leaves without being taken reports its decision once; a taken one never does', async () => {
    const q = new ApprovalQueue(systemClock);
    const heard: string[] = [];
    const denied = open(q);
    const cancelled = open(q);
    const taken = open(q);
    const replaced = open(q);
    q.parked.park('d', null, denied, 0, (d) => heard.push(`d:${d.kind}`));
    q.parked.park('c', null, cancelled, 60_000, (d) => heard.push(`c:${d.kind}`));
    q.parked.park('t', null, taken, 60_000, (d) => heard.push(`t:${d.kind}`));
    q.parked.park('r', null, replaced, 60_000, (d) => heard.push(`r:${d.kind}`));
    q.decide(denied.card.id, { verdict: 'deny', reason: null }, 'op');
    cancelled.cancel();
    q.decide(taken.card.id, { verdict: 'approve', scope: 'once' }, 'op');
    await taken.decision;
    assert.ok(q.parked.take('t', 's9') !== undefined);
    q.decide(replaced.card.id, { verdict: 'approve', scope: 'once' }, 'op');
    await replaced.decision;
    q.parked.park('r', null, open(q), 60_000);
    await waitFor(() => heard.length === 3, 'three entries to report');
    assert.deepEqual(heard.sort(), ['c:cancelled', 'd:denied', 'r:approved']);
    q.parked.clear();
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
    assert.equal(q.parked.take('a', 's1'), undefined, 'an approval given before the lock does not survive it');
    assert.equal(q.parked.size, 0);
  });
});
