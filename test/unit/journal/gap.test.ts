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
import { JournalGap } from '../../../src/journal/gap.js';

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
