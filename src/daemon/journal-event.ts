/**
 * A daemon event for the Sessions journal, written where it happens. A
 * failed write is logged and never fails what the daemon was doing (the
 * journal's own failure path has recorded it).
 */
import type { Journals } from '../journal/index.js';
import { isPosternError } from '../rules/errors.js';

export type JournalEvent = (session: string | null, type: Parameters<Journals['sessions']['event']>[1], data: Record<string, unknown>) => void;

export function journalEventWriter(journals: Journals, log: (line: string) => void): JournalEvent {
  return (session, type, data) => {
    try {
      journals.sessions.event(session, type, data);
    } catch (e) {
      log(`journal: ${isPosternError(e) ? e.message : 'write failed'}`);
    }
  };
}
