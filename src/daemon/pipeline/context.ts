/**
 * What a call stage can see: the daemon's services and the calling session.
 * Plain data and service handles, no behaviour.
 */
import type { Catalog } from '../../contracts/index.js';
import type { JournalGap } from '../../journal/gap.js';
import type { Credential } from '../../vault/index.js';
import type { MintedTokens } from '../services/minted-tokens.js';
import type { Clock } from '../../clock/index.js';
import type { IdleTracker } from '../services/idle.js';
import type { ApprovalQueue } from '../../approvals/queue.js';
import type { GrantStore } from '../../approvals/grants.js';
import type { Journals } from '../../journal/index.js';
import type { DaemonConfig } from '../services/config.js';
import type { DaemonState } from '../services/state.js';
import type { KeyReservations } from './key-reservations.js';
import type { PendingOutcomes } from './pending-outcomes.js';
import type { SshRunner } from '../../executors/ssh/index.js';
import type { GroupCommit } from './group-commit.js';
import type { HttpPool } from '../../executors/http/pool.js';
import type { ActivityView } from '../../protocol/operator/index.js';
import type { RuleBudgets } from '../../approvals/unattended.js';
import type { CallLimits } from '../services/limits.js';
import type { CallProfile } from '../services/call-profile.js';
import type { SessionsJournal } from '../services/journal-event.js';

/**
 * Everything a call can reach. No member is optional: a wiring that forgets
 * one does not compile. Where a daemon has nothing to offer, the composition
 * root (or a test) passes an explicit stand-in (stand-ins.ts): `noShadow`,
 * `noVaultFile`, `noActivityEvents`, `null` for no pool or no unattended mode.
 */
/** A pending catalog the operator started in shadow: every live call is planned under it too (stages/planning/shadow.ts). */
export interface ShadowCandidate {
  readonly digest: string;
  readonly catalog: Catalog;
}

export interface Services {
  readonly state: DaemonState;
  /** The journals, for reading; the Sessions journal is written through `sessionsJournal`, the Activity journal through journal-port.ts. */
  readonly journals: Journals;
  /** The one way into the Sessions journal (daemon/services/journal-event.ts): a failed write is logged, never thrown. */
  readonly sessionsJournal: SessionsJournal;
  /** The daemon's log, where a failure that changes nothing for the call is told (a journal write that failed). */
  readonly log: (line: string) => void;
  readonly queue: ApprovalQueue;
  readonly grants: GrantStore;
  readonly reservations: KeyReservations;
  /** The gap a restored journal left (journal/gap.ts): keys that may have been claimed there are refused, never run blindly. */
  readonly gap: JournalGap;
  readonly config: DaemonConfig;
  /** The SSH connection pool. */
  readonly ssh: SshRunner;
  /** Kept-alive HTTP connections; null when `http.keep_alive_seconds` is 0 (a connection per call). */
  readonly http: HttpPool | null;
  /** Access tokens minted from lifecycle credentials (OAuth, GitHub App), cached until shortly before they expire. */
  readonly tokens: MintedTokens;
  /** Saves a refresh token the server rotated back to the vault (src/daemon/services/refresh-token-store.ts). */
  readonly keepRefreshToken: (credential: Credential, next: Uint8Array) => Promise<void>;
  /** The daemon's one clock (records and retention: wall; durations: monotonic). */
  readonly clock: Clock;
  /** Idleness for the idle lock: every call touches it. */
  readonly idleness: IdleTracker;
  /** Calls being handled, so shutdown can let them finish. */
  readonly inflight: Set<Promise<unknown>>;
  /**
   * The vault file the daemon follows (vault-follow.ts): a call refreshes it
   * before it looks up its credential. `noVaultFile` for a vault held only in memory.
   */
  readonly vaultFile: { refresh(): Promise<void> };
  /** Intents and outcomes of the calls in flight, written together (group commit). */
  readonly commits: GroupCommit;
  /** Finished calls whose outcome the journal has not taken yet (retried in the background). */
  readonly pendingOutcomes: PendingOutcomes;
  /** The pending catalog an operator runs in shadow (stages/planning/shadow.ts), or null; `noShadow` when there is none to run. */
  readonly shadow: () => ShadowCandidate | null;
  /** The catalog's limits, counted (daemon/services/limits.ts). */
  readonly limits: CallLimits;
  /** Where calls spend their time, phase by phase (daemon/services/call-profile.ts). */
  readonly profile: CallProfile;
  /** Each call as it advances (rejected, in progress, finished, replayed), for the operator channel's activity events. */
  readonly onActivity: (v: ActivityView) => void;
  /**
   * Set when the daemon runs unattended: no operator approves, the catalog's
   * pre-approval rules do (with their budgets), and anything else is APPROVAL_UNAVAILABLE. Null: an operator approves.
   */
  readonly unattended: RuleBudgets | null;
}

