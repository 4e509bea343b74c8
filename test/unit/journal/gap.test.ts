/**
 * The gap of a restored journal (src/journal/gap.ts), folded from the
 * sessions journal's events in order: a key read as claimed in the gap is
 * refused, any unknown key too while part of the gap was not read, a release
 * lets one key run, closing the gap lets every key run, and a later restore
 * holds its own keys again.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openJournals } from '../../../src/journal/index.js';
import { JournalGap, MAX_RECORD_KEYS } from '../../../src/journal/gap.js';

function journals(): { j: ReturnType<typeof openJournals>; done: () => void } {
  const root = mkdtempSync(join(tmpdir(), 'postern-gap-'));
  const j = openJournals(join(root, 'journal'));
  return { j, done: () => (j.close(), rmSync(root, { recursive: true, force: true })) };
}

describe('JournalGap', () => {
  it('no restore: nothing is held', () => {
    const { j, done } = journals();
    const g = JournalGap.read(j.sessions);
    assert.equal(g.open, false);
    assert.equal(g.refusal('t', 'k'), undefined);
    assert.equal(g.describe(), null);
    done();
  });

  it('a gap read whole holds only its keys; a release lets one run; a later restore holds it again', () => {
    const { j, done } = journals();
    j.sessions.event(null, 'journal_restored', { keys: [{ tool: 't', key: 'a' }, { tool: 't', key: 'b' }], complete: true });
    let g = JournalGap.read(j.sessions);
    assert.equal(g.refusal('t', 'a')?.because, 'journal_gap_claimed');
    assert.equal(g.refusal('u', 'a'), undefined, 'keys are per tool');
    assert.equal(g.refusal('t', 'new'), undefined, 'a new key runs');
    j.sessions.event(null, 'journal_key_released', { tool: 't', key: 'a' });
    g = JournalGap.read(j.sessions);
    assert.equal(g.refusal('t', 'a'), undefined);
    assert.equal(g.refusal('t', 'b')?.because, 'journal_gap_claimed');
    assert.match(g.describe() ?? '', /holds 1 key/);
    j.sessions.event(null, 'journal_restored', { keys: [{ tool: 't', key: 'a' }], complete: true });
    assert.equal(JournalGap.read(j.sessions).refusal('t', 'a')?.because, 'journal_gap_claimed');
    done();
  });

  it('a gap not read whole refuses every unknown key until it is closed', () => {
    const { j, done } = journals();
    j.sessions.event(null, 'journal_restored', { keys: [], complete: false });
    let g = JournalGap.read(j.sessions);
    assert.equal(g.refusal('t', 'anything')?.because, 'journal_gap_unread');
    assert.equal(g.open, true);
    j.sessions.event(null, 'journal_key_released', { tool: 't', key: 'checked' });
    g = JournalGap.read(j.sessions);
    assert.equal(g.refusal('t', 'checked'), undefined);
    assert.equal(g.refusal('t', 'other')?.because, 'journal_gap_unread');
    j.sessions.event(null, 'journal_gap_closed', { by: 'operator' });
    g = JournalGap.read(j.sessions);
    assert.equal(g.open, false);
    assert.equal(g.refusal('t', 'other'), undefined);
    done();
  });
});

describe('JournalGap records: what outlives a swapped journal', () => {
  it('a carried record is the whole state: the fold starts over from it, then holds the new gap', () => {
    const { j, done } = journals();
    // What the backup shows (an older restore, a release the record no longer needs)...
    j.sessions.event(null, 'journal_restored', { keys: [{ tool: 't', key: 'old' }, { tool: 't', key: 'gone' }], complete: true });
    // ...then the restore's own entry, carrying the vault's record.
    j.sessions.event(null, 'journal_restored', { keys: [{ tool: 't', key: 'new' }], complete: true, carried: { held: [{ tool: 't', key: 'old' }], released: [], unread: false } });
    const g = JournalGap.read(j.sessions);
    assert.equal(g.refusal('t', 'old')?.because, 'journal_gap_claimed');
    assert.equal(g.refusal('t', 'new')?.because, 'journal_gap_claimed');
    assert.equal(g.refusal('t', 'gone'), undefined, 'released before: the record no longer holds it');
    assert.deepEqual(g.record(), { held: [{ tool: 't', key: 'old' }, { tool: 't', key: 'new' }], released: [], unread: false });
    done();
  });

  it('an unread gap carries its releases; a malformed carried record reads as unread; a new journal started with a gap holds it', () => {
    const { j, done } = journals();
    j.sessions.event(null, 'journal_restored', { keys: [], complete: false });
    j.sessions.event(null, 'journal_key_released', { tool: 't', key: 'checked' });
    const r = JournalGap.read(j.sessions).record();
    assert.deepEqual(r, { held: [], released: [{ tool: 't', key: 'checked' }], unread: true });
    const again = JournalGap.fromRecord(r);
    assert.equal(again.refusal('t', 'checked'), undefined);
    assert.equal(again.refusal('t', 'other')?.because, 'journal_gap_unread');
    j.sessions.event(null, 'journal_restored', { keys: [], complete: true, carried: { held: 'nonsense' } });
    assert.equal(JournalGap.read(j.sessions).refusal('t', 'any')?.because, 'journal_gap_unread', 'nothing runs blindly');
    j.sessions.event(null, 'journal_started', { journal_id: 'x', gap: { held: [{ tool: 't', key: 'kept' }], released: [], unread: false } });
    const started = JournalGap.read(j.sessions);
    assert.equal(started.refusal('t', 'kept')?.because, 'journal_gap_claimed');
    assert.equal(started.refusal('t', 'other'), undefined);
    j.sessions.event(null, 'journal_gap_closed', { by: 'operator' });
    assert.equal(JournalGap.read(j.sessions).record(), null);
    done();
  });

  it('a record past its key limit is unread: it never lets a key run that the state refuses', () => {
    const g = JournalGap.fromRecord(null);
    g.hold(Array.from({ length: MAX_RECORD_KEYS + 1 }, (_, i) => ({ tool: 't', key: `k${i}` })), true);
    const r = g.record();
    assert.equal(r?.unread, true);
    assert.equal(r?.held.length, MAX_RECORD_KEYS);
    assert.equal(JournalGap.fromRecord(r).refusal('t', `k${MAX_RECORD_KEYS}`)?.because, 'journal_gap_unread');
  });
});
