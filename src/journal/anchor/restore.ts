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
 * unknown, and the gap never counts as read whole).
 *
 * The keys claimed in the gap are read from what is left of the journal
 * being replaced — a file the agent can edit — so only as far as they are
 * **proved**: every row must chain from the backup's head, and a run of rows
 * is believed once it reaches a point vouched for by the authentic anchor,
 * the vault's record or a checkpoint signed by this home's key. What cannot
 * be proved (rows edited and re-chained, deleted, damaged, a file gone) is
 * **unread**: every key the restored journal does not know is refused until
 * the operator releases it or closes the gap. `complete` says the whole gap
 * was proved read, so no other key can have been claimed in it. The backup
 * is held to the same proof from the other side: the gap's walk starts from
 * its head hash (a backup whose head is not on the vouched chain proves
 * nothing of the gap), and a backup that reaches the vouched end must hold
 * the vouched entry there.
 *
 * What earlier restores decided is not lost with the journal swapped out:
 * the vault's `journal_gap` record (journal/gap.ts) is carried into the
 * restored journal's `journal_restored` entry, and the caller records the
 * new state in the vault with the same save. journal/gap.ts turns that
 * record into refusals (OUTCOME_UNKNOWN).
 */
import Database from 'better-sqlite3';
import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PosternError } from '../../rules/errors.js';
import { ACTIVITY_SCHEMA, CONTENT_COLUMNS } from '../activity-schema.js';
import { entryHash, type Cell, type EntryRow } from '../chain.js';
import { readCheckpoints } from '../checkpoint/file.js';
import { checkpointIsSigned, walkTrust } from '../checkpoint/record.js';
import { publicKeyOf } from '../checkpoint/signature.js';
import { JournalGap, type GapKey, type GapRecord } from '../gap.js';
import { openJournals, type JournalFacts } from '../index.js';
import { salvageJournal, type UnreadableRange } from '../salvage.js';
import type { ChainHead } from '../types.js';
import { SESSIONS_SCHEMA } from '../sessions.js';
import { journalPresence } from '../presence.js';
import { replacementSite, stagedPlan, type AnchorContext, type NewJournalPlan } from './open.js';

/** The most keys one `journal_restored` entry lists; past it the gap counts as not fully read. */
const MAX_GAP_KEYS = 10_000;

interface RestoreGap {
  readonly backup: { readonly activity: number; readonly sessions: number };
  readonly anchored: { readonly activity: number; readonly sessions: number };
  readonly keys: readonly GapKey[];
  readonly complete: boolean;
  /** Ranges of the gap the replaced journal could not give (damaged, or gone). */
  readonly unread: readonly UnreadableRange[];
}

export interface RestorePlan extends NewJournalPlan {
  readonly gap: RestoreGap;
  /** The gap state the restored journal starts with (earlier restores' carried, this one's added): what the vault records. */
  readonly state: JournalGap;
}

const refused = (why: string): PosternError => new PosternError('INPUT_INVALID', `nothing restored: ${why}`);

/**
 * Checks the backup and returns its facts (opened read-only, closed again),
 * and whether it holds the vouched `end` of the activity chain when it
 * reaches that far (a backup as long as the journal it replaces, or longer,
 * is believed only as an extension of it: else none of the gap is known).
 */
function checkBackup(ctx: AnchorContext, dir: string, journalId: string, end: ChainHead): JournalFacts & { readonly holdsEnd: boolean } {
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
    // Every signed checkpoint of this journal up to the backup's heads must name the backup's entries there
    // (but one a later restore rewound past: it names the history that restore replaced).
    if (ctx.checkpoints !== undefined) {
      const key = publicKeyOf(ctx.checkpoints.seed);
      const walk = walkTrust(readCheckpoints(ctx.checkpoints.path));
      const ours = walk.accepted.filter((c) => c.record.journal_id === journalId && walk.keys.includes(key));
      for (const c of ours) {
        for (const name of ['sessions', 'activity'] as const) {
          const h = c.record[name];
          if (h.seq === 0 || h.seq > facts[name].head.seq || h.seq <= facts[name].base.seq) continue;
          if (ours.some((later) => later.record.counter > c.record.counter && later.record[name].seq < h.seq)) continue;
          if (facts[name].hashAt(h.seq) !== h.hash) throw refused(`signed checkpoint #${c.record.counter} names another ${name} entry at seq ${h.seq} than the backup holds: it is not a copy of this journal's history`);
        }
      }
    }
    const holdsEnd = facts.activity.head.seq < end.seq || facts.activity.hashAt(end.seq) === end.hash;
    return { ...facts, holdsEnd };
  } finally {
    j.close();
  }
}