export interface SessionInfo {
  readonly id: string;
  clientName: string | null;
  clientVersion: string | null;
  protocolVersion: string | null;
  /** As declared by the `postern mcp` shim (not authenticated). */
  pid: number | null;
  /** The run id of the session's first request that carried one. */
  runId: string | null;
  /** The agent release the client declared (`dev.postern/agent_release`), not authenticated. */
  agentRelease: string | null;
  /** The revision of each tool this session was last shown (or, after a reconnect, that the shim declared it relayed). */
  readonly seen: Map<string, number>;
  /** The toolset version of the session's last listing (or the one the shim declared); null before any. */
  listedToolset: string | null;
  /**
   * The OS user on the other end, from the kernel (SO_PEERCRED) on the shared
   * agent socket (docs/agent-users.md); absent on the private socket and the
   * HTTP listener, whose callers are the operator's own user.
   */
  peer?: { readonly uid: number; readonly user: string | null };
}

export interface CallRequest {
  readonly name: string;
  readonly arguments: unknown;
  readonly meta: Readonly<Record<string, unknown>>;
  readonly signal: AbortSignal;
  /** Sends an MCP progress notification, when the client asked for progress. */
  readonly progress: (message: string) => void;
  /**
   * The call runs as an MCP task (2025-11-25 `tasks`): its request was answered
   * at once and the client polls, so no client timeout runs — an approval wait
   * lasts the whole approval timeout, as for a client that sent a progress token.
   */
  readonly asTask?: boolean;
  /** Where the call stands, in one line (a task's `statusMessage`); never carries a secret. */
  readonly status?: (message: string) => void;
}

/**
 * The call's MCP progress token, when its client asked for progress. A client
 * that sends one declares it can be kept waiting: progress resets its timeout
 * (`resetTimeoutOnProgress` in the SDKs); without one its own timeout runs.
 */
export function progressTokenOf(meta: Readonly<Record<string, unknown>>): string | number | undefined {
  const token = meta['progressToken'];
  return typeof token === 'string' || typeof token === 'number' ? token : undefined;
}

import { META_PREFIX } from '../../protocol/tool-name.js';

export { META_PREFIX };
export const META_REVISION = `${META_PREFIX}/revision`;
export const META_TOOLSET = `${META_PREFIX}/toolset`;
export const META_RUN_ID = `${META_PREFIX}/run_id`;
export const META_AGENT_RELEASE = `${META_PREFIX}/agent_release`;
/** On a result given in an older revision's shape: `{ from_revision, to_revision, steps }`. */
export const META_OUTPUT_ADAPTED = `${META_PREFIX}/output_adapted`;
/** In `tools/list`: the deprecated revisions of the tool still served (contracts/changes/deprecation.ts). */
export const META_DEPRECATED_REVISIONS = `${META_PREFIX}/deprecated_revisions`;
/** In a result: the deprecation of the revision the call was planned against. */
export const META_DEPRECATION = `${META_PREFIX}/deprecation`;
