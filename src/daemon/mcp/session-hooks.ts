/**
 * A session's start and end as the daemon records them: the live list and
 * its events for the operator, the Sessions journal, and at the end the
 * cards it left open (APPROVAL_PENDING) and the grants it held, which leave
 * with it.
 */
import type { ApprovalQueue } from '../../approvals/queue.js';
import type { GrantStore } from '../../approvals/grants.js';
import type { Clock } from '../../clock/index.js';
import type { SessionView } from '../../protocol/operator/index.js';
import type { EventBus } from '../services/events.js';
import type { IdleTracker } from '../services/idle.js';
import type { SessionsJournal } from '../services/journal-event.js';
import type { SessionInfo } from '../pipeline/context.js';

export interface SessionHooks {
  sessionStarted(s: SessionInfo): void;
  sessionEnded(s: SessionInfo): void;
}

interface SessionHookParts {
  readonly clock: Clock;
  readonly idleness: IdleTracker;
  readonly live: Map<string, SessionView>;
  readonly bus: EventBus;
  readonly queue: ApprovalQueue;
  readonly grants: GrantStore;
  /** Where the start, the end and the grants revoked at the end are journaled (a failed write is logged there). */
  readonly sessions: SessionsJournal;
}

export function sessionHooks(p: SessionHookParts, transport: 'stdio-socket' | 'http' | 'ssh-gateway'): SessionHooks {
  return {
    sessionStarted: (s) => {
      p.idleness.touch();
      const view: SessionView = { id: s.id, client_name: s.clientName, client_version: s.clientVersion, pid: s.pid, protocol_version: s.protocolVersion, started_at: p.clock.now().toISOString(), ended_at: null, end_reason: null };
      p.live.set(s.id, view);
      p.bus.emit({ type: 'session.opened', session: view });
      p.sessions.startSession({ session_id: s.id, transport, client_name: s.clientName, client_version: s.clientVersion, protocol_version: s.protocolVersion, peer_pid: s.pid, peer_uid: s.peer?.uid ?? null, ...(s.peer === undefined ? {} : { peer_user: s.peer.user }), run_id: s.runId, agent_release: s.agentRelease });
    },
    sessionEnded: (s) => {
      if (p.live.delete(s.id)) p.bus.emit({ type: 'session.closed', id: s.id, ended_at: p.clock.now().toISOString() });
      p.queue.parked.dropSession(s.id);
      for (const g of p.grants.revokeSession(s.id)) p.sessions.event(s.id, 'grant_revoked', { tool: g.tool, reason: 'session ended' });
      p.sessions.endSession(s.id, 'disconnected');
    },
  };
}
