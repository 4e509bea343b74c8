/**
 * Reads what the drain counts need from the two journals (opened read-only by
 * the caller): every call's head entry, and the live sessions — sessions of
 * the daemon's latest start that have not closed, with their last listing.
 * A daemon that died without its `daemon_stopped` entry leaves its sessions
 * counted as live until it starts again (the journal cannot tell).
 */
import type { Catalog } from '../contracts/index.js';
import type { Journals } from '../journal/index.js';
import { MAX_LIMIT } from '../journal/filters.js';
import { revisionDrain, type LiveSession, type RevisionUsage, type WaitingCall } from './revision-drain.js';

function liveSessions(j: Journals): LiveSession[] {
  const started = j.sessions.latestEvent(null, 'daemon_started');
  const stopped = j.sessions.latestEvent(null, 'daemon_stopped');
  if (started === undefined || (stopped !== undefined && stopped.seq > started.seq)) return [];
  return j.sessions
    .listSessions({ since: started.at, limit: MAX_LIMIT })
    .filter((s) => s.ended_at === null && s.seq > started.seq)
    .map((s) => {
      const listed = j.sessions.latestEvent(s.session_id, 'tools_listed');
      const revisions = listed?.data['revisions'];
      const ok = typeof revisions === 'object' && revisions !== null && Object.values(revisions).every((v) => Number.isInteger(v));
      return { session_id: s.session_id, listed: listed === undefined || !ok ? undefined : { at: listed.at, revisions: revisions as Record<string, number> } };
    });
}

export function readDrain(j: Journals, catalog: Catalog | undefined, opts: { since?: string | undefined; tool?: string | undefined; waiting?: readonly WaitingCall[] | undefined } = {}): RevisionUsage[] {
  return revisionDrain({ heads: j.activity.callHeads(), live: liveSessions(j), catalog, since: opts.since, tool: opts.tool, waiting: opts.waiting });
}
