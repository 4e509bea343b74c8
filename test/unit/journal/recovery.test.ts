// @subject time: interrupted calls found at start (run again a year ahead by .ci/run)
/**
 * Crash mid-action (THREATS row 9): a process records an intent and is
 * SIGKILLed before its outcome. Reopening marks the call outcome_unknown,
 * lists it in `recovered`, and keeps its claim forever — a retry with the
 * same key is never run again, and later opens do not touch it.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openJournals } from '../../../src/journal/index.js';
import { callRecord, sshTarget, startChild, tempJournalDir } from './helpers.js';

describe('crash recovery', () => {
  const t = tempJournalDir();
  after(() => t.cleanup());

  it('an intent without an outcome after kill -9 becomes outcome_unknown and keeps its key', { timeout: 180_000 }, async () => {
    const child = startChild(['crash', t.dir, 'doomed-call', 'deploy-key-1']);
    try {
      assert.deepEqual(JSON.parse(await child.nextLine()), { intent: true });
    } finally {
      child.proc.kill('SIGKILL');
    }
    await child.exited;

    const j = openJournals(t.dir);
    try {
      assert.deepEqual(j.recovered, ['doomed-call']);
      const v = j.activity.getCall('doomed-call');
      assert.equal(v?.status, 'outcome_unknown');
      assert.equal(v?.outcome?.recovered, true);
      assert.equal(v?.outcome?.side_effect_started, null, 'unknown, not false');
      assert.equal(v?.outcome?.error_code, 'OUTCOME_UNKNOWN');
      assert.equal(v?.outcome?.claim, 'outcome_unknown');
      assert.deepEqual(v?.target, sshTarget);
      assert.equal(j.activity.findByKey('deploy_preview', 'deploy-key-1')?.state, 'outcome_unknown');

      const retry = callRecord({ idempotency_key: 'deploy-key-1', args_digest: 'sha256:same' });
      const r = j.activity.recordIntent({ ...retry, target: sshTarget });
      assert.equal(r.claimed, false);
      assert.equal(r.claimed ? undefined : r.existing.state, 'outcome_unknown');
      assert.equal(r.claimed ? undefined : r.existing.call_id, 'doomed-call');
      assert.deepEqual(j.activity.listCalls({ error_code: 'OUTCOME_UNKNOWN' }).map((c) => c.call.call_id), ['doomed-call']);
      assert.throws(
        () => j.activity.recordOutcome('doomed-call', { status: 'success', side_effect_started: true, duration_ms: 1 }),
        { code: 'INTERNAL' },
        'a late outcome cannot overwrite the recovered one',
      );
      assert.equal(j.activity.verify().ok, true);
    } finally {
      j.close();
    }

    const again = openJournals(t.dir);
    try {
      assert.deepEqual(again.recovered, [], 'recovered once, never twice');
      assert.equal(again.activity.findByKey('deploy_preview', 'deploy-key-1')?.state, 'outcome_unknown');
    } finally {
      again.close();
    }
  });

  it('recovers unkeyed calls too, and leaves finished ones alone', () => {
    const u = tempJournalDir();
    try {
      const j = openJournals(u.dir);
      const open = callRecord({ tool: 'read_status' });
      const finished = callRecord({ tool: 'read_status' });
      j.activity.recordIntent({ ...open, target: sshTarget });
      j.activity.recordIntent({ ...finished, target: sshTarget });
      j.activity.recordOutcome(finished.call_id, { status: 'success', side_effect_started: true, duration_ms: 2 });
      j.close(); // closed without an outcome: same as a crash for recovery
      const k = openJournals(u.dir);
      assert.deepEqual(k.recovered, [open.call_id]);
      assert.equal(k.activity.getCall(finished.call_id)?.status, 'success');
      k.close();
    } finally {
      u.cleanup();
    }
  });

  it('a read-only open (the audit beside a running daemon) does not recover or write', () => {
    const u = tempJournalDir();
    try {
      const daemon = openJournals(u.dir);
      const live = callRecord({ idempotency_key: 'live', args_digest: 'd' });
      daemon.activity.recordIntent({ ...live, target: sshTarget });
      const audit = openJournals(u.dir, { readonly: true });
      assert.deepEqual(audit.recovered, []);
      assert.equal(audit.activity.getCall(live.call_id)?.status, 'in_progress');
      assert.throws(() => audit.activity.recordIntent({ ...callRecord(), target: sshTarget }), { code: 'JOURNAL_UNAVAILABLE' });
      audit.close();
      daemon.activity.recordOutcome(live.call_id, { status: 'success', side_effect_started: true, duration_ms: 1 });
      assert.equal(daemon.activity.getCall(live.call_id)?.status, 'success');
      daemon.close();
    } finally {
      u.cleanup();
    }
  });
});
