// @subject time: card countdowns and expiry (run again a year ahead by .ci/run)
/**
 * @isolated: ink (with CI=true) keeps a process open when two of these files share one.
 * The pending-approvals view driven by keys, on the real TUI with an
 * in-memory OperatorClient that records what the UI asks.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeOperator, card, emptySnapshot } from './fake-client.js';
import { T0, manualClock, mount } from './harness.js';
import { presentation } from '../../../src/protocol/operator/index.js';

const A = card({ id: 'aaaa1111-card', tool: 'first_tool', requested_at: '2026-01-01T00:00:00.000Z' });
const B = card({ id: 'bbbb2222-card', tool: 'second_tool', requested_at: '2026-01-01T00:00:05.000Z' });

describe('approvals view', () => {
  it('shows the oldest card first with "N of M" and a countdown from the injected clock', async () => {
    const c = new FakeOperator('operator', emptySnapshot({ pending: [B, A] }));
    const m = mount(c, { now: () => T0 });
    const f = await m.waitFor((f) => f.includes('Approval 1 of 2'), 'the queue');
    assert.match(f, /first_tool/);
    assert.match(f, /expires in 1m30s/);
    m.unmount();
  });

  it('a approves once, bound to the card id and its call digest', async () => {
    const c = new FakeOperator('operator', emptySnapshot({ pending: [A] }), true);
    const m = mount(c);
    await m.waitFor((f) => f.includes('first_tool'), 'the card');
    m.press('a');
    const r = await c.nextRequest(0);
    assert.equal(r.op, 'approvals.decide');
    assert.deepEqual(r.params, { approval_id: A.id, verdict: { verdict: 'approve', scope: 'once', call_digest: A.call_digest, seen: { presentation: presentation(A).digest } } });
    await m.waitFor((f) => f.includes('No calls are waiting'), 'the queue empties');
    m.unmount();
  });

  it('s approves for the session; d denies; r denies with a typed reason', async () => {
    const C = card({ id: 'cccc3333-card', tool: 'third_tool', requested_at: '2026-01-01T00:00:09.000Z' });
    const c = new FakeOperator('operator', emptySnapshot({ pending: [A, B, C] }), true);
    const m = mount(c);
    await m.waitFor((f) => f.includes('first_tool') && f.includes('s approve for session'), 'the card');
    m.press('s');
    await m.waitFor((f) => f.includes('second_tool'), 'the next card after the decision');
    m.press('d');
    await m.waitFor((f) => f.includes('third_tool'), 'the third card');
    m.press('r');
    await m.waitFor((f) => f.includes('deny reason:'), 'the reason prompt');
    m.press('not on a Friday');
    await m.waitFor((f) => f.includes('not on a Friday'), 'the typed reason');
    m.press('\r');
    await m.waitFor((f) => f.includes('No calls are waiting'), 'all decided');
    assert.deepEqual(
      c.requests.map((r) => [r.params.approval_id, r.params.verdict]),
      [
        [A.id, { verdict: 'approve', scope: 'session', call_digest: A.call_digest, seen: { presentation: presentation(A).digest } }],
        [B.id, { verdict: 'deny', reason: null }],
        [C.id, { verdict: 'deny', reason: 'not on a Friday' }],
      ],
    );
    m.unmount();
  });

  it('two pending cards decided out of order each get their own decision', async () => {
    const c = new FakeOperator('operator', emptySnapshot({ pending: [A, B] }));
    const m = mount(c);
    await m.waitFor((f) => f.includes('first_tool'), 'card A');
    m.press('n');
    await m.waitFor((f) => f.includes('Approval 2 of 2') && f.includes('second_tool'), 'card B');
    m.press('a');
    const rb = await c.nextRequest(0);
    await m.waitFor((f) => f.includes('sending approve once'), 'B in flight');
    m.press('p');
    await m.waitFor((f) => f.includes('Approval 1 of 2') && f.includes('first_tool'), 'back to card A');
    m.press('d');
    const ra = await c.nextRequest(1);
    // Answer A first, then B: each answer and event lands on its own card.
    c.answerDecision(ra);
    await m.waitFor((f) => f.includes('Approval 1 of 1') && f.includes('second_tool'), 'A gone, B still waiting');
    c.answerDecision(rb);
    await m.waitFor((f) => f.includes('No calls are waiting'), 'both decided');
    assert.deepEqual(rb.params, { approval_id: B.id, verdict: { verdict: 'approve', scope: 'once', call_digest: B.call_digest, seen: { presentation: presentation(B).digest } } });
    assert.deepEqual(ra.params, { approval_id: A.id, verdict: { verdict: 'deny', reason: null } });
    assert.equal(c.requests.length, 2);
    m.unmount();
  });

  it('a new arrival never replaces the card on screen; the bell rings and the title counts', async () => {
    const seen: [number, boolean][] = [];
    let rangForTwo!: () => void;
    const rang = new Promise<void>((r) => (rangForTwo = r));
    const c = new FakeOperator('operator', emptySnapshot({ pending: [B] }));
    const m = mount(c, {
      attention: (n, ring) => {
        seen.push([n, ring]);
        if (n === 2 && ring) rangForTwo();
      },
    });
    await m.waitFor((f) => f.includes('second_tool'), 'card B');
    // An older-stamped card arrives: it sorts first, but B stays on screen.
    c.emit({ type: 'approval.added', card: A });
    await m.waitFor((f) => f.includes('Approval 2 of 2'), 'the count grows');
    assert.match(m.frame(), /second_tool/);
    assert.doesNotMatch(m.frame(), /first_tool/);
    m.press('a');
    const r = await c.nextRequest(0);
    assert.equal(r.params.approval_id, B.id);
    await rang;
    assert.deepEqual(seen, [[0, false], [1, true], [2, true]]);
    m.unmount();
  });

  it('a card resolved elsewhere stays named until the operator moves; its keys are gone', async () => {
    const c = new FakeOperator('operator', emptySnapshot({ pending: [A, B] }));
    const m = mount(c);
    await m.waitFor((f) => f.includes('first_tool'), 'card A');
    c.emit({ type: 'approval.resolved', id: A.id, decision: { kind: 'timeout', at: '2026-01-01T00:02:00.000Z' } });
    await m.waitFor((f) => f.includes('The request on screen was timed out'), 'the notice');
    assert.doesNotMatch(m.frame(), /second_tool/);
    m.press('a');
    m.press('n');
    await m.waitFor((f) => f.includes('second_tool'), 'the next card on n');
    assert.equal(c.requests.length, 0, 'a key pressed on the notice decided nothing');
    m.unmount();
  });

  it('session approval is not offered for a widening call, and the bar says why', async () => {
    const W = card({ id: 'wwww-card', widening: ['new host api.other.example'], scope_allowed: 'per-call' });
    const c = new FakeOperator('operator', emptySnapshot({ pending: [W] }));
    const m = mount(c);
    const f = await m.waitFor((f) => f.includes('WIDENS'), 'the widening card');
    assert.match(f, /session approval is not offered: this revision widens authority/);
    assert.doesNotMatch(f, /s approve for session/);
    m.press('s');
    await m.waitFor((f) => f.includes('a approve once'), 'still on the card');
    assert.equal(c.requests.length, 0);
    m.unmount();
  });

  it('session approval is not offered for a card not fully shown; details show it all and scroll', async () => {
    const long = card({ id: 'llll-card', tool: 'long_tool', target: { ...A.target, kind: 'http', body: 'x'.repeat(600) } as typeof A.target });
    const c = new FakeOperator('operator', emptySnapshot({ pending: [long] }));
    const m = mount(c);
    const f = await m.waitFor((f) => f.includes('long_tool'), 'the card');
    assert.match(f, /more characters \(x: details\)/);
    // Neither approval is offered until the whole card has been seen (the bar says how).
    assert.match(f, /approval is not offered until every row is seen/);
    m.press('s');
    m.press('x');
    const d = await m.waitFor((f) => f.includes('x compact'), 'details');
    assert.doesNotMatch(d, /more characters/);
    m.press('G');
    await m.waitFor((f) => f.includes('digest      digest-llll-card') && f.includes('s approve for session'), 'scrolled to the digest: now seen, session approval offered');
    m.press('\x1b');
    await m.waitFor((f) => f.includes('more characters'), 'back to the compact card');
    assert.equal(c.requests.length, 0);
    m.unmount();
  });

  it('a card whose contract changed while it waited is marked STALE and cannot be approved', async () => {
    const c = new FakeOperator('operator', emptySnapshot({ pending: [A] }));
    const m = mount(c);
    await m.waitFor((f) => f.includes('first_tool'), 'card A');
    c.emit({ type: 'approval.stale', id: A.id, reason: 'the catalog changed: first_tool is now r4' });
    const f = await m.waitFor((f) => f.includes('STALE'), 'the stale mark');
    assert.match(f, /first_tool is now r4/);
    assert.match(f, /approval is not offered: the contract changed/);
    m.press('a');
    m.press('d');
    const r = await c.nextRequest(0);
    assert.deepEqual(r.params.verdict, { verdict: 'deny', reason: null });
    assert.equal(c.requests.length, 1);
    m.unmount();
  });

  it('an expired card offers no decision', async () => {
    const c = new FakeOperator('operator', emptySnapshot({ pending: [A] }));
    const m = mount(c, { now: () => Date.parse(A.expires_at) + 1000 });
    const f = await m.waitFor((f) => f.includes('expired'), 'the expired card');
    assert.match(f, /this request has expired/);
    m.press('a');
    m.press('x');
    await m.waitFor((f) => f.includes('x compact'), 'details');
    assert.equal(c.requests.length, 0);
    m.unmount();
  });

  it('a refused decision shows the daemon\'s error on the card and keeps it', async () => {
    const c = new FakeOperator('operator', emptySnapshot({ pending: [A] }));
    const m = mount(c);
    await m.waitFor((f) => f.includes('first_tool'), 'card A');
    m.press('a');
    const r = await c.nextRequest(0);
    r.reject(Object.assign(new Error('the call differs from what was approved'), { code: 'APPROVAL_MISMATCH' }));
    const f = await m.waitFor((f) => f.includes('APPROVAL_MISMATCH'), 'the error');
    assert.match(f, /first_tool/);
    assert.match(f, /a approve once/);
    m.unmount();
  });

  it('an observer has no deciding key and sends nothing', async () => {
    const c = new FakeOperator('observer', emptySnapshot({ pending: [A] }));
    const m = mount(c, { observe: true });
    const f = await m.waitFor((f) => f.includes('first_tool'), 'card A');
    assert.match(f, /observer \(read-only\)/);
    assert.doesNotMatch(f, /approve once|deny with reason/);
    m.press('a');
    m.press('s');
    m.press('d');
    m.press('r');
    await m.waitFor((f) => f.includes('deciding is disabled'), 'the refusal');
    m.press('?');
    const h = await m.waitFor((f) => f.includes('Keys (any key closes'), 'help');
    assert.doesNotMatch(h, /approve this call once/);
    assert.equal(c.requests.length, 0);
    m.unmount();
  });

  it('quitting with calls pending asks first; n keeps the TUI, y quits', async () => {
    const c = new FakeOperator('operator', emptySnapshot({ pending: [A] }));
    const m = mount(c);
    await m.waitFor((f) => f.includes('first_tool'), 'card A');
    m.press('q');
    await m.waitFor((f) => f.includes('1 call is waiting for a decision. Quit anyway? y/N'), 'the question');
    m.press('n');
    await m.waitFor((f) => f.includes('a approve once'), 'back');
    assert.equal(m.quits, 0);
    m.press('q');
    await m.waitFor((f) => f.includes('Quit anyway?'), 'the question again');
    m.press('y');
    await m.quitted;
    assert.equal(c.requests.length, 0);
    m.unmount();
  });

  it('attaching with cards waiting shows the oldest card at once: no frame asks for n', async () => {
    const C = card({ id: 'cccc3333-card', tool: 'third_tool', requested_at: '2026-01-01T00:00:09.000Z' });
    const c = new FakeOperator('operator', emptySnapshot({ pending: [C, B, A] }));
    const m = mount(c);
    const f = await m.waitFor((f) => f.includes('Approval 1 of 3'), 'the oldest card');
    assert.match(f, /first_tool/);
    assert.deepEqual(m.frames().filter((f) => /waiting: press n/.test(f)), []);
    m.unmount();
  });

  it('a double-pressed a decides only the card on screen: the next card waits for a fresh key, and says why', async () => {
    const clock = manualClock(0);
    const c = new FakeOperator('operator', emptySnapshot({ pending: [A, B] }), true);
    const m = mount(c, { monotonicMs: clock });
    await m.waitFor((f) => f.includes('first_tool') && f.includes('deciding waits a moment: the card on screen just changed'), 'card A, just shown');
    clock.advance(600);
    m.press('a');
    m.press('a');
    const f = await m.waitFor((f) => f.includes('second_tool') && f.includes('a ignored: the card on screen just changed'), 'card B, the second a ignored');
    assert.doesNotMatch(f, /a approve once/);
    assert.deepEqual(c.requests.map((r) => r.params.approval_id), [A.id]);
    clock.advance(600);
    m.press('a');
    await m.waitFor((f) => f.includes('No calls are waiting'), 'B approved by a fresh key');
    assert.deepEqual(c.requests.map((r) => r.params.approval_id), [A.id, B.id]);
    m.unmount();
  });

  it('Esc never quits, not even from the top with nothing waiting; q does', async () => {
    const c = new FakeOperator('operator', emptySnapshot());
    const m = mount(c);
    await m.waitFor((f) => f.includes('No calls are waiting'), 'the empty queue');
    m.press('\x1b');
    await m.waitFor((f) => f.includes('Esc goes back; q quits'), 'the hint');
    assert.equal(m.quits, 0);
    m.press('q');
    await m.quitted;
    m.unmount();
  });
});
