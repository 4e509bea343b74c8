/**
 * The journal anchor in-process (THREATS 8–10, 15): the judge as a table, the
 * two-slot file (torn, forged, garbled, re-keyed), the watch that fails a
 * running journal closed, and the anchored open — a new home, the intent
 * anchored before `recordIntent` returns, an unanchored tail adopted, a
 * refused start that writes nothing.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { GENESIS_HASH, openJournals } from '../../../src/journal/index.js';
import {
  ANCHOR_FORMAT,
  judgeAnchor,
  openAnchoredJournals,
  readAnchor,
  reauthenticateAnchor,
  sealAnchor,
  writeAnchor,
  type AnchorContext,
  type AnchorRecord,
  type FoundJournal,
} from '../../../src/journal/anchor/index.js';
import { SLOT_BYTES } from '../../../src/journal/anchor/file.js';
import { isPosternError } from '../../../src/rules/errors.js';
import { callRecord, httpTarget, steppingClock, tempJournalDir } from './helpers.js';

const h = (c: string, seq: number) => ({ seq, hash: c.repeat(64) });
const record = (over: Partial<AnchorRecord> = {}): AnchorRecord => ({
  format: ANCHOR_FORMAT,
  journal_id: 'J',
  counter: 7,
  activity: h('a', 10),
  sessions: h('b', 4),
  vault_generation: 5,
  catalog_digest: '0'.repeat(64),
  at: '2026-03-01T00:00:00.000Z',
  ...over,
});
/** A journal as found: its id, its head, and the hashes it holds. */
const found = (id: string | null, headSeq: number, hashes: Record<number, string>): FoundJournal => ({
  journal_id: id,
  head: { seq: headSeq, hash: hashes[headSeq] ?? 'f'.repeat(64) },
  hashAt: (seq) => (seq <= headSeq ? (hashes[seq] ?? 'e'.repeat(64)) : undefined),
});

describe('judgeAnchor: the table', () => {
  const A = 'a'.repeat(64);
  const B = 'b'.repeat(64);
  const sessionsOk = found('J', 4, { 4: B });
  const rows: { name: string; activity: FoundJournal; sessions?: FoundJournal; vault?: number; expect: unknown }[] = [
    { name: 'exactly the anchored heads', activity: found('J', 10, { 10: A }), expect: { kind: 'ok', tail: { activity: 0, sessions: 0 } } },
    { name: 'entries past the anchor (a crash tail)', activity: found('J', 13, { 10: A }), expect: { kind: 'ok', tail: { activity: 3, sessions: 0 } } },
    { name: 'fewer entries (older copy, entries removed)', activity: found('J', 8, { 8: A }), expect: { kind: 'journal_mismatch', problem: { kind: 'rolled_back', journal: 'activity', anchored_seq: 10, found_seq: 8 } } },
    { name: 'emptied and re-created (seq 0)', activity: found('J', 0, {}), expect: { kind: 'journal_mismatch', problem: { kind: 'rolled_back', journal: 'activity', anchored_seq: 10, found_seq: 0 } } },
    { name: 'another hash at the anchored seq (rewritten, re-chained)', activity: found('J', 12, { 10: 'c'.repeat(64) }), expect: { kind: 'journal_mismatch', problem: { kind: 'rewritten', journal: 'activity', seq: 10 } } },
    { name: 'another journal id', activity: found('K', 10, { 10: A }), expect: { kind: 'journal_mismatch', problem: { kind: 'replaced', journal: 'activity', anchored_id: 'J', found_id: 'K' } } },
    { name: 'no journal id (a file from before ids)', activity: found(null, 10, { 10: A }), expect: { kind: 'journal_mismatch', problem: { kind: 'replaced', journal: 'activity', anchored_id: 'J', found_id: null } } },
    { name: 'sessions rolled back is found first', activity: found('K', 10, { 10: A }), sessions: found('J', 2, { 2: B }), expect: { kind: 'journal_mismatch', problem: { kind: 'rolled_back', journal: 'sessions', anchored_seq: 4, found_seq: 2 } } },
    { name: 'an older vault', activity: found('J', 10, { 10: A }), vault: 4, expect: { kind: 'vault_rolled_back', anchored: 5, found: 4 } },
    { name: 'a newer vault', activity: found('J', 10, { 10: A }), vault: 9, expect: { kind: 'ok', tail: { activity: 0, sessions: 0 } } },
  ];
  for (const r of rows) {
    it(r.name, () => {
      assert.deepEqual(judgeAnchor(record(), { activity: r.activity, sessions: r.sessions ?? sessionsOk }, r.vault ?? 5), r.expect);
    });
  }
  it('without a vault generation the vault is not judged', () => {
    assert.equal(judgeAnchor(record(), { activity: found('J', 10, { 10: A }), sessions: sessionsOk }, undefined).kind, 'ok');
  });
});