/**
 * The (seq, hash) points of this journal's activity chain that something the
 * agent cannot forge vouches for: the authentic anchor's head, the vault's
 * record, and every checkpoint signed by this home's own key.
 */
function vouchedHeads(ctx: AnchorContext, journalId: string, heads: readonly ChainHead[]): Map<number, string> {
  const vouched = new Map<number, string>();
  for (const h of heads) if (h.seq > 0) vouched.set(h.seq, h.hash);
  if (ctx.checkpoints === undefined) return vouched;
  const key = publicKeyOf(ctx.checkpoints.seed);
  for (const line of readCheckpoints(ctx.checkpoints.path)) {
    if (line === 'malformed' || line.record.public_key !== key || line.record.journal_id !== journalId || !checkpointIsSigned(line)) continue;
    if (line.record.activity.seq > 0) vouched.set(line.record.activity.seq, line.record.activity.hash);
  }
  return vouched;
}

/**
 * The keys claimed after `from` in what is left of the replaced journal, read
 * only as far as they are *proved*: each row must chain from the backup's
 * head (its prev_hash, and its hash recomputed from its content), and a run
 * of rows counts once it reaches a vouched point with the vouched hash. Rows
 * past the last vouched point reached, a broken link, a hole or a damaged
 * page are not read: an agent that edits rows and re-chains them cannot reach
 * a vouched hash, so its edits are never believed.
 */
function provenGapKeys(dir: string, from: ChainHead, to: number, vouched: ReadonlyMap<number, string>): { keys: GapKey[]; provenTo: number } {
  const keys: GapKey[] = [];
  let pending: GapKey[] = [];
  let provenTo = from.seq;
  let expected = from.seq + 1;
  let prev = from.hash;
  let broken = false;
  const visit = (row: EntryRow): void => {
    if (broken || row.seq <= from.seq || row.seq > to) return;
    const content: Record<string, Cell> = {};
    for (const c of CONTENT_COLUMNS) content[c] = row[c] ?? null;
    if (row.seq !== expected || row.prev_hash !== prev || entryHash(prev, content) !== row.hash) {
      broken = true;
      return;
    }
    expected = row.seq + 1;
    prev = row.hash;
    if (row['kind'] === 'intent' && row['claim'] === 'claimed' && typeof row['tool'] === 'string' && typeof row['idempotency_key'] === 'string') pending.push({ tool: row['tool'], key: row['idempotency_key'] });
    if (vouched.get(row.seq) === row.hash) {
      keys.push(...pending);
      pending = [];
      provenTo = row.seq;
    }
  };
  try {
    salvageJournal(dir, 'activity', visit);
  } catch {
    // A file that cannot be opened at all proves nothing: the whole gap is unread.
  }
  return { keys, provenTo };
}

/**
 * The gap's keys and whether all of it (from, to] was proved read. With the
 * end unknown (no authentic anchor), it never is: what lies past the last
 * vouched point is unread, to no known end.
 */
function gapKeys(ctx: AnchorContext, journalId: string, from: ChainHead, to: number, ends: { heads: readonly ChainHead[]; endKnown: boolean }): { keys: GapKey[]; complete: boolean; unread: UnreadableRange[] } {
  if (ends.endKnown && to <= from.seq) return { keys: [], complete: true, unread: [] };
  const read = provenGapKeys(ctx.journalDir, from, ends.endKnown ? to : Number.MAX_SAFE_INTEGER, vouchedHeads(ctx, journalId, ends.heads));
  const complete = ends.endKnown && read.provenTo >= to && read.keys.length <= MAX_GAP_KEYS;
  return { keys: read.keys.slice(0, MAX_GAP_KEYS), complete, unread: complete ? [] : [{ from: read.provenTo + 1, to: ends.endKnown ? to : null }] };
}

/**
 * The gap state before this restore (journal/gap.ts `GapRecord`): the vault's
 * record. A vault that never recorded one (saved before it was kept) leaves
 * the state the replaced journal's sessions chain shows, when that chain is
 * proved against the anchored head; otherwise nothing can be known, and
 * `unproven` says so (a restore then holds every key, a new journal nothing).
 */
