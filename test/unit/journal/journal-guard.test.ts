/**
 * What the anchored open refuses beyond the anchor itself (THREATS 15,
 * docs/audit.md "What the vault and the checkpoints add"): the journal, its
 * anchor and its checkpoints removed together while the vault records a
 * journal; an anchor behind what the vault recorded, or naming another
 * journal; an older journal put back with its anchor while the signed
 * checkpoints say more; and a checkpoint counter never signed twice, with
 * `audit verify`'s judgement flagging one that was.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { openAnchoredJournals, prepareNewJournal, readAnchor, type RecordedJournal } from '../../../src/journal/anchor/index.js';
import { HomeChange } from '../../../src/home/change-record.js';
import { homePaths } from '../../../src/home/paths.js';
import { appendCheckpoint, readCheckpoints } from '../../../src/journal/checkpoint/file.js';
import { describeCheckpointInspection, inspectCheckpoints } from '../../../src/journal/checkpoint/inspect.js';
import type { StoredCheckpoint } from '../../../src/journal/checkpoint/record.js';
import { CheckpointSigner } from '../../../src/journal/checkpoint/signature.js';
import { isPosternError } from '../../../src/rules/errors.js';
import { anchoredHome, callRecord, httpTarget, type AnchoredHome } from './helpers.js';

const CATALOG = '0'.repeat(64);

/** A keyed call that completed: an intent and its outcome. */
function complete(h: ReturnType<typeof openAnchoredJournals>, key: string): void {
  const c = { ...callRecord({ idempotency_key: key, args_digest: 'd' }), target: httpTarget };
  h.journals.activity.recordIntent(c);
  h.journals.activity.recordOutcome(c.call_id, { status: 'success', side_effect_started: true, duration_ms: 1 });
}

/** What the vault would record at a save now: the journal and heads the anchor file vouches for. */
function anchored(home: AnchoredHome): RecordedJournal {
  const r = readAnchor(join(home.root, 'journal.anchor'))!.record;
  return { id: r.journal_id, activity: r.activity, sessions: r.sessions };
}

function refused(fn: () => unknown, reason: string, message: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(isPosternError(e, 'JOURNAL_ANCHOR_MISMATCH'), String(e));
    assert.equal(e.details['reason'], reason);
    assert.match(e.message, message);
    assert.match(e.message, /postern anchor new-journal/);
    assert.ok(!e.message.includes('\n'), 'one line');
    return true;
  });
}

const snapshot = (home: AnchoredHome, name: string): void => {
  const to = join(home.root, `snap-${name}`);
  cpSync(home.dir, join(to, 'journal'), { recursive: true });
  cpSync(join(home.root, 'journal.anchor'), join(to, 'journal.anchor'));
};
const putBack = (home: AnchoredHome, name: string): void => {
  const from = join(home.root, `snap-${name}`);
  rmSync(home.dir, { recursive: true, force: true });
  cpSync(join(from, 'journal'), home.dir, { recursive: true });
  cpSync(join(from, 'journal.anchor'), join(home.root, 'journal.anchor'));
};

/** A home whose journal and anchor were copied after one completed key ('old'), and that went on to complete another. */
function withOlderCopy(): AnchoredHome {
    const home = anchoredHome(CATALOG);
    const a = openAnchoredJournals(home.ctx());
    complete(a, 'k-1');
    a.close();
    snapshot(home, 'old');
    const b = openAnchoredJournals(home.ctx());
    complete(b, 'k-2');
    b.close();
  return home;
}