describe('the anchor file: two slots', () => {
  const key = randomBytes(32);
  const file = (): string => join(dirname(tempJournalDir().dir), 'journal.anchor');

  it('alternates slots in place; the newest authentic slot wins; a torn slot leaves the previous one', () => {
    const p = file();
    writeAnchor(p, sealAnchor(key, record({ counter: 1 })), true);
    assert.equal(statSync(p).size, 2 * SLOT_BYTES);
    assert.equal(statSync(p).mode & 0o777, 0o600);
    const ino = statSync(p).ino;
    writeAnchor(p, sealAnchor(key, record({ counter: 2 })), false);
    writeAnchor(p, sealAnchor(key, record({ counter: 3 })), false);
    assert.equal(statSync(p).ino, ino, 'written in place, no new file');
    assert.equal(readAnchor(p, key)?.record.counter, 3);
    // A torn write of counter 3's slot (odd → slot 1): slot 0 holds counter 2.
    const bytes = readFileSync(p);
    bytes.fill(0x41, SLOT_BYTES + 10, SLOT_BYTES + 200);
    writeFileSync(p, bytes);
    assert.equal(readAnchor(p, key)?.record.counter, 2);
  });

  it('a forged slot with a higher counter is passed over with the key, and is what an unkeyed reader sees', () => {
    const p = file();
    writeAnchor(p, sealAnchor(key, record({ counter: 4 })), true);
    const forged = JSON.stringify({ record: record({ counter: 99 }), mac: 'f'.repeat(64) });
    writeFileSync(p, `${readFileSync(p, 'utf8').slice(0, SLOT_BYTES)}${forged}\n`);
    assert.equal(readAnchor(p, key)?.record.counter, 4);
    assert.equal(readAnchor(p)?.record.counter, 99);
    // Only forged slots: the highest is returned, for the caller to find forged.
    writeFileSync(p, `${forged}\n`);
    assert.equal(readAnchor(p, key)?.record.counter, 99);
  });

  it('garbage, an empty file, a symlink: JOURNAL_ANCHOR_MISMATCH (malformed); none: undefined', () => {
    const p = file();
    assert.equal(readAnchor(p, key), undefined);
    for (const text of ['', 'not json', '{"record":{}}\n', `${' '.repeat(SLOT_BYTES)}\n`]) {
      writeFileSync(p, text);
      assert.throws(() => readAnchor(p, key), (e) => isPosternError(e, 'JOURNAL_ANCHOR_MISMATCH') && e.details['reason'] === 'anchor_malformed');
    }
  });

  it('reauthenticateAnchor: verified with the old key, sealed with the new; a forged one is refused', () => {
    const p = file();
    const newKey = randomBytes(32);
    assert.equal(reauthenticateAnchor(p, key, newKey), false, 'no anchor: nothing to do');
    writeAnchor(p, sealAnchor(key, record({ counter: 5 })), true);
    assert.equal(reauthenticateAnchor(p, key, newKey), true);
    const back = readAnchor(p, newKey);
    assert.equal(back?.record.counter, 5);
    assert.throws(() => reauthenticateAnchor(p, key, randomBytes(32)), (e) => isPosternError(e, 'JOURNAL_ANCHOR_MISMATCH') && e.details['reason'] === 'anchor_forged');
  });
});

