/**
 * A journal file with damaged pages (THREATS: journal faults): every way in
 * names it JOURNAL_DAMAGED in one line that says what to do — the open, a
 * write, the facts the anchor reads — and `verify` reports which entries
 * cannot be read instead of failing: the intact prefix, the unreadable range,
 * and whether entries after it can still be read.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { damagePage, type PageChoice } from '../../helpers/journal-damage.js';
import { openJournals } from '../../../src/journal/index.js';
import { isPosternError } from '../../../src/rules/errors.js';
import { callRecord, httpTarget, tempJournalDir } from './helpers.js';

const CANARY = 'CANARY-damaged-journal-secret';
const rejected = () => ({ ...callRecord({ raw_arguments: { echo: CANARY } }), target: httpTarget, error_code: 'VALIDATION_FAILED', message: 'x'.repeat(300) });

function damaged(e: unknown): boolean {
  assert.ok(isPosternError(e, 'JOURNAL_DAMAGED'), `expected JOURNAL_DAMAGED, got ${String(e)}`);
  assert.ok(!e.message.includes('\n'), 'one line');
  assert.match(e.message, /audit verify/);
  assert.ok(!e.message.includes(CANARY) && !JSON.stringify(e.details).includes(CANARY), 'no stored value in the error');
  return true;
}

/** Fills the journal, then damages one page of its file. */
function populatedThenDamaged(entries: number, choice: PageChoice): { dir: string; cleanup: () => void } {
  const t = tempJournalDir();
  const j = openJournals(t.dir);
  for (let i = 0; i < entries; i += 1) j.activity.recordRejected(rejected());
  j.close();
  damagePage(join(t.dir, 'activity.db'), choice);
  return t;
}

describe('a damaged journal', () => {
  it('a damaged leaf in the middle: verify names the unreadable range and that later entries read; a write refuses JOURNAL_DAMAGED', () => {
    const t = populatedThenDamaged(400, 'entries-middle-leaf');
    const j = openJournals(t.dir, { readonly: true });
    const report = j.activity.verify();
    j.close();
    assert.equal(report.ok, false);
    if (report.ok) return;
    assert.equal(report.reason, 'unreadable');
    assert.ok(report.first_bad_seq > 100 && report.first_bad_seq < 300, `first unreadable ${report.first_bad_seq}`);
    assert.equal(report.entries_checked, report.first_bad_seq - 1, 'the prefix before it is intact');
    const to = report.unreadable_to;
    assert.ok(typeof to === 'number' && to >= report.first_bad_seq && to < 300, `to ${String(to)}`);
    // Exactly the entries of the damaged leaf: the one before and the one after read.
    const r = openJournals(t.dir, { readonly: true });
    const facts = r.facts().activity;
    assert.equal(facts.head.seq, 400, 'where the journal ends still reads');
    assert.match(String(facts.hashAt(to + 1)), /^[0-9a-f]{64}$/, 'the entry after the range reads');
    assert.throws(() => facts.hashAt(to), (e: unknown) => (e as { code?: string }).code === 'SQLITE_CORRUPT', 'the last of the range does not');
    r.close();
    assert.throws(() => {
      const k = openJournals(t.dir);
      try {
        k.activity.verify();
        k.activity.recordIntent({ ...callRecord({}), target: httpTarget });
        // A write that lands on intact pages may pass; reading the damaged range must not.
        k.activity.listCalls({ limit: 10_000 });
      } finally {
        k.close();
      }
    }, damaged);
    t.cleanup();
  });

  it('the table root damaged: where the journals end (what the anchor reads) is JOURNAL_DAMAGED, not INTERNAL; verify: unreadable from seq 1, nothing after', () => {
    const t = populatedThenDamaged(400, 'entries-root');
    const j = openJournals(t.dir, { readonly: true });
    assert.throws(() => j.facts(), damaged);
    assert.deepEqual(j.activity.verify(), { ok: false, entries_checked: 0, first_bad_seq: 1, reason: 'unreadable', unreadable_to: null });
    j.close();
    assert.throws(() => openJournals(t.dir).close(), damaged, 'the writer (the daemon) refuses at open: recovery reads the open calls');
    t.cleanup();
  });
});
