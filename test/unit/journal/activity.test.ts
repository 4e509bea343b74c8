// @subject time: journal times and ranges (run again a year ahead by .ci/run)
/**
 * Activity journal: every DESIGN §8 field survives a round trip; getCall
 * merges intent and outcome; listCalls answers the audit's filters.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openJournals } from '../../../src/journal/index.js';
import type { Journals } from '../../../src/journal/index.js';
import { canonicalJson, sha256Hex } from '../../../src/journal/json.js';
import { callRecord, httpTarget, sshTarget, steppingClock, tempJournalDir } from './helpers.js';

describe('activity journal: round trip', () => {
  const t = tempJournalDir();
  let j: Journals;
  before(() => (j = openJournals(t.dir, { clock: steppingClock() })));
  after(() => {
    j.close();
    t.cleanup();
  });

  it('keeps every field of an intent and merges its outcome', () => {
    // raw arguments exactly as received: key order, a __proto__ own key, unicode, nesting
    const raw = JSON.parse('{"zeta":1,"__proto__":{"x":1},"branch":"feat/ü\\u202e","alpha":[1.5,-2,{"b":null,"a":"\\u0000"}]}') as unknown;
    const rec = callRecord({ raw_arguments: raw, idempotency_key: 'k-round', args_digest: 'sha256:rt' });
    assert.deepEqual(j.activity.recordIntent({ ...rec, target: sshTarget }), { claimed: true });

    const open = j.activity.getCall(rec.call_id);
    assert.equal(open?.status, 'in_progress');
    assert.deepEqual(open?.call, rec);
    assert.equal(JSON.stringify(open?.call.raw_arguments), JSON.stringify(raw), 'key order and __proto__ key kept');
    assert.deepEqual(open?.target, sshTarget);
    assert.equal(open?.outcome, null);

    j.activity.recordOutcome(rec.call_id, {
      status: 'success',
      side_effect_started: true,
      exit_code: 0,
      duration_ms: 812,
      result: { stdout: 'deployed [REDACTED:deploy-key]', exit_code: 0 },
      result_digest: 'sha256:res',
      target_extra: { offered_fingerprint: 'SHA256:abc' },
    });
    const done = j.activity.getCall(rec.call_id);
    assert.equal(done?.status, 'success');
    assert.deepEqual(done?.call, rec);
    assert.deepEqual(done?.outcome, {
      at: done?.outcome?.at,
      status: 'success',
      side_effect_started: true,
      error_code: null,
      response_status: null,
      exit_code: 0,
      connected_ip: null,
      duration_ms: 812,
      result: { stdout: 'deployed [REDACTED:deploy-key]', exit_code: 0 },
      result_digest: 'sha256:res',
      target_extra: { offered_fingerprint: 'SHA256:abc' },
      claim: 'completed',
      recovered: false,
    });
    assert.ok(done.outcome.at > done.journaled_at, 'outcome journaled after the intent');
  });

  it('fills the connected IP of an HTTP target from the outcome', () => {
    const rec = callRecord({ tool: 'github_create_issue', approval: null, adapter_applied: null, revision_seen: 3, revision_executed: 3 });
    j.activity.recordIntent({ ...rec, target: httpTarget });
    j.activity.recordOutcome(rec.call_id, { status: 'error', side_effect_started: true, error_code: 'TARGET_ERROR', response_status: 502, connected_ip: '140.82.112.5', duration_ms: 40 });
    const v = j.activity.getCall(rec.call_id);
    assert.equal(v?.status, 'error');
    assert.deepEqual(v?.target, { ...httpTarget, connected_ip: '140.82.112.5' });
    assert.equal(v?.outcome?.response_status, 502);
    assert.equal(v?.outcome?.error_code, 'TARGET_ERROR');
    assert.equal(v?.call.approval, null);
  });

  it('records a rejected call as one entry with its code and message, and a replay', () => {
    const rec = callRecord({ normalized_arguments: null, revision_executed: null, args_digest: null, decision_path: ['admit', 'resolve:current', 'validate'] });
    j.activity.recordRejected({ ...rec, error_code: 'VALIDATION_FAILED', message: 'branch: does not match pattern' });
    const v = j.activity.getCall(rec.call_id);
    assert.equal(v?.status, 'rejected');
    assert.deepEqual(v?.rejection, { error_code: 'VALIDATION_FAILED', message: 'branch: does not match pattern' });
    assert.deepEqual(v?.call, rec);
    assert.equal(v?.target, null);
    assert.equal(v?.outcome, null);

    const rep = callRecord({ idempotency_key: 'k-round', args_digest: 'sha256:rt' });
    j.activity.recordReplay({ ...rep, replay_of: 'call-original' });
    const r = j.activity.getCall(rep.call_id);
    assert.equal(r?.status, 'replayed');
    assert.equal(r?.replay_of, 'call-original');
  });

  it('refuses pipeline mistakes with INTERNAL, not a journal outage', () => {
    const rec = callRecord();
    j.activity.recordIntent({ ...rec, target: sshTarget });
    assert.throws(() => j.activity.recordIntent({ ...rec, target: sshTarget }), { code: 'INTERNAL' });
    assert.throws(() => j.activity.recordOutcome('no-such-call', { status: 'success', side_effect_started: true, duration_ms: 1 }), { code: 'INTERNAL' });
    j.activity.recordOutcome(rec.call_id, { status: 'success', side_effect_started: true, duration_ms: 1 });
    assert.throws(() => j.activity.recordOutcome(rec.call_id, { status: 'success', side_effect_started: true, duration_ms: 1 }), { code: 'INTERNAL' });
    assert.throws(() => j.activity.recordIntent({ ...callRecord({ idempotency_key: 'k', args_digest: null }), target: sshTarget }), { code: 'INTERNAL' });
    assert.throws(() => j.activity.recordOutcome(rec.call_id, { status: 'success', side_effect_started: true, duration_ms: 1, result: { n: 10n } }), { code: 'INTERNAL' });
    assert.equal(j.activity.verify().ok, true);
  });
});

describe('activity journal: listCalls filters', () => {
  const t = tempJournalDir();
  let j: Journals;
  const ids: Record<string, string> = {};
  before(() => {
    j = openJournals(t.dir, { clock: steppingClock('2026-04-01T00:00:00.000Z') });
    // seconds 1..: a(tool A, s1) b(tool B, s1) c(tool A, s2, rejected) d(tool A, s2, error) e(tool B, s2)
    const plan = [
      ['a', 'tool_a', 's1'],
      ['b', 'tool_b', 's1'],
      ['c', 'tool_a', 's2'],
      ['d', 'tool_a', 's2'],
      ['e', 'tool_b', 's2'],
    ] as const;
    for (const [name, tool, session_id] of plan) {
      const rec = callRecord({ tool, session_id, idempotency_key: `key-${name}`, args_digest: `d-${name}` });
      ids[name] = rec.call_id;
      if (name === 'c') j.activity.recordRejected({ ...rec, error_code: 'APPROVAL_DENIED', message: 'denied' });
      else j.activity.recordIntent({ ...rec, target: httpTarget });
      if (name === 'd') j.activity.recordOutcome(rec.call_id, { status: 'error', side_effect_started: true, error_code: 'TARGET_TIMEOUT', duration_ms: 30000 });
    }
  });
  after(() => {
    j.close();
    t.cleanup();
  });
  const names = (views: { call: { call_id: string } }[]): string[] =>
    views.map((v) => Object.keys(ids).find((k) => ids[k] === v.call.call_id) ?? '?');

  const cases = [
    { name: 'no filter: all, newest first', filter: {}, expect: ['e', 'd', 'c', 'b', 'a'] },
    { name: 'tool', filter: { tool: 'tool_a' }, expect: ['d', 'c', 'a'] },
    { name: 'session', filter: { session_id: 's1' }, expect: ['b', 'a'] },
    { name: 'tool + session', filter: { tool: 'tool_a', session_id: 's2' }, expect: ['d', 'c'] },
    { name: 'error code of a rejection', filter: { error_code: 'APPROVAL_DENIED' }, expect: ['c'] },
    { name: 'error code of an outcome', filter: { error_code: 'TARGET_TIMEOUT' }, expect: ['d'] },
    { name: 'idempotency key', filter: { idempotency_key: 'key-b' }, expect: ['b'] },
    // d's outcome was written at second 5, so e is journaled at second 6
    { name: 'since (inclusive)', filter: { since: '2026-04-01T00:00:03.000Z' }, expect: ['e', 'd', 'c'] },
    { name: 'until (exclusive)', filter: { until: '2026-04-01T00:00:03.000Z' }, expect: ['b', 'a'] },
    { name: 'since in another time zone notation', filter: { since: '2026-04-01T02:00:04+02:00' }, expect: ['e', 'd'] },
    { name: 'limit', filter: { limit: 2 }, expect: ['e', 'd'] },
    { name: 'nothing matches', filter: { tool: 'nope' }, expect: [] },
  ] as const;
  for (const c of cases) it(c.name, () => assert.deepEqual(names(j.activity.listCalls(c.filter)), c.expect));

  it('rejects a bad limit or date with INPUT_INVALID', () => {
    assert.throws(() => j.activity.listCalls({ limit: 0 }), { code: 'INPUT_INVALID' });
    assert.throws(() => j.activity.listCalls({ since: 'yesterday-ish' }), { code: 'INPUT_INVALID' });
  });

  it('lists raw arguments of every call for the release gate, marking rejections', () => {
    const all = [...j.activity.rawArgumentsByTool()];
    assert.equal(all.length, 5);
    assert.deepEqual(all[0], { tool: 'tool_a', revision: 1, raw_arguments: callRecord().raw_arguments, call_id: ids['a'], error_code: null });
    assert.equal(all.find((x) => x.call_id === ids['c'])?.error_code, 'APPROVAL_DENIED');
  });

  it('exports one JSON line per entry, re-hashable offline', () => {
    const lines: string[] = [];
    j.activity.exportJsonl((l) => lines.push(l));
    assert.equal(lines.length, 6);
    const first = JSON.parse(lines[0]!);
    assert.equal(first.journal, 'activity');
    assert.equal(first.seq, 1);
    assert.equal(first.kind, 'intent');
    assert.equal(first.data.call.call_id, ids['a']);
    assert.match(first.hash, /^[0-9a-f]{64}$/);
    assert.equal(JSON.parse(lines[1]!).prev_hash, first.hash);
    // An offline verifier needs only the export: body = JSON.stringify(data).
    let prev = '0'.repeat(64);
    for (const line of lines) {
      const { journal: _j, prev_hash, hash, data, ...cols } = JSON.parse(line);
      assert.equal(prev_hash, prev);
      assert.equal(sha256Hex(prev + canonicalJson({ ...cols, body: JSON.stringify(data) })), hash);
      prev = hash;
    }
  });
});