describe('the anchored open', () => {
  const key = randomBytes(32);
  const ctxFor = (dir: string, over: Partial<AnchorContext> = {}): AnchorContext => ({
    journalDir: dir,
    anchorPath: join(dirname(dir), 'journal.anchor'),
    key,
    vaultGeneration: 3,
    catalogDigest: '0'.repeat(64),
    clock: steppingClock(),
    log: () => undefined,
    ...over,
  });
  const intent = () => ({ ...callRecord({ idempotency_key: `k-${randomBytes(4).toString('hex')}`, args_digest: 'd' }), target: httpTarget });

  it('a new home gets a journal and its anchor; an intent is anchored before recordIntent returns', () => {
    const t = tempJournalDir();
    const ctx = ctxFor(t.dir);
    const a = openAnchoredJournals(ctx);
    assert.equal(a.found.kind, 'new');
    const c = intent();
    a.journals.activity.recordIntent(c);
    const stored = readAnchor(ctx.anchorPath, key);
    assert.deepEqual(stored?.record.activity, a.journals.facts().activity.head, 'the anchor covers the intent already');
    a.journals.activity.recordOutcome(c.call_id, { status: 'success', side_effect_started: true, duration_ms: 1 });
    a.close();
    assert.deepEqual(readAnchor(ctx.anchorPath, key)?.record.activity, openJournals(t.dir, { readonly: true }).facts().activity.head, 'close writes the final heads');
    t.cleanup();
  });

  it('group-committed keyed intents are anchored before they return, off the loop: concurrent ones share anchor writes, each resolves covered', async () => {
    const t = tempJournalDir();
    const ctx = ctxFor(t.dir);
    const a = openAnchoredJournals(ctx);
    const counterBefore = readAnchor(ctx.anchorPath, key)?.record.counter ?? 0;
    const calls = Array.from({ length: 12 }, () => intent());
    const seenAtReturn: number[] = [];
    await Promise.all(
      calls.map(async (c) => {
        const [r] = await a.journals.activity.recordIntentsAsync([c]);
        assert.equal(r?.ok, true);
        // When the intent is told durable, the anchor on disk already covers it.
        const stored = readAnchor(ctx.anchorPath, key);
        const own = a.journals.activity.getCall(c.call_id);
        assert.ok(own !== undefined);
        seenAtReturn.push(stored?.record.activity.seq ?? -1);
      }),
    );
    const head = a.journals.facts().activity.head;
    const stored = readAnchor(ctx.anchorPath, key);
    assert.deepEqual(stored?.record.activity, head, 'the last anchor write covers every intent');
    assert.ok(seenAtReturn.every((seq) => seq >= 1));
    const writes = (stored?.record.counter ?? 0) - counterBefore;
    assert.ok(writes >= 1 && writes < calls.length, `12 concurrent intents shared anchor writes (${writes} writes)`);
    a.close();
    t.cleanup();
  });

  it('a keyed intent whose anchor write fails is refused as committed but not anchored; nothing may run', async () => {
    const t = tempJournalDir();
    const ctx = ctxFor(t.dir);
    const a = openAnchoredJournals(ctx);
    // The anchor replaced by a directory: the slot write cannot open it, nor can the whole-file fallback replace it.
    unlinkSync(ctx.anchorPath);
    mkdirSync(ctx.anchorPath);
    const [r] = await a.journals.activity.recordIntentsAsync([intent()]);
    assert.equal(r?.ok, false);
    assert.equal(r?.ok === false && r.error.code, 'JOURNAL_UNAVAILABLE');
    assert.equal(r?.ok === false && r.error.details['intent_committed'], true);
    rmSync(ctx.anchorPath, { recursive: true });
    try {
      a.close();
    } catch {
      // the final write may fail too; the refusal above is what this test is about
    }
    t.cleanup();
  });

  it('entries past the anchor (a crash between commit and anchor write) are adopted, and the adoption journaled', () => {
    const t = tempJournalDir();
    const ctx = ctxFor(t.dir);
    openAnchoredJournals(ctx).close();
    // Written by "the daemon" after its last anchor write: the anchor does not know them.
    const j = openJournals(t.dir);
    j.activity.recordRejected({ ...intent(), error_code: 'VALIDATION_FAILED', message: 'x' });
    j.close();
    const a = openAnchoredJournals(ctx);
    assert.deepEqual(a.found, { kind: 'anchored', tail: { activity: 1, sessions: 0 }, vaultAccepted: null });
    assert.ok(a.journals.sessions.events(null).some((e) => e.type === 'anchor_tail_adopted'));
    a.close();
    t.cleanup();
  });

  it('a refused start (rolled back, older vault, forged) writes nothing to the journal', () => {
    const t = tempJournalDir();
    const ctx = ctxFor(t.dir);
    const a = openAnchoredJournals(ctx);
    a.journals.activity.recordIntent(intent()); // left open: recovery would write an outcome
    a.close();
    const before = readFileSync(join(t.dir, 'activity.db'));
    assert.throws(() => openAnchoredJournals(ctxFor(t.dir, { vaultGeneration: 2 })), { code: 'VAULT_ROLLED_BACK' });
    assert.throws(() => openAnchoredJournals(ctxFor(t.dir, { key: randomBytes(32) })), (e) => isPosternError(e, 'JOURNAL_ANCHOR_MISMATCH') && e.details['reason'] === 'anchor_forged');
    assert.deepEqual(readFileSync(join(t.dir, 'activity.db')), before, 'no recovery ran on a refused journal');
    const r = openAnchoredJournals(ctxFor(t.dir, { vaultGeneration: 2 }), { acceptVault: true });
    assert.deepEqual(r.found, { kind: 'anchored', tail: { activity: 0, sessions: 0 }, vaultAccepted: { from: 3, to: 2 } });
    assert.equal(r.journals.recovered.length, 1, 'an accepted start recovers as usual');
    r.close();
    assert.equal(readAnchor(ctx.anchorPath, key)?.record.vault_generation, 2);
    t.cleanup();
  });
});

