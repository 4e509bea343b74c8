/**
 * Every page of a journal file read once: SQLite's `PRAGMA quick_check`
 * walks each b-tree (the entries, the claims, every index, the schema) and
 * reads each page. The daemon meets a damaged page only where its work takes
 * it (its start reads the claims and the calls it must recover, a call reads
 * its key's entries), so a page it has not read yet may be damaged for
 * weeks; `postern doctor` runs this check over the whole file, so what the
 * daemon would refuse (JOURNAL_DAMAGED) is named before it is met.
 *
 * Invariants: read-only (the file is opened read-only, nothing is written);
 * a damaged page is JOURNAL_DAMAGED with the journal error mapping's message
 * (database.ts, `journalError`: the SQLite code only, never row content), so
 * doctor and the daemon say the same thing; an absent file is not checked
 * (the journal presence check names it). Cost: one read of the file.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ACTIVITY_SCHEMA } from './activity-schema.js';
import { journalError, type JournalName } from './database.js';
import { SESSIONS_SCHEMA } from './sessions.js';

/** quick_check over one file; what it finds is thrown as SQLite throws a damaged read. */
function checkFile(file: string): void {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const found = db.pragma('quick_check', { simple: false }) as { quick_check: string }[];
    if (found.length !== 1 || found[0]?.quick_check !== 'ok') throw new Database.SqliteError('quick_check found damaged pages', 'SQLITE_CORRUPT');
  } finally {
    db.close();
  }
}

/** Reads every page of both journal files of `dir`; throws JOURNAL_DAMAGED (or JOURNAL_UNAVAILABLE) naming the first that fails. */
export function checkJournalPages(dir: string): void {
  for (const [name, file] of [['sessions', SESSIONS_SCHEMA.file], ['activity', ACTIVITY_SCHEMA.file]] as const satisfies readonly (readonly [JournalName, string])[]) {
    const path = join(dir, file);
    if (!existsSync(path)) continue;
    try {
      checkFile(path);
    } catch (e) {
      throw journalError(name, 'read every page', e);
    }
  }
}