describe('the journal guard: the vault records that a journal exists', () => {
  it('journal, anchor and checkpoints removed together while the vault names the journal → refused (journal_lost), nothing created', () => {
    const home = anchoredHome(CATALOG);
    const a = openAnchoredJournals(home.ctx());
    complete(a, 'k-done');
    a.close();
    const mark = anchored(home);
    rmSync(home.dir, { recursive: true });
    rmSync(join(home.root, 'journal.anchor'));
    rmSync(home.cpPath);
    refused(() => openAnchoredJournals(home.ctx({ vaultJournal: mark })), 'journal_lost', new RegExp(`the journal, its anchor and its checkpoints are gone, but the vault records journal ${mark.id}`));
    assert.ok(!existsSync(join(home.root, 'journal.anchor')), 'no anchor written');
    assert.ok(!existsSync(home.cpPath), 'no checkpoint written');
    assert.ok(!existsSync(home.dir) || readdirSync(home.dir).length === 0, 'no journal created');
    // A vault that never recorded a journal (older than the record) is a new home, as before.
    const fresh = openAnchoredJournals(home.ctx({ vaultJournal: null }));
    assert.equal(fresh.found.kind, 'new');
    fresh.close();
    home.cleanup();
  });

  it('journal and anchor removed, the checkpoints kept (an older vault with no record) → refused by the checkpoints', () => {
    const home = anchoredHome(CATALOG);
    const a = openAnchoredJournals(home.ctx());
    complete(a, 'k-done');
    a.close();
    rmSync(home.dir, { recursive: true });
    rmSync(join(home.root, 'journal.anchor'));
    refused(() => openAnchoredJournals(home.ctx()), 'checkpoint_mismatch', /signed checkpoints do not vouch for this journal: the activity journal file is missing/);
    home.cleanup();
  });

  it('an older journal put back with its anchor, behind the heads the vault recorded → refused (behind_vault); another journal id → refused', () => {
    const home = withOlderCopy();
    const mark = anchored(home);
    putBack(home, 'old');
    rmSync(home.cpPath); // even with the checkpoints gone too
    refused(() => openAnchoredJournals(home.ctx({ vaultJournal: mark })), 'behind_vault', /anchor records seq \d+ but the vault recorded seq \d+ at a save: an older copy of the journal and its anchor was put back/);
    refused(() => openAnchoredJournals(home.ctx({ vaultJournal: { ...mark, id: 'another-journal' } })), 'vault_names_other', /the anchor names journal .* but the vault records journal another-journal/);
    // A vault that lags the anchor (saved before the later entries) is normal.
    const lagging = openAnchoredJournals(home.ctx({ vaultJournal: { ...mark, activity: { seq: 1, hash: 'a'.repeat(64) }, sessions: { seq: 0, hash: 'a'.repeat(64) } } }));
    lagging.close();
    home.cleanup();
  });
});

describe('the journal guard: the signed checkpoints at start', () => {
  it('an older journal put back WITH its anchor → refused at start as verify reports it; nothing written', () => {
    const home = withOlderCopy();
    putBack(home, 'old');
    const lines = readCheckpoints(home.cpPath).length;
    refused(() => openAnchoredJournals(home.ctx()), 'checkpoint_mismatch', /signed checkpoints do not vouch for this journal: the activity journal ends at seq \d+ but the anchor records seq \d+: an older copy was put back.*against checkpoint #\d+/);
    assert.equal(readCheckpoints(home.cpPath).length, lines, 'no checkpoint written by the refused start');
    home.cleanup();
  });

  it('a new journal after such a refusal never signs a counter the file already holds', async () => {
    const home = anchoredHome(CATALOG);
    const a = openAnchoredJournals(home.ctx());
    a.close();
    snapshot(home, 'old');
    for (let i = 0; i < 3; i++) openAnchoredJournals(home.ctx()).close();
    putBack(home, 'old');
    const before = readCheckpoints(home.cpPath).map((l) => (l === 'malformed' ? 0 : l.record.counter));
    // What `postern anchor new-journal` commits (the vault's save aside): the directories swapped, the anchor and checkpoint of the new journal.
    const plan = prepareNewJournal(home.ctx(), 'put back');
    const sealed = plan.seal(1);
    const paths = homePaths(home.root);
    const change = new HomeChange(paths, 'anchor new-journal');
    if (plan.movedTo !== null) change.rename(paths.journalDir, plan.movedTo);
    change.rename(plan.stagedDir, paths.journalDir);
    change.write(paths.anchor, sealed.anchor);
    if (sealed.checkpoint !== null) change.append(paths.checkpoints, sealed.checkpoint);
    await change.commit();
    openAnchoredJournals(home.ctx()).close();
    const after = readCheckpoints(home.cpPath).slice(before.length).map((l) => (l === 'malformed' ? 0 : l.record.counter));
    assert.ok(after.length > 0);
    for (const c of after) assert.ok(c > Math.max(...before), `counter ${c} is new (file held up to ${Math.max(...before)})`);
    const i = inspectCheckpoints(home.dir, home.cpPath);
    assert.equal(describeCheckpointInspection(i, false).ok, true, describeCheckpointInspection(i, false).line);
    home.cleanup();
  });

  it('a counter signed twice for other heads is a finding of verify, and refuses the start', () => {
    const home = anchoredHome(CATALOG);
    const a = openAnchoredJournals(home.ctx());
    complete(a, 'k-1');
    a.close();
    // What a daemon before this check wrote after an older anchor was put back: a counter again, for other heads.
    const lines = readCheckpoints(home.cpPath).filter((l): l is StoredCheckpoint => l !== 'malformed');
    const first = lines[0]!;
    const signer = new CheckpointSigner(home.seed);
    const again = { ...lines[lines.length - 1]!.record, counter: first.record.counter, reason: 'periodic' as const };
    appendCheckpoint(home.cpPath, { record: again, signature: signer.sign(again) });
    signer.close();
    const d = describeCheckpointInspection(inspectCheckpoints(home.dir, home.cpPath), false);
    assert.equal(d.ok, false);
    assert.match(d.line, new RegExp(`checkpoint counter #${first.record.counter} was signed twice for other heads`));
    refused(() => openAnchoredJournals(home.ctx()), 'checkpoint_mismatch', /was signed twice/);
    home.cleanup();
  });
});
