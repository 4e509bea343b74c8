/**
 * Idempotency claims (THREATS row 10): a key is claimed atomically with the
 * intent; a second claim sees the holder; a completed call keeps its result
 * for replay; a failure before any effect releases the key; and 20 processes
 * racing for one key produce exactly one claim.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openJournals } from '../../../src/journal/index.js';
import type { Journals } from '../../../src/journal/index.js';
import { callRecord, httpTarget, startChild, tempJournalDir } from './helpers.js';

describe('idempotency claims', () => {
  const t = tempJournalDir();
  let j: Journals;
  before(() => (j = openJournals(t.dir)));
  after(() => {
    j.close();
    t.cleanup();
  });
  const keyed = (key: string, over = {}) => ({ ...callRecord({ idempotency_key: key, args_digest: `digest-${key}`, ...over }), target: httpTarget });

  it('claims a free key; a second call with the key gets the holder, in progress', () => {
    const first = keyed('k1');
    assert.deepEqual(j.activity.recordIntent(first), { claimed: true });
    const second = keyed('k1', { args_digest: 'other-args', session_id: 'sess-2' });
    const r = j.activity.recordIntent(second);
    assert.deepEqual(r, {
      claimed: false,
      existing: { call_id: first.call_id, tool: first.tool, key: 'k1', args_digest: 'digest-k1', state: 'in_progress', session_id: 'sess-1' },
    });
    assert.equal(j.activity.getCall(second.call_id), undefined, 'a refused claim writes nothing');
    assert.deepEqual(j.activity.findByKey(first.tool, 'k1'), r.claimed ? undefined : r.existing);
  });

  it('the same key on another tool is a different claim', () => {
    assert.deepEqual(j.activity.recordIntent(keyed('k1', { tool: 'other_tool' })), { claimed: true });
  });

  it('success completes the claim and stores the result for replay', () => {
    const c = keyed('k2');
    j.activity.recordIntent(c);
    j.activity.recordOutcome(c.call_id, { status: 'success', side_effect_started: true, response_status: 201, duration_ms: 9, result: { status: 201, json: { number: 42 } } });
    const held = j.activity.findByKey(c.tool, 'k2');
    assert.equal(held?.state, 'completed');
    assert.equal(held?.status, 'success');
    assert.deepEqual(held?.result, { status: 201, json: { number: 42 } });
    const again = j.activity.recordIntent(keyed('k2'));
    assert.equal(again.claimed, false);
    assert.deepEqual(again.claimed ? undefined : again.existing.result, { status: 201, json: { number: 42 } });
  });

  it('a failure after the effect started keeps the key (completed with the error)', () => {
    const c = keyed('k3');
    j.activity.recordIntent(c);
    j.activity.recordOutcome(c.call_id, { status: 'error', side_effect_started: true, error_code: 'TARGET_ERROR', duration_ms: 3, result: { error_code: 'TARGET_ERROR' } });
    const held = j.activity.findByKey(c.tool, 'k3');
    assert.equal(held?.state, 'completed');
    assert.equal(held?.status, 'error');
    assert.equal(held?.error_code, 'TARGET_ERROR');
  });

  it('a failure before any effect releases the key, and a new call can claim it', () => {
    const c = keyed('k4');
    j.activity.recordIntent(c);
    j.activity.recordOutcome(c.call_id, { status: 'error', side_effect_started: false, error_code: 'EGRESS_BLOCKED', duration_ms: 1 });
    assert.equal(j.activity.findByKey(c.tool, 'k4'), undefined);
    assert.equal(j.activity.getCall(c.call_id)?.outcome?.claim, 'released');
    const retry = keyed('k4');
    assert.deepEqual(j.activity.recordIntent(retry), { claimed: true });
    assert.equal(j.activity.findByKey(c.tool, 'k4')?.call_id, retry.call_id);
  });

  it('an outcome_unknown outcome (timeout after sending) keeps the key forever', () => {
    const c = keyed('k5');
    j.activity.recordIntent(c);
    j.activity.recordOutcome(c.call_id, { status: 'outcome_unknown', side_effect_started: true, error_code: 'TARGET_TIMEOUT', duration_ms: 30000 });
    assert.equal(j.activity.findByKey(c.tool, 'k5')?.state, 'outcome_unknown');
    assert.equal(j.activity.recordIntent(keyed('k5')).claimed, false);
  });

  it('a rejected call never touches the claims', () => {
    const c = callRecord({ idempotency_key: 'k6', args_digest: 'd' });
    j.activity.recordRejected({ ...c, error_code: 'APPROVAL_DENIED', message: 'no' });
    assert.equal(j.activity.findByKey(c.tool, 'k6'), undefined);
    assert.equal(j.activity.verify().ok, true);
  });
});

describe('idempotency claims across processes', () => {
  const t = tempJournalDir();
  after(() => t.cleanup());

  it('20 processes racing for one key: exactly one claims it, the others see that holder', { timeout: 300_000 }, async () => {
    openJournals(t.dir).close(); // create the files before the race
    const children = Array.from({ length: 20 }, (_, i) => startChild(['claim', t.dir, `racer-${i}`, 'the-key']));
    try {
      for (const c of children) assert.deepEqual(JSON.parse(await c.nextLine()), { ready: true });
      for (const c of children) c.proc.stdin.write('go\n'); // released together, after every open (and its recovery) is done
      const results = await Promise.all(children.map(async (c) => JSON.parse(await c.nextLine()) as Record<string, unknown>));
      await Promise.all(children.map((c) => c.exited));

      const winners = results.filter((r) => r['claimed'] === true);
      assert.equal(winners.length, 1, JSON.stringify(results));
      const losers = results.filter((r) => r['claimed'] === false);
      assert.equal(losers.length, 19, 'every other process got an answer, not a journal error');
      const j = openJournals(t.dir);
      try {
        assert.deepEqual(j.recovered, []);
        const holder = j.activity.findByKey('deploy_preview', 'the-key');
        assert.equal(holder?.state, 'completed');
        assert.deepEqual(holder?.result, { ran: holder?.call_id });
        for (const l of losers) assert.equal((l['existing'] as { call_id: string }).call_id, holder?.call_id);
        assert.equal(j.activity.listCalls().length, 1, 'only the winner journaled an intent');
        assert.equal(j.activity.verify().ok, true);
      } finally {
        j.close();
      }
    } finally {
      for (const c of children) if (c.proc.exitCode === null) c.proc.kill('SIGKILL');
    }
  });
});
