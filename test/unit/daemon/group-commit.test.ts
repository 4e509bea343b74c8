/**
 * GroupCommit over a real activity journal: intents and outcomes asked for
 * together share one transaction (and one anchor flush), each is recorded
 * exactly as a single write records it, and one refused entry never fails
 * the others.
 */
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { openJournals, type Journals } from '../../../src/journal/index.js';
import { PosternError } from '../../../src/rules/errors.js';
import { GroupCommit } from '../../../src/daemon/pipeline/group-commit.js';
import { callRecord, httpTarget, steppingClock, tempJournalDir } from '../journal/helpers.js';

// Alone, a batch's fsync is made inside its commit; with calls in flight ("shared"), off the loop and shared (journal/wal-sync.ts).
for (const mode of ['alone', 'shared'] as const) {
const make = (j: Journals, o: { maxBatch?: number } = {}): GroupCommit => new GroupCommit(j.activity, mode === 'shared' ? { ...o, busy: () => true, windowMs: 0 } : o);
describe(`GroupCommit (${mode})`, () => {
  let t: ReturnType<typeof tempJournalDir>;
  let j: Journals;
  let durableFlushes: number;
  beforeEach(() => {
    t = tempJournalDir();
    durableFlushes = 0;
    j = openJournals(t.dir, { clock: steppingClock(), onCommit: (_journal, _head, durable) => void (durable && durableFlushes++) });
  });
  afterEach(() => {
    j.close();
    t.cleanup();
  });

  const intent = (over: Parameters<typeof callRecord>[0] = {}) => ({ ...callRecord({ call_id: randomUUID(), ...over }), target: httpTarget });

  it('intents asked for in one turn share one transaction and one anchor flush; each is journaled', async () => {
    const g = make(j);
    const rs = Array.from({ length: 20 }, (_, i) => intent({ idempotency_key: `k-${i}`, args_digest: `sha256:${i}` }));
    const results = await Promise.all(rs.map((r) => g.intent(r)));
    assert.ok(results.every((r) => r.claimed));
    assert.equal(g.commits, 1);
    assert.equal(durableFlushes, 1);
    for (const r of rs) assert.equal(j.activity.getCall(r.call_id)?.status, 'in_progress');
    assert.equal(j.activity.verify().ok, true);

    await Promise.all(rs.map((r, i) => g.outcome(r.call_id, { status: 'success', side_effect_started: true, response_status: 200, duration_ms: i })));
    assert.equal(g.commits, 2);
    for (const r of rs) assert.equal(j.activity.getCall(r.call_id)?.status, 'success');
    assert.equal(j.activity.findByKey(rs[0]!.tool, 'k-0')?.state, 'completed');
  });

  it('two intents with one key in one batch: the first claims it, the second finds it held', async () => {
    const g = make(j);
    const a = intent({ idempotency_key: 'same', args_digest: 'sha256:a' });
    const b = intent({ idempotency_key: 'same', args_digest: 'sha256:a' });
    const [ra, rb] = await Promise.all([g.intent(a), g.intent(b)]);
    assert.equal(ra.claimed, true);
    assert.equal(rb.claimed, false);
    assert.equal(rb.claimed === false ? rb.existing.call_id : null, a.call_id);
    assert.equal(j.activity.getCall(b.call_id), undefined);
  });

  it('a refused entry fails alone: the others in its batch are committed', async () => {
    const g = make(j);
    const good = intent();
    const dup = intent();
    await g.intent(dup);
    const again = { ...dup }; // the same call id journaled twice is refused
    const [ok, bad, out] = await Promise.allSettled([g.intent(good), g.intent(again), g.outcome(randomUUID(), { status: 'success', side_effect_started: true, duration_ms: 1 })]);
    assert.equal(ok.status, 'fulfilled');
    assert.equal(bad.status, 'rejected');
    assert.ok(bad.status === 'rejected' && bad.reason instanceof PosternError);
    assert.equal(out.status, 'rejected'); // no intent for that call
    assert.equal(j.activity.getCall(good.call_id)?.status, 'in_progress');
    assert.equal(j.activity.verify().ok, true);
  });

  it('a journal that refuses the whole commit fails every entry of the batch with JOURNAL_UNAVAILABLE', async () => {
    const g = make(j);
    j.close();
    const settled = await Promise.allSettled([g.intent(intent()), g.intent(intent())]);
    for (const s of settled) {
      assert.equal(s.status, 'rejected');
      assert.ok(s.status === 'rejected' && s.reason instanceof PosternError && s.reason.code === 'JOURNAL_UNAVAILABLE', String(s.status === 'rejected' ? s.reason : ''));
    }
    j = openJournals(t.dir, { clock: steppingClock() });
  });

  it('a batch larger than maxBatch is split over several commits, in order', async () => {
    const g = make(j, { maxBatch: 4 });
    const rs = Array.from({ length: 10 }, () => intent());
    await Promise.all(rs.map((r) => g.intent(r)));
    assert.equal(g.commits, 3);
    const seqs = rs.map((r) => j.activity.getCall(r.call_id)!.seq);
    assert.deepEqual(seqs, [...seqs].sort((x, y) => x - y));
  });
});
}
