/**
 * What can still be read of a journal file that is damaged (docs/audit.md,
 * "A damaged journal"): every entry a lookup by seq still returns, in seq
 * order, and the ranges that cannot be read. Read-only: the file is opened
 * read-only and never written; nothing is checked against the chain here (a
 * reader of the salvage sees the ranges, so the chain stays honest about
 * what is missing). Used by `postern audit salvage` and by the restore of an
 * older journal, which learns from it which idempotency keys were claimed
 * after the backup. What SQLite's lookups cannot reach is read from the pages
 * themselves (page-recover.ts), so whatever page is damaged, only the
 * entries on it are lost.
 */
import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ACTIVITY_SCHEMA, CONTENT_COLUMNS } from './activity-schema.js';
import { Chain, isDamage, type EntryRow } from './chain.js';
import type { JournalName } from './database.js';
import { recoverEntries } from './page-recover.js';
import { SESSIONS_CONTENT_COLUMNS, SESSIONS_SCHEMA } from './sessions.js';
import { PosternError } from '../rules/errors.js';

/** A range of seqs that cannot be read; `to` null: nothing after `from` reads. */
export interface UnreadableRange {
  readonly from: number;
  readonly to: number | null;
}

export interface SalvageReport {
  readonly journal: JournalName;
  /** Entries read. */
  readonly entries: number;
  readonly unreadable: readonly UnreadableRange[];
}

/** A seq range list as a membership test. */
const inRanges = (ranges: readonly UnreadableRange[]) => (seq: number): boolean => ranges.some((r) => seq >= r.from && (r.to === null || seq <= r.to));

/**
 * Within one range SQLite's lookups could not read: the entries the page
 * reader found there, in seq order, and the ranges still missing between them
 * (an open range stays open after the last found: nothing says where it ended).
 */
function fillRange(range: UnreadableRange, found: ReadonlyMap<number, EntryRow>, visit: (row: EntryRow) => void, unreadable: (r: UnreadableRange) => void): number {
  const seqs = [...found.keys()].filter((s) => s >= range.from && (range.to === null || s <= range.to)).sort((a, b) => a - b);
  let next = range.from;
  for (const seq of seqs) {
    if (seq > next) unreadable({ from: next, to: seq - 1 });
    visit(found.get(seq)!);
    next = seq + 1;
  }
  if (range.to === null) unreadable({ from: next, to: null });
  else if (next <= range.to) unreadable({ from: next, to: range.to });
  return seqs.length;
}

/** SQLite's reads of `file`: the chain's walk, or 'schema' when not even the schema, the base or the first lookup reads. */
function walk(file: string, columns: readonly string[], visit: (row: EntryRow) => void, unreadable: (from: number, to: number | null) => void): { base: number } | 'schema' {
  let db: Database.Database;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
  } catch (e) {
    if (isDamage(e)) return 'schema';
    throw new PosternError('FILE_IO', `cannot open ${file}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  try {
    const chain = new Chain(db, columns);
    const base = chain.base().seq;
    chain.readAll(visit, unreadable);
    return { base };
  } catch (e) {
    if (!isDamage(e)) throw e;
    return 'schema';
  } finally {
    db.close();
  }
}

/**
 * Reads every readable entry of one journal file of `dir`, in seq order, and
 * says each unreadable range where it falls. SQLite's lookups by seq read
 * first; what they cannot reach (a damaged root, interior or schema page
 * hides every entry behind it) is read from the pages themselves
 * (page-recover.ts), so only the entries on a damaged page are lost. Two
 * passes when anything is unreadable: the first finds the ranges, the second
 * writes in order.
 */
export function salvageJournal(dir: string, journal: JournalName, visit: (row: EntryRow) => void, onUnreadable: (r: UnreadableRange) => void = () => undefined): SalvageReport {
  const file = join(dir, journal === 'activity' ? ACTIVITY_SCHEMA.file : SESSIONS_SCHEMA.file);
  const columns = journal === 'activity' ? CONTENT_COLUMNS : SESSIONS_CONTENT_COLUMNS;
  if (!existsSync(file)) throw new PosternError('FILE_IO', `cannot open ${file}: ENOENT`);
  const ranges: UnreadableRange[] = [];
  const first = walk(file, columns, () => undefined, (from, to) => ranges.push({ from, to }));
  const missing = first === 'schema' ? [{ from: 1, to: null }] : ranges;
  const found = missing.length === 0 ? new Map<number, EntryRow>() : recoverEntries(file, columns, (seq) => inRanges(missing)(seq) && (first === 'schema' || seq > first.base));
  const unreadable: UnreadableRange[] = [];
  const report = (r: UnreadableRange): void => {
    unreadable.push(r);
    onUnreadable(r);
  };
  let entries = 0;
  const count = (row: EntryRow): void => {
    entries++;
    visit(row);
  };
  if (first === 'schema') entries += fillRange({ from: 1, to: null }, found, visit, report);
  else if (missing.length === 0) walk(file, columns, count, () => undefined);
  else walk(file, columns, count, (from, to) => (entries += fillRange({ from, to }, found, visit, report)));
  return { journal, entries, unreadable };
}
