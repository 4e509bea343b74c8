/**
 * A restore never trusts what it cannot prove, and never forgets what an
 * earlier restore decided — the attacks as they were found, through the built
 * CLI and a real daemon, with agents over stdio and over the HTTP listener,
 * against a loopback HTTP target that logs every request with its
 * Idempotency-Key:
 *
 * 1. The agent (no passphrase, plain SQLite) edits the entries after a
 *    backup's head in the current journal and re-chains them — keys renamed,
 *    rows removed and the journal padded back to its length, the arguments
 *    and the claim changed — or deletes, truncates or damages the file. The
 *    daemon refuses to start and says to restore; the operator restores as
 *    told. The edited rows never reach the anchored head's hash, so the gap
 *    is unread (a damaged file's rows salvaged from its pages count only
 *    where they chain to the anchored head): the real keys are refused OUTCOME_UNKNOWN (no second request
 *    at the target, over either transport), every other unknown key too, and
 *    the operator is told so and how to release a key.
 * 2. What a restore decided outlives the journal it lived in: see
 *    journal-restore-again.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { rmSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { damagePage } from '../helpers/journal-damage.js';
import { activityHead, rechainActivity, type Row } from '../helpers/journal-tamper.js';
import { Home } from '../helpers/restore-home.js';

const k = (name: string): string => `${name}-${randomBytes(6).toString('hex')}`;

/** What each edit of the journal after the backup's head does to its rows. */
const EDITS: Record<string, (rows: Row[]) => Row[]> = {
  'keys renamed and re-chained': (rows) => rows.map((r) => (r['idempotency_key'] === null ? r : { ...r, idempotency_key: `renamed-${String(r['idempotency_key'])}` })),
  'rows removed, the journal padded back to its length, re-chained': (rows) => {
    const kept = rows.filter((r) => r['idempotency_key'] === null);
    const filler = rows.filter((r) => r['idempotency_key'] !== null).map((r) => ({ ...r, call_id: randomUUID(), kind: 'rejected', idempotency_key: null, claim: null, error_code: 'INPUT_INVALID' }));
    return [...kept, ...filler];
  },
  'arguments and claim changed and re-chained': (rows) =>
    rows.map((r) => {
      if (r['kind'] !== 'intent') return r;
      const body = JSON.parse(String(r['body'])) as Record<string, unknown>;
      return { ...r, claim: null, body: JSON.stringify({ ...body, args: { title: 'something else' } }) };
    }),
};

describe('a restore proves what it reads of the journal it replaces: edited rows are never believed', () => {
  const home = new Home();
  before(() => home.setUp());
  after(() => home.tearDown());

  for (const [name, edit] of Object.entries(EDITS)) {
    it(`${name}: the daemon refuses, the restore reads the gap as unread, the real keys never run again`, async () => {
      const dir = home.backup();
      const from = activityHead(join(dir, 'activity.db'));
      const gap = [k('gap-a'), k('gap-b')];
      await home.runKeys(gap);
      rechainActivity(join(home.journal, 'activity.db'), from, edit);
      await home.refusesToStart();
      const out = await home.restore(dir);
      await home.refused([...gap, `renamed-${gap[0]!}`, k('unknown')]);
      for (const key of gap) assert.equal(home.hits(key), 1, `${key} ran once`);
      assert.match(out, /not all of the gap could be read and proved/);
      assert.match(out, /postern anchor release-key TOOL KEY/);
      await home.closeGap();
    });
  }

  const lost: Record<string, { spoil: (journal: string) => void; refusal: [string, RegExp] }> = {
    deleted: { spoil: (j) => rmSync(join(j, 'activity.db')), refusal: ['JOURNAL_ANCHOR_MISMATCH', /restore the journal/] },
    truncated: { spoil: (j) => truncateSync(join(j, 'activity.db'), 0), refusal: ['JOURNAL_ANCHOR_MISMATCH', /restore the journal/] },
    damaged: { spoil: (j) => void damagePage(join(j, 'activity.db'), 'entries-root'), refusal: ['JOURNAL_DAMAGED', /A damaged journal/] },
  };
  for (const [name, { spoil, refusal }] of Object.entries(lost)) {
    it(`the replaced journal ${name}: what is not proved is refused, and the gap's keys never run again`, async () => {
      const dir = home.backup();
      const gap = [k('gap-a'), k('gap-b')];
      await home.runKeys(gap);
      spoil(home.journal);
      await home.refusesToStart(...refusal);
      const out = await home.restore(dir);
      if (name === 'damaged' && !/not all of the gap could be read/.test(out)) {
        // Salvage reads the rows of a damaged root from its leaf pages; the gap then counts as
        // read only because those rows chain, hash by hash, to the anchored head: every gap key
        // is named and refused, and a key the gap never held is no longer refused.
        for (const key of gap) assert.match(out, new RegExp(`quick_write ${key}`));
        await home.refused(gap);
      } else {
        await home.refused([...gap, k('unknown')]);
        assert.match(out, /not all of the gap could be read/);
      }
      for (const key of gap) assert.equal(home.hits(key), 1, `${key} ran once`);
      await home.closeGap();
    });
  }

  it('an honest journal is still read whole: only the gap\'s own keys are refused, listed with the way to release them', async () => {
    const dir = home.backup();
    const gap = [k('gap-a'), k('gap-b')];
    await home.runKeys(gap);
    const out = await home.restore(dir);
    await home.refused(gap);
    assert.doesNotMatch(out, /not all of the gap could be read/);
    for (const key of gap) assert.match(out, new RegExp(`quick_write ${key}`));
    assert.match(out, /postern anchor release-key TOOL KEY/);
    const fresh = k('fresh');
    await home.runKeys([fresh]);
    await home.closeGap();
  });
});
