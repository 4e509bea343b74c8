/**
 * The activity journal's deferred fsync (wal-sync.ts) and the group-commit
 * writes built on it: entries are committed at once and called durable only
 * after an fsync that began after them; concurrent callers share fsyncs; a
 * failed fsync is never reported as durable, and a keyed intent it covers
 * fails with `intent_committed` so nothing runs.
 */
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openJournals, type Journals } from '../../../src/journal/index.js';
import { WalSync } from '../../../src/journal/wal-sync.js';
import { ensureJournalDir, openJournalDb } from '../../../src/journal/database.js';
import { ACTIVITY_SCHEMA } from '../../../src/journal/activity-schema.js';
import { ActivityStore } from '../../../src/journal/activity-store.js';
import { createActivityJournal } from '../../../src/journal/activity.js';
import type { CommitHooks } from '../../../src/journal/hooks.js';
import { callRecord, httpTarget, steppingClock, tempJournalDir } from './helpers.js';

describe('WalSync', () => {
  let t: ReturnType<typeof tempJournalDir>;
  beforeEach(() => {
    t = tempJournalDir();
  });
  afterEach(() => t.cleanup());

  it('callers that arrive together share fsyncs; each resolves after an fsync that began after it', async () => {
    const path = join(t.dir, '..', 'file-wal');
    writeFileSync(path, 'x');
    const w = new WalSync(path);
    w.open();
    const first = w.sync(); // starts an fsync now
    const rest = Array.from({ length: 50 }, () => w.sync()); // all wait for the next one
    await first;
    assert.equal(w.syncs >= 1, true);
    const before = w.syncs;
    await Promise.all(rest);
    assert.equal(w.syncs, before + 1, 'the 50 late callers shared one fsync, which began after them');
    w.close();
  });

  it('a file that cannot be opened rejects every caller; nothing is called synced', async () => {
    const w = new WalSync(join(t.dir, '..', 'missing-wal'));
    const results = await Promise.allSettled([w.sync(), w.sync()]);
    assert.deepEqual(results.map((r) => r.status), ['rejected', 'rejected']);
    assert.equal(w.syncs, 0);
  });
});

describe('activity journal: writes with the fsync off the loop', () => {
  let t: ReturnType<typeof tempJournalDir>;
  let j: Journals;
  let heads: { seq: number; durable: boolean }[];
  beforeEach(() => {
    t = tempJournalDir();
    heads = [];
    j = openJournals(t.dir, { clock: steppingClock(), onCommit: (name, head, durable) => void (name === 'activity' && heads.push({ seq: head.seq, durable })) });
  });
  afterEach(() => {
    j.close();
    t.cleanup();
  });
  const intent = (over: Parameters<typeof callRecord>[0] = {}) => ({ ...callRecord({ call_id: randomUUID(), ...over }), target: httpTarget });

  it('commits at once, tells the anchor only once the fsync is done, and journals exactly what the synchronous write does', async () => {
    const r = intent({ idempotency_key: 'async-key-1', args_digest: 'sha256:1' });
    const pending = j.activity.recordIntentsAsync([r]);
    // Committed already (readable), but not yet announced to the anchor: its fsync is still running.
    assert.equal(j.activity.getCall(r.call_id)?.status, 'in_progress');
    assert.equal(heads.length, 0);
    const [one] = await pending;
    assert.equal(one?.ok === true && one.value.claimed, true);
    assert.deepEqual(heads, [{ seq: 1, durable: true }], 'a keyed intent is anchored durably, after its fsync');

    const [out] = await j.activity.recordOutcomesAsync([{ call_id: r.call_id, outcome: { status: 'success', side_effect_started: true, duration_ms: 1 } }]);
    assert.equal(out?.ok, true);
    assert.deepEqual(heads.at(-1), { seq: 2, durable: false });
    assert.equal(j.activity.findByKey(r.tool, 'async-key-1')?.state, 'completed');

    // The synchronous writes still work on the same connection (synchronous=FULL again) and the chain holds.
    const s = intent();
    j.activity.recordIntent(s);
    j.activity.recordOutcome(s.call_id, { status: 'success', side_effect_started: true, duration_ms: 1 });
    const v = j.activity.verify();
    assert.equal(v.ok && v.entries, 4);
  });

  it('a failed fsync fails a claimed intent with intent_committed and an outcome with outcome_committed; the anchor is never told', async () => {
    const dir = join(t.dir, '..', 'faulty');
    ensureJournalDir(dir);
    const db = openJournalDb(dir, ACTIVITY_SCHEMA, false, 'faulty');
    const told: boolean[] = [];
    const hooks: CommitHooks = { check: () => undefined, committed: (d) => void told.push(d), followed: () => ({ seq: 0, hash: '' }), synced: (_h, d) => void told.push(d), anchored: () => Promise.resolve(void told.push(true)) };
    const failing = { sync: () => Promise.reject(Object.assign(new Error('fsync failed'), { code: 'EIO' })) } as unknown as WalSync;
    const activity = createActivityJournal(new ActivityStore(db, () => new Date('2026-03-01T00:00:00Z')), hooks, failing);
    const r = intent({ idempotency_key: 'async-key-2', args_digest: 'sha256:2' });
    const [one] = await activity.recordIntentsAsync([r]);
    assert.equal(one?.ok, false);
    assert.equal(one?.ok === false && one.error.code, 'JOURNAL_UNAVAILABLE');
    assert.equal(one?.ok === false && one.error.details['intent_committed'], true);
    const [out] = await activity.recordOutcomesAsync([{ call_id: r.call_id, outcome: { status: 'error', side_effect_started: false, duration_ms: 0 } }]);
    assert.equal(out?.ok === false && out.error.details['outcome_committed'], true);
    assert.deepEqual(told, [], 'nothing was announced as committed to the anchor');
    db.close();
  });

  it('the WAL removed after the journal opened: the fsync still reaches the file SQLite writes', async () => {
    rmSync(join(t.dir, 'activity.db-wal'), { force: true });
    const [one] = await j.activity.recordIntentsAsync([intent({ idempotency_key: 'async-key-3', args_digest: 'sha256:3' })]);
    assert.equal(one?.ok, true);
  });
});