describe('the watch: a running journal that changes fails closed', () => {
  const variants: { name: string; change: (dir: string) => void; message: RegExp }[] = [
    { name: 'removed', change: (dir) => unlinkSync(join(dir, 'activity.db')), message: /was removed/ },
    { name: 'renamed away', change: (dir) => renameSync(join(dir, 'activity.db'), join(dir, 'elsewhere.db')), message: /was removed/ },
    {
      name: 'another process writes',
      change: (dir) => {
        const db = new Database(join(dir, 'activity.db'));
        db.prepare('DELETE FROM idempotency').run();
        db.close();
      },
      message: /another process wrote to the journal/,
    },
  ];
  for (const v of variants) {
    it(`${v.name}: writes and key lookups refuse, and stay refused`, () => {
      const t = tempJournalDir();
      const j = openJournals(t.dir, { exclusive: true });
      const first = { ...callRecord({ idempotency_key: 'k-watch', args_digest: 'd' }), target: httpTarget };
      j.activity.recordIntent(first);
      v.change(t.dir);
      const refused = (e: unknown): boolean => isPosternError(e, 'JOURNAL_UNAVAILABLE') && v.message.test(e.message) && !e.message.includes('\n');
      assert.throws(() => j.activity.findByKey(first.tool, 'k-watch'), refused);
      assert.throws(() => j.activity.recordIntent({ ...callRecord({ idempotency_key: 'k-2', args_digest: 'd' }), target: httpTarget }), refused);
      assert.throws(() => j.activity.recordOutcome(first.call_id, { status: 'success', side_effect_started: true, duration_ms: 1 }), refused);
      j.close();
      t.cleanup();
    });
  }

  it('its own commits, and another connection that only locks and rolls back, are not changes', () => {
    const t = tempJournalDir();
    const j = openJournals(t.dir, { exclusive: true });
    for (let i = 0; i < 3; i++) j.activity.recordRejected({ ...callRecord(), error_code: 'VALIDATION_FAILED', message: 'x' });
    const other = new Database(join(t.dir, 'activity.db'));
    other.exec('BEGIN EXCLUSIVE');
    other.exec('ROLLBACK');
    other.close();
    j.activity.recordRejected({ ...callRecord(), error_code: 'VALIDATION_FAILED', message: 'x' });
    assert.equal(j.activity.verify().ok, true);
    assert.notEqual(j.facts().activity.head.hash, GENESIS_HASH);
    j.close();
    t.cleanup();
  });
});
