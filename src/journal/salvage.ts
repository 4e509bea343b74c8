/**
 * What can still be read of a journal file that is damaged (docs/audit.md,
 * "A damaged journal"): every entry a lookup by seq still returns, in seq
 * order, and the ranges that cannot be read. Read-only: the file is opened
 * read-only and never written; nothing is checked against the chain here (a
 * reader of the salvage sees the ranges, so the chain stays honest about
 * what is missing). Used by `postern audit salvage` and by the restore of an
 * older journal, which learns from it which idempotency keys were claimed
 * after the backup.
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { ACTIVITY_SCHEMA, CONTENT_COLUMNS } from './activity-schema.js';
import { Chain, isDamage, type EntryRow } from './chain.js';
import type { JournalName } from './database.js';
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

/** Reads every readable entry of one journal file of `dir`, and says each unreadable range where it falls; a file whose schema cannot be read is one unreadable range from seq 1. */
export function salvageJournal(dir: string, journal: JournalName, visit: (row: EntryRow) => void, onUnreadable: (r: UnreadableRange) => void = () => undefined): SalvageReport {
  const file = join(dir, journal === 'activity' ? ACTIVITY_SCHEMA.file : SESSIONS_SCHEMA.file);
  let db: Database.Database;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
  } catch (e) {
    throw new PosternError('FILE_IO', `cannot open ${file}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  const unreadable: UnreadableRange[] = [];
  let entries = 0;
  try {
    const chain = new Chain(db, journal === 'activity' ? CONTENT_COLUMNS : SESSIONS_CONTENT_COLUMNS);
    chain.readAll(
      (row) => {
        entries++;
        visit(row);
      },
      (from, to) => {
        unreadable.push({ from, to });
        onUnreadable({ from, to });
      },
    );
  } catch (e) {
    if (!isDamage(e)) throw e;
    // The schema, the base or the first lookup's path cannot be read: nothing can.
    unreadable.push({ from: 1, to: null });
    onUnreadable({ from: 1, to: null });
  } finally {
    db.close();
  }
  return { journal, entries, unreadable };
}
