/**
 * The call pipeline's services for a daemon in this process, over a vault
 * and journals the caller opened: what tests and the benchmark run calls
 * against without spawning a daemon. Everything a call can reach is built
 * as the composition root builds it (limits counted from the journal, a
 * token cache that teaches the redactor, group commit); what only a daemon
 * with a home has (a vault file to follow, a shadow catalog, an operator
 * channel, unattended rules) is an explicit stand-in unless `parts` gives it.
 */
import { JournalGap } from '../journal/gap.js';
import { ApprovalQueue } from '../approvals/queue.js';
import { GrantStore } from '../approvals/grants.js';
import type { Catalog } from '../contracts/index.js';
import { SshPool } from '../executors/ssh/index.js';
import { HttpPool } from '../executors/http/index.js';
import type { Clock } from '../clock/index.js';
import type { Journals } from '../journal/index.js';
import type { UnlockedVault } from '../vault/index.js';
import { CallLimits } from './services/limits.js';
import { CallProfile } from './services/call-profile.js';
import type { DaemonConfig } from './services/config.js';
import { IdleTracker } from './services/idle.js';
import { MintedTokens } from './services/minted-tokens.js';
import { GroupCommit } from './pipeline/group-commit.js';
import { KeyReservations } from './pipeline/key-reservations.js';
import { PendingOutcomes } from './pipeline/pending-outcomes.js';
import type { Services } from './pipeline/context.js';
import { DaemonState, snapshotOf } from './services/state.js';
import { memoryOnlyRefreshToken, noActivityEvents, noShadow, noVaultFile } from './pipeline/stand-ins.js';
import { sessionsJournal } from './services/journal-event.js';

export interface InProcessBase {
  readonly vault: UnlockedVault;
  readonly catalog: Catalog;
  /** The catalog's digest as the snapshot carries it. */
  readonly digest: string;
  readonly journals: Journals;
  readonly config: DaemonConfig;
  readonly clock: Clock;
  /** Where background failures (an outcome the journal refused) are told. */
  readonly log?: (line: string) => void;
}

export function inProcessServices(base: InProcessBase, parts: Partial<Services> = {}): Services {
  const { clock, journals, config } = base;
  const log = base.log ?? ((): void => undefined);
  const state = parts.state ?? new DaemonState(base.vault, snapshotOf(base.catalog, base.digest, null));
  const inflight = parts.inflight ?? new Set<Promise<unknown>>();
  const learn = (name: string, token: Uint8Array): void => state.learnMinted(name, token);
  return {
    state,
    journals,
    sessionsJournal: sessionsJournal(journals, log),
    log,
    queue: new ApprovalQueue(clock),
    grants: new GrantStore(),
    reservations: new KeyReservations(),
    gap: JournalGap.read(journals.sessions),
    config,
    ssh: new SshPool({ idleMs: config.ssh.idle_close_seconds * 1000, maxChannelsPerConnection: config.ssh.max_channels_per_connection }),
    http: config.http.keep_alive_seconds > 0 ? new HttpPool({ keepAliveMs: config.http.keep_alive_seconds * 1000 }) : null,
    tokens: new MintedTokens({ clock, learn }),
    keepRefreshToken: memoryOnlyRefreshToken(learn),
    clock,
    idleness: new IdleTracker(clock, config.idle_lock_minutes * 60_000),
    inflight,
    vaultFile: noVaultFile(),
    commits: new GroupCommit(journals.activity, { busy: () => inflight.size > 1 }),
    pendingOutcomes: new PendingOutcomes((id, o, busyTimeoutMs) => journals.activity.recordOutcome(id, o, busyTimeoutMs === undefined ? {} : { busyTimeoutMs }), log),
    shadow: noShadow,
    limits: CallLimits.fromActivity(clock, journals.activity),
    profile: new CallProfile(),
    onActivity: noActivityEvents,
    unattended: null,
    ...parts,
  };
}
