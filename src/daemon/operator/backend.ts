/**
 * The operator channel's view of the daemon (OperatorBackend): what each op
 * reads or changes, built by the composition root from the daemon's parts.
 *
 * Invariants: nothing here returns a secret value or a raw argument value;
 * live sessions come from the daemon's own table, ended ones from the
 * sessions journal; activity comes from the activity journal, newest first,
 * bounded by MAX_ACTIVITY; a journal that cannot be read gives an empty list,
 * never a failed snapshot.
 */
import type { ApprovalQueue } from '../../approvals/queue.js';
import type { Grant, GrantStore } from '../../approvals/grants.js';
import type { Journals } from '../../journal/index.js';
import { PosternError } from '../../rules/errors.js';
import { MAX_ACTIVITY, OPERATOR_VERSION, type ActivityView, type CatalogInUse, type CatalogPendingView, type CredentialStateView, type CallsProfileView, type DeviceView, type GrantView, type PageStatusView, type PairingView, type RunReport, type SessionView, type ShadowChange, type StatusView } from '../../protocol/operator/index.js';
import { VERSION } from '../../version.js';
import { activityOfJournal } from '../services/activity-view.js';
import type { OperatorBackend } from './handlers.js';

/** The reason recorded for a grant the operator revoked (`grants.revoke`). */
export const OPERATOR_REVOKED = 'revoked by the operator';

export function grantView(g: Grant): GrantView {
  return { id: g.approvalId, session_id: g.sessionId, tool: g.tool, revision: g.revision, scope: 'session', authority_digest: g.authorityDigest, granted_at: g.grantedAt, by: g.grantedBy };
}

export interface BackendParts {
  readonly queue: ApprovalQueue;
  readonly grants: GrantStore;
  readonly journals: Journals | null;
  readonly operatorName: string;
  /** Live sessions of this daemon, by id. */
  readonly live: ReadonlyMap<string, SessionView>;
  readonly status: () => Omit<StatusView, 'role' | 'protocol_version' | 'daemon_version' | 'sessions' | 'pending' | 'grants'>;
  readonly catalogPending: () => CatalogPendingView | null;
  readonly acceptCatalog?: (digest: string) => Promise<CatalogInUse>;
  readonly rejectCatalog?: (digest: string) => Promise<void>;
  readonly shadowCatalog?: (digest: string | null) => Promise<ShadowChange>;
  readonly lock: () => void;
  /** Signs a journal checkpoint now (the anchor keeper's); absent in a backend without journals. */
  readonly checkpointNow?: () => { signed: boolean };
  /** This run's report (run-report.ts); absent in a backend without one. */
  readonly runReport?: () => RunReport;
  /** The minted-token cache's states (src/daemon/services/minted-tokens.ts); none when absent. */
  readonly credentialStates?: () => CredentialStateView[];
  /** The daemon's call profile (daemon/services/call-profile.ts); empty when absent. */
  readonly callsProfile?: () => CallsProfileView;
  /** The approval page's devices (daemon/approval-page); absent: the page is not part of this daemon. */
  readonly devices?: {
    pair(name: string): PairingView;
    list(): DeviceView[];
    revoke(id: string): Promise<DeviceView>;
    page(): PageStatusView | null;
  };
}

/** The approval page's run fingerprint for the status line, when a page runs. */
const pageRun = (page: PageStatusView | null): { page_run?: string } => (page === null ? {} : { page_run: page.run_fingerprint });

const NO_PAGE = 'this daemon has no approval page: run `postern approvals page enable`, then restart the daemon';

function quietly<T>(fn: () => T[]): T[] {
  try {
    return fn();
  } catch {
    return [];
  }
}

