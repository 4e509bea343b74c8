/**
 * `postern anchor restore-journal BACKUP`, prepared (docs/audit.md,
 * "Restoring an older journal"): an older copy of this home's journal is
 * checked and copied beside the home, with one new entry recording the
 * restore and its gap; nothing in the home changes here. The caller commits
 * it as `anchor new-journal` commits a new journal (the plan is the same
 * kind): the current directory moved aside (kept), the restored one moved
 * in, a new anchor and signed checkpoint for it, the vault's record of it.
 *
 * The backup must be this journal (the anchor's, or the vault's record's,
 * journal id), verify end to end, and agree with every signed checkpoint of
 * this journal up to its head. The **gap** runs from the backup's heads to
 * where the anchor says the journal ended (without an authentic anchor the
 * vault's record says only where it was at the last save: the end is then
 * unknown, and the gap never counts as read whole). The keys
 * claimed in it are read from what is left of the journal being replaced
 * (salvage.ts: a damaged file gives what it can); `complete` says every
 * entry of the gap was read there, so no other key can have been claimed in
 * it. journal/gap.ts turns that record into refusals (OUTCOME_UNKNOWN) until
 * the operator releases a key or closes the gap.
 */
import Database from 'better-sqlite3';
import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PosternError } from '../../rules/errors.js';
import { ACTIVITY_SCHEMA } from '../activity-schema.js';
import { readCheckpoints } from '../checkpoint/file.js';
import { walkTrust } from '../checkpoint/record.js';
import { publicKeyOf } from '../checkpoint/signature.js';
import type { GapKey } from '../gap.js';
import { openJournals, type JournalFacts } from '../index.js';
import { salvageJournal, type UnreadableRange } from '../salvage.js';
import { SESSIONS_SCHEMA } from '../sessions.js';
import { journalPresence } from './presence.js';
import { replacementSite, stagedPlan, type AnchorContext, type NewJournalPlan } from './open.js';

/** The most keys one `journal_restored` entry lists; past it the gap counts as not fully read. */
export const MAX_GAP_KEYS = 10_000;

export interface RestoreGap {
  readonly backup: { readonly activity: number; readonly sessions: number };
  readonly anchored: { readonly activity: number; readonly sessions: number };
  readonly keys: readonly GapKey[];
  readonly complete: boolean;
  /** Ranges of the gap the replaced journal could not give (damaged, or gone). */
  readonly unread: readonly UnreadableRange[];
}

export interface RestorePlan extends NewJournalPlan {
  readonly gap: RestoreGap;
}

const refused = (why: string): PosternError => new PosternError('INPUT_INVALID', `nothing restored: ${why}`);

/** Checks the backup and returns its facts (opened read-only, closed again). */
function checkBackup(ctx: AnchorContext, dir: string, journalId: string): JournalFacts {
  if (journalPresence(dir).kind !== 'complete') throw refused(`${dir} does not hold both journal files (sessions.db and activity.db): give a copy of the journal directory`);
  const j = openJournals(dir, { readonly: true });
  try {
    const facts = j.facts();
    for (const name of ['sessions', 'activity'] as const) {
      if (facts[name].journal_id !== journalId) throw refused(`the backup's ${name} journal is journal ${facts[name].journal_id ?? 'none'}, not this home's journal ${journalId}`);
    }
    for (const [name, r] of [['sessions', j.sessions.verify()], ['activity', j.activity.verify()]] as const) {
      if (!r.ok) throw refused(`the backup's ${name} journal does not verify (seq ${r.first_bad_seq}: ${r.reason})`);
    }
    // Every signed checkpoint of this journal up to the backup's heads must name the backup's entries there.
    if (ctx.checkpoints !== undefined) {
      const key = publicKeyOf(ctx.checkpoints.seed);
      const walk = walkTrust(readCheckpoints(ctx.checkpoints.path));
      for (const c of walk.accepted) {
        if (c.record.journal_id !== journalId || !walk.keys.includes(key)) continue;
        for (const name of ['sessions', 'activity'] as const) {
          const h = c.record[name];
          if (h.seq === 0 || h.seq > facts[name].head.seq || h.seq <= facts[name].base.seq) continue;
          if (facts[name].hashAt(h.seq) !== h.hash) throw refused(`signed checkpoint #${c.record.counter} names another ${name} entry at seq ${h.seq} than the backup holds: it is not a copy of this journal's history`);
        }
      }
    }
    return facts;
  } finally {
    j.close();
  }
}

