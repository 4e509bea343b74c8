/**
 * The journals' entry point: `openJournals(dir)` opens (creating if needed)
 * `sessions.db` and `activity.db` in a private directory and, for the daemon,
 * turns every call left with an intent and no outcome into `outcome_unknown`.
 *
 * Invariants:
 * - the directory is 0700 and the files 0600 (HOME_UNSAFE otherwise); a file
 *   that is corrupt, foreign, from a newer schema, locked or unwritable makes
 *   the open fail with JOURNAL_UNAVAILABLE — the daemon must not start then;
 * - recovery runs before `openJournals` returns, so no call is served while
 *   an earlier call's fate is still shown as in progress;
 * - `{ readonly: true }` is for the audit while a daemon may be running: no
 *   recovery (it would wrongly end that daemon's live calls), no writes.
 *
 * Caller contract: values are stored as given; redact secrets before calling.
 */
import type Database from 'better-sqlite3';
import { systemClock, type Clock } from '../clock/index.js';
import { createActivityJournal } from './activity.js';
import type { ActivityJournal } from './activity.js';
import { ACTIVITY_SCHEMA } from './activity-schema.js';
import { ActivityStore } from './activity-store.js';
import { ensureJournalDir, openJournalDb } from './database.js';
import { recoverOpenCalls } from './recovery.js';
import { createSessionsJournal, SESSIONS_SCHEMA } from './sessions.js';
import type { SessionsJournal } from './sessions.js';

export type { ActivityJournal, HistoricalArguments, IntentResult } from './activity.js';
export type { SessionsJournal } from './sessions.js';
export type * from './types.js';
export { SESSION_EVENT_TYPES } from './types.js';
export { BUSY_TIMEOUT_MS } from './database.js';

export interface Journals {
  readonly sessions: SessionsJournal;
  readonly activity: ActivityJournal;
  /** Call ids that recovery marked outcome_unknown during this open. */
  readonly recovered: readonly string[];
  close(): void;
}

export interface OpenOptions {
  /** The clock that stamps entries; the system clock by default (the daemon passes its own). */
  readonly clock?: Clock;
  /** Open existing journals without writing: no creation, no recovery. */
  readonly readonly?: boolean;
}

export function openJournals(dir: string, opts: OpenOptions = {}): Journals {
  const clock = opts.clock ?? systemClock;
  const now = (): Date => clock.now();
  const readonly = opts.readonly ?? false;
  if (!readonly) ensureJournalDir(dir);
  const opened: Database.Database[] = [];
  try {
    const sessionsDb = openJournalDb(dir, SESSIONS_SCHEMA, readonly);
    opened.push(sessionsDb);
    const activityDb = openJournalDb(dir, ACTIVITY_SCHEMA, readonly);
    opened.push(activityDb);
    const store = new ActivityStore(activityDb, now);
    const recovered = readonly ? [] : recoverOpenCalls(store);
    return {
      sessions: createSessionsJournal(sessionsDb, now),
      activity: createActivityJournal(store),
      recovered: Object.freeze(recovered),
      close() {
        for (const db of opened) if (db.open) db.close();
      },
    };
  } catch (e) {
    for (const db of opened) db.close();
    throw e;
  }
}