export function createBackend(p: BackendParts): OperatorBackend {
  return {
    queue: p.queue,
    operatorName: p.operatorName,
    credentialStates: () => p.credentialStates?.() ?? [],
    callsProfile: () => p.callsProfile?.() ?? { calls: 0, mean_ms: 0, phases: [] },
    status: (role) => ({
      ...p.status(),
      protocol_version: OPERATOR_VERSION,
      daemon_version: VERSION,
      sessions: p.live.size,
      pending: p.queue.list().length,
      grants: p.grants.list().length,
      ...pageRun(p.devices?.page() ?? null),
      role,
    }),
    sessions: ({ include_ended, limit }) => {
      const max = Math.min(limit ?? 100, MAX_ACTIVITY);
      const live = [...p.live.values()].sort((a, b) => b.started_at.localeCompare(a.started_at));
      if (include_ended !== true || p.journals === null) return live.slice(0, max);
      const j = p.journals;
      const ended = quietly(() => j.sessions.listSessions({ limit: max }))
        .filter((s) => !p.live.has(s.session_id))
        .map((s): SessionView => ({
          id: s.session_id,
          client_name: s.client_name,
          client_version: s.client_version,
          pid: s.peer_pid,
          protocol_version: s.protocol_version,
          started_at: s.started_at,
          // A session of an earlier daemon run that never closed (a crash) is not live either.
          ended_at: s.ended_at ?? s.started_at,
          end_reason: s.end_reason ?? (s.ended_at === null ? 'the daemon stopped' : null),
        }));
      return [...live, ...ended].slice(0, max);
    },
    grants: (sessionId) => p.grants.list().filter((g) => sessionId === undefined || g.sessionId === sessionId).map(grantView),
    revokeGrant: (id) => {
      const g = p.grants.revoke(id, OPERATOR_REVOKED);
      if (g === undefined) throw new PosternError('APPROVAL_NOT_FOUND', `no grant ${id.slice(0, 64)}`);
      return grantView(g);
    },
    activity: (f): ActivityView[] => {
      if (p.journals === null) return [];
      const j = p.journals;
      const limit = Math.min(f.limit ?? 100, MAX_ACTIVITY);
      // The journal filters what it can; status and decision are filtered here, so read more than asked.
      const wide = f.status !== undefined || f.decision !== undefined || f.error_code === true;
      const rows = quietly(() =>
        j.activity.listCalls({
          limit: wide ? MAX_ACTIVITY * 4 : limit,
          ...(f.session_id === undefined ? {} : { session_id: f.session_id }),
          ...(f.tool === undefined ? {} : { tool: f.tool }),
          ...(typeof f.error_code === 'string' ? { error_code: f.error_code } : {}),
        }),
      );
      return rows
        .map(activityOfJournal)
        .filter((a) => (f.status === undefined || a.status === f.status) && (f.decision === undefined || a.decision === f.decision) && (f.error_code !== true || a.error_code !== null))
        .slice(0, limit);
    },
    catalogPending: p.catalogPending,
    acceptCatalog: (digest) => {
      if (p.acceptCatalog === undefined) {
        return Promise.reject(new PosternError('CATALOG_PENDING', 'this daemon does not accept catalogs over the operator channel: run `postern catalog accept`'));
      }
      return p.acceptCatalog(digest);
    },
    rejectCatalog: (digest) => {
      if (p.rejectCatalog === undefined) return Promise.reject(new PosternError('CATALOG_PENDING', 'this daemon does not reject catalogs over the operator channel: restore catalog.yaml or run `postern catalog accept`'));
      return p.rejectCatalog(digest);
    },
    shadowCatalog: (digest) => {
      if (p.shadowCatalog === undefined) return Promise.reject(new PosternError('CATALOG_PENDING', 'this daemon does not run catalogs in shadow'));
      return p.shadowCatalog(digest);
    },
    lock: p.lock,
    checkpointNow: () => {
      if (p.checkpointNow === undefined) throw new PosternError('JOURNAL_UNAVAILABLE', 'this daemon keeps no anchored journal to checkpoint');
      return p.checkpointNow();
    },
    pairDevice: (name) => {
      if (p.devices === undefined) throw new PosternError('USAGE', NO_PAGE);
      return p.devices.pair(name);
    },
    devices: () => p.devices?.list() ?? [],
    pageStatus: () => p.devices?.page() ?? null,
    revokeDevice: (id) => {
      if (p.devices === undefined) return Promise.reject(new PosternError('DEVICE_NOT_FOUND', `no paired device ${id.slice(0, 32)}`));
      return p.devices.revoke(id);
    },
    runReport: () => {
      if (p.runReport === undefined) throw new PosternError('DAEMON_UNAVAILABLE', 'this daemon keeps no run report');
      return p.runReport();
    },
  };
}
