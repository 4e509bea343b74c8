/**
 * The call's Services, assembled in one place for both composition roots:
 * the daemon (../run.ts) and a daemon in this process (../in-process.ts).
 * What every daemon builds alike is built here — key reservations, the gap a
 * restored journal left, group commit, pending outcomes, the limits counted
 * from the journal, the call profile and, unless the wiring already made them
 * (it shares them with the lock cascade and the catalog control), the
 * approval queue, the grants, the connection pools, the token cache and
 * idleness. What only a daemon with a home has comes in `parts`, each named:
 * stand-ins.ts where there is none.
 */
import { JournalGap } from '../../journal/gap.js';
import { ApprovalQueue } from '../../approvals/queue.js';
import { GrantStore } from '../../approvals/grants.js';
import { SshPool } from '../../executors/ssh/index.js';
import { HttpPool } from '../../executors/http/index.js';
import type { Clock } from '../../clock/index.js';
import type { Journals } from '../../journal/index.js';
import { CallLimits } from '../services/limits.js';
import { CallProfile } from '../services/call-profile.js';
import type { DaemonConfig } from '../services/config.js';
import { IdleTracker } from '../services/idle.js';
import { MintedTokens } from '../services/minted-tokens.js';
import type { DaemonState } from '../services/state.js';
import { sessionsJournal } from '../services/journal-event.js';
import { GroupCommit } from './group-commit.js';
import { KeyReservations } from './key-reservations.js';
import { PendingOutcomes } from './pending-outcomes.js';
import type { Services } from './context.js';

interface ServicesBase {
  readonly state: DaemonState;
  readonly journals: Journals;
  readonly config: DaemonConfig;
  readonly clock: Clock;
  /** Where background failures (a journal write that failed, an outcome the journal refused) are told. */
  readonly log: (line: string) => void;
  /** The durable copy of the outcomes the journal has not taken yet (pending-outcomes.ts); null when they are kept in memory only. */
  readonly pendingFile: string | null;
}

/** What the wiring decides for itself: how the vault and the catalog are followed, who sees the calls, who approves. */
type ServiceParts = Pick<Services, 'keepRefreshToken' | 'vaultFile' | 'shadow' | 'onActivity' | 'unattended'>;

/** The SSH connection pool config.yaml asks for. */
export function sshPoolFor(config: DaemonConfig): SshPool {
  return new SshPool({ idleMs: config.ssh.idle_close_seconds * 1000, maxChannelsPerConnection: config.ssh.max_channels_per_connection });
}

/** Kept-alive HTTP connections, or null when `http.keep_alive_seconds` is 0 (a connection per call). */
export function httpPoolFor(config: DaemonConfig): HttpPool | null {
  return config.http.keep_alive_seconds > 0 ? new HttpPool({ keepAliveMs: config.http.keep_alive_seconds * 1000 }) : null;
}

/** The Services over `base`: every member `parts` gives is used as given, the rest is built here. */
export function buildServices(base: ServicesBase, parts: ServiceParts & Partial<Services>): Services {
  const { state, journals, config, clock, log } = base;
  const inflight = parts.inflight ?? new Set<Promise<unknown>>();
  return {
    state,
    journals,
    sessionsJournal: parts.sessionsJournal ?? sessionsJournal(journals, log),
    log,
    queue: parts.queue ?? new ApprovalQueue(clock),
    grants: parts.grants ?? new GrantStore(),
    reservations: new KeyReservations(),
    gap: JournalGap.read(journals.sessions),
    config,
    ssh: parts.ssh ?? sshPoolFor(config),
    http: parts.http === undefined ? httpPoolFor(config) : parts.http,
    tokens: parts.tokens ?? new MintedTokens({ clock, learn: (name, token) => state.learnMinted(name, token) }),
    clock,
    idleness: parts.idleness ?? new IdleTracker(clock, config.idle_lock_minutes * 60_000),
    inflight,
    // Intents and outcomes of concurrent calls share one commit.
    commits: new GroupCommit(journals.activity, { busy: () => inflight.size > 1 }),
    pendingOutcomes: new PendingOutcomes((id, o, busyTimeoutMs) => journals.activity.recordOutcome(id, o, busyTimeoutMs === undefined ? {} : { busyTimeoutMs }), log, undefined, base.pendingFile ?? undefined),
    // The journal's executed calls are the one truth for the limits: counted again at every start.
    limits: CallLimits.fromActivity(clock, journals.activity),
    profile: new CallProfile(),
    ...parts,
  };
}