/** The keys claimed after `from` in what is left of the current journal, and whether all of (from, to] was read. */
function gapKeys(ctx: AnchorContext, journalId: string, from: { seq: number; hash: string }, to: number): { keys: GapKey[]; complete: boolean; unread: UnreadableRange[] } {
  if (to <= from.seq) return { keys: [], complete: true, unread: [] };
  const whole: UnreadableRange[] = [{ from: from.seq + 1, to }];
  const presence = journalPresence(ctx.journalDir);
  if (presence.kind !== 'complete') return { keys: [], complete: false, unread: whole };
  let sameId = false;
  try {
    const j = openJournals(ctx.journalDir, { readonly: true });
    try {
      sameId = j.facts().activity.journal_id === journalId;
    } finally {
      j.close();
    }
  } catch {
    // A journal that cannot even be opened is read entry by entry below; its id is unknown.
    sameId = true;
  }
  if (!sameId) return { keys: [], complete: false, unread: whole };
  const keys: GapKey[] = [];
  let joined = from.seq === 0;
  let last = from.seq;
  const report = salvageJournal(ctx.journalDir, 'activity', (row) => {
    if (row.seq === from.seq && row.hash === from.hash) joined = true;
    if (row.seq <= from.seq || row.seq > to) return;
    // Only a run of entries continuing the backup's counts as read: a hole in it is unread.
    if (row.seq === last + 1) last = row.seq;
    if (row['kind'] === 'intent' && row['claim'] === 'claimed' && typeof row['tool'] === 'string' && typeof row['idempotency_key'] === 'string') {
      keys.push({ tool: row['tool'], key: row['idempotency_key'] });
    }
  });
  const unread = report.unreadable.filter((r) => r.from <= to && (r.to === null || r.to > from.seq));
  const complete = joined && last >= to && unread.length === 0 && keys.length <= MAX_GAP_KEYS;
  return { keys: keys.slice(0, MAX_GAP_KEYS), complete, unread: complete ? [] : unread.length > 0 ? unread : [{ from: last + 1, to }] };
}

/** A consistent copy of one journal file into `dir` (VACUUM INTO: the whole file, schema and meta, as one read). */
function copyJournalFile(from: string, to: string): void {
  const db = new Database(from, { readonly: true, fileMustExist: true });
  try {
    db.prepare('VACUUM INTO ?').run(to);
  } finally {
    db.close();
  }
  chmodSync(to, 0o600);
}

export function prepareRestore(ctx: AnchorContext, backupDir: string, reason: string): RestorePlan {
  const site = replacementSite(ctx);
  const end = site.previous !== null ? { id: site.previous.journal_id, activity: site.previous.activity, sessions: site.previous.sessions } : (ctx.vaultJournal ?? null);
  if (end === null) throw refused('neither an authentic anchor nor the vault records where this journal ended, so the gap cannot be known: start a new journal with `postern anchor new-journal`');
  const backup = checkBackup(ctx, backupDir, end.id);
  const B = { activity: backup.activity.head, sessions: backup.sessions.head };
  const anchored = { activity: Math.max(end.activity.seq, B.activity.seq), sessions: Math.max(end.sessions.seq, B.sessions.seq) };
  // Without an authentic anchor, the vault's record is only where the journal was at the last save: where it ended is unknown.
  const endKnown = site.previous !== null;
  const read = gapKeys(ctx, end.id, B.activity, anchored.activity);
  const known = endKnown ? read : { keys: read.keys, complete: false, unread: [{ from: Math.max(B.activity.seq, end.activity.seq) + 1, to: null }] };
  mkdirSync(site.stagedDir, { recursive: true, mode: 0o700 });
  copyJournalFile(join(backupDir, SESSIONS_SCHEMA.file), join(site.stagedDir, SESSIONS_SCHEMA.file));
  copyJournalFile(join(backupDir, ACTIVITY_SCHEMA.file), join(site.stagedDir, ACTIVITY_SCHEMA.file));
  const gap: RestoreGap = { backup: { activity: B.activity.seq, sessions: B.sessions.seq }, anchored, keys: known.keys, complete: known.complete, unread: known.unread };
  // Opening it runs recovery: a call the backup shows in progress becomes outcome_unknown, as after a crash.
  const journals = openJournals(site.stagedDir, { clock: ctx.clock });
  let facts: JournalFacts;
  try {
    journals.sessions.event(null, 'journal_restored', {
      journal_id: end.id,
      by: 'operator',
      reason,
      backup: { path: backupDir, activity: B.activity, sessions: B.sessions },
      anchored: { activity: end.activity, sessions: end.sessions, counter: site.previous?.counter ?? null, source: site.previous !== null ? 'anchor' : 'vault' },
      gap: { activity: { from: gap.backup.activity, to: anchored.activity }, sessions: { from: gap.backup.sessions, to: anchored.sessions } },
      keys: gap.keys,
      complete: gap.complete,
      unread: gap.unread,
      moved_to: site.movedTo,
    });
    facts = journals.facts();
  } finally {
    journals.close();
  }
  return { ...stagedPlan(ctx, { journalId: end.id, stagedDir: site.stagedDir, movedTo: site.movedTo, previous: site.previous, at: site.at, facts }), gap };
}