function priorGap(ctx: AnchorContext, vaultGap: GapRecord | null | undefined, end: { readonly id: string; readonly sessions: ChainHead } | null): GapRecord | null | 'unproven' {
  if (vaultGap !== undefined) return vaultGap;
  if (end === null || journalPresence(ctx.journalDir).kind !== 'complete') return 'unproven';
  try {
    const j = openJournals(ctx.journalDir, { readonly: true });
    try {
      const f = j.facts().sessions;
      if (f.journal_id !== end.id || !j.sessions.verify().ok || f.hashAt(end.sessions.seq) !== end.sessions.hash) return 'unproven';
      return JournalGap.read(j.sessions, end.sessions.seq).record();
    } finally {
      j.close();
    }
  } catch {
    return 'unproven';
  }
}

/**
 * The gap a new journal (`anchor new-journal`) holds on: the prior state, or
 * nothing when it cannot be known (the operator starting a new journal has
 * already accepted that the old journal's keys are unknown to it).
 */
export function gapForNewJournal(ctx: AnchorContext, vaultGap: GapRecord | null | undefined): GapRecord | null {
  const previous = replacementSite(ctx).previous;
  const end = previous !== null ? { id: previous.journal_id, sessions: previous.sessions } : (ctx.vaultJournal ?? null);
  const prior = priorGap(ctx, vaultGap, end);
  return prior === 'unproven' ? null : prior;
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

export function prepareRestore(ctx: AnchorContext, backupDir: string, reason: string, vaultGap?: GapRecord | null): RestorePlan {
  const site = replacementSite(ctx);
  const end = site.previous !== null ? { id: site.previous.journal_id, activity: site.previous.activity, sessions: site.previous.sessions } : (ctx.vaultJournal ?? null);
  if (end === null) throw refused('neither an authentic anchor nor the vault records where this journal ended, so the gap cannot be known: start a new journal with `postern anchor new-journal`');
  const backup = checkBackup(ctx, backupDir, end.id, end.activity);
  const B = { activity: backup.activity.head, sessions: backup.sessions.head };
  const anchored = { activity: Math.max(end.activity.seq, B.activity.seq), sessions: Math.max(end.sessions.seq, B.sessions.seq) };
  // Without an authentic anchor, the vault's record is only where the journal was at the last save: where it ended is unknown.
  const endKnown = site.previous !== null;
  const heads = [end.activity, ...(ctx.vaultJournal?.id === end.id ? [ctx.vaultJournal.activity] : [])];
  // A backup that reaches the end but holds another entry there is not this history: nothing of the gap is known.
  const known = backup.holdsEnd ? gapKeys(ctx, end.id, B.activity, anchored.activity, { heads, endKnown }) : { keys: [], complete: false, unread: [{ from: 1, to: anchored.activity }] };
  const prior = priorGap(ctx, vaultGap, end);
  mkdirSync(site.stagedDir, { recursive: true, mode: 0o700 });
  copyJournalFile(join(backupDir, SESSIONS_SCHEMA.file), join(site.stagedDir, SESSIONS_SCHEMA.file));
  copyJournalFile(join(backupDir, ACTIVITY_SCHEMA.file), join(site.stagedDir, ACTIVITY_SCHEMA.file));
  const gap: RestoreGap = { backup: { activity: B.activity.seq, sessions: B.sessions.seq }, anchored, keys: known.keys, complete: known.complete, unread: known.unread };
  // Opening it runs recovery: a call the backup shows in progress becomes outcome_unknown, as after a crash.
  const journals = openJournals(site.stagedDir, { clock: ctx.clock });
  let facts: JournalFacts;
  let state: JournalGap;
  try {
    // What earlier restores decided is carried whole; an unknown prior state holds every key (nothing runs blindly).
    const carried: GapRecord = prior === 'unproven' ? { ...(JournalGap.read(journals.sessions).record() ?? { held: [], released: [] }), unread: true } : (prior ?? { held: [], released: [], unread: false });
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
      carried: { ...carried, source: prior === 'unproven' ? 'unproven' : vaultGap !== undefined ? 'vault' : 'journal' },
      moved_to: site.movedTo,
    });
    facts = journals.facts();
    state = JournalGap.read(journals.sessions);
  } finally {
    journals.close();
  }
  return { ...stagedPlan(ctx, { journalId: end.id, stagedDir: site.stagedDir, movedTo: site.movedTo, previous: site.previous, at: site.at, facts }), gap, state };
}
