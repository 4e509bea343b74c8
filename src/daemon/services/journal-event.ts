/**
 * The daemon's one way into the Sessions journal, as the call pipeline's
 * journal-port.ts is for the Activity journal: a session's start and end, and
 * every daemon or session event, written where it happens. A write that fails
 * is logged (`journal: …`) and never fails what the daemon was doing: the
 * Sessions journal records what happened around the calls, and each call is
 * journaled where it matters (its intent and outcome, in the Activity
 * journal), so nothing is run or refused on the strength of these entries.
 *
 * Invariant: no other daemon code writes `journals.sessions` (a test reads
 * the sources for it), so no failed write is dropped silently.
 */
import type { Journals, SessionStart } from '../../journal/index.js';
import { isPosternError } from '../../rules/errors.js';

export type JournalEvent = (session: string | null, type: Parameters<Journals['sessions']['event']>[1], data: Record<string, unknown>) => void;

/** The Sessions journal as the daemon writes it: every method logs a failure and returns. */
export interface SessionsJournal {
  readonly event: JournalEvent;
  startSession(start: SessionStart): void;
  endSession(session: string, reason: string): void;
}

/** The line a failed journal write is logged as. */
export function journalWriteFailed(e: unknown): string {
  return `journal: ${isPosternError(e) ? e.message : 'write failed'}`;
}

export function sessionsJournal(journals: Journals, log: (line: string) => void): SessionsJournal {
  const write = (fn: () => void): void => {
    try {
      fn();
    } catch (e) {
      log(journalWriteFailed(e));
    }
  };
  return {
    event: (session, type, data) => write(() => journals.sessions.event(session, type, data)),
    startSession: (start) => write(() => journals.sessions.startSession(start)),
    endSession: (session, reason) => write(() => journals.sessions.endSession(session, reason)),
  };
}
