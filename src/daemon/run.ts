/**
 * The daemon's composition root: it only wires. It unlocks the vault, loads
 * the accepted catalog (lifecycle/catalog-control.ts), opens the anchored
 * journals (recovering interrupted calls as outcome_unknown), builds the
 * services a call reaches (pipeline/build-services.ts, the type in
 * pipeline/context.ts: no member optional), and starts the agent socket, the
 * optional HTTP listener and the operator channel. What each part does lives
 * in its own module: the catalog's adoption and the operator's hold on it
 * (lifecycle/catalog-control.ts), new vault generations
 * (lifecycle/vault-follow.ts), what a lock takes with it
 * (lifecycle/lock-cascade.ts), sessions (mcp/session-hooks.ts), a rotated
 * refresh token (services/refresh-token-store.ts) and a clean stop
 * (lifecycle/shutdown.ts). One daemon per home (a lock file in the 0700 run
 * directory). Start-up is all or nothing: whatever started before a failure
 * is stopped again.
 */
import { watch, type FSWatcher } from 'node:fs';
import { basename, join } from 'node:path';
import type { MessagePort } from 'node:worker_threads';
import { ApprovalQueue } from '../approvals/queue.js';
import { GrantStore } from '../approvals/grants.js';
import { RuleBudgets } from '../approvals/unattended.js';
import type { Clock } from '../clock/index.js';
import type { HomePaths } from '../home/paths.js';
import { openAnchoredJournals, type AnchoredJournals, type RecordedJournal } from '../journal/anchor/index.js';
import { isPosternError } from '../rules/errors.js';
import type { SessionView } from '../protocol/operator/index.js';
import { belowFloorWarning, belowProductionFloor, describeKdf, openVault, vaultOptionsFor, type KdfProfile, type UnlockedVault, type VaultOptions } from '../vault/index.js';
import { startAgentSocket, type AgentEndpoint } from './mcp/agent-socket.js';
import { startSharedAgentSocket } from './mcp/shared-agent-socket.js';
import { CatalogControl, loadSnapshot } from './lifecycle/catalog-control.js';
import { loadConfig, type DaemonConfig } from './services/config.js';
import { EventBus } from './services/events.js';
import { startHttpIfAuthorized } from './http/start.js';
import { startSshGatewayIfAuthorized } from './ssh-gateway/start.js';
import { wireApprovalPage } from './approval-page/wiring.js';
import { IdleTracker } from './services/idle.js';
import { sessionsJournal, type JournalEvent } from './services/journal-event.js';
import { lockCascade } from './lifecycle/lock-cascade.js';
import { MintedTokens } from './services/minted-tokens.js';
import { rememberMinted } from './services/remembered-store.js';
import { startOperatorServer, type OperatorServer } from './operator/index.js';
import { createBackend, grantView, OPERATOR_REVOKED, type BackendParts } from './operator/backend.js';
import type { Services } from './pipeline/context.js';
import { clearPendingOutcomes, PENDING_OUTCOMES_FILE, readPendingOutcomes } from './pipeline/pending-outcomes.js';
import { buildServices, httpPoolFor, sshPoolFor } from './pipeline/build-services.js';
import { refreshTokenWriteBack } from './services/refresh-token-store.js';
import { RunReporter } from './lifecycle/run-report.js';
import { sessionHooks } from './mcp/session-hooks.js';
import { shutdown, type Endpoint } from './lifecycle/shutdown.js';
import { takeDaemonLock } from '../home/daemon-lock.js';
import { describeRecovery, finishPendingChange } from '../home/change-record.js';
import { describeFold, foldPendingIntoVault } from '../home/pending-secrets.js';
import { DaemonState } from './services/state.js';
import { onVaultChange, VaultFollower } from './lifecycle/vault-follow.js';
import { anchoredHeads, recordJournalInVault } from './lifecycle/journal-mark.js';
import { startShipping } from './lifecycle/ship-start.js';
import { shipProblem } from './lifecycle/ship-loop.js';

export interface DaemonHandle {
  readonly services: Services;
  readonly agent: AgentEndpoint;
  /** Every change an operator sees, numbered (src/daemon/services/events.ts). */
  readonly events: EventBus;
  /** The operator channel: `attachPort` serves a private in-process port (postern up). */
  readonly operator: OperatorServer;
  /** Re-reads the accepted catalog; returns true when a new one was adopted. */
  reloadCatalog(): Promise<boolean>;
  lock(reason: string): void;
  close(reason: string): Promise<void>;
}

interface DaemonOptions {
  /** The daemon's one clock, created by the caller (the composition root). */
  readonly clock: Clock;
  readonly log: (line: string) => void;
  /** A private in-process operator port (postern up): served like a socket connection, without the passphrase proof. */
  readonly operatorPort?: MessagePort;
  /** No human approver (`postern daemon --unattended`; config.yaml `unattended: true` does the same). */
  readonly unattended?: boolean;
  /** The key-derivation profile the caller chose (vault/kdf-profile.ts): the lowest vault cost opened. */
  readonly kdf: KdfProfile;
}

type Undo = () => Promise<void> | void;

export async function startDaemon(paths: HomePaths, passphrase: Uint8Array, opts: DaemonOptions): Promise<DaemonHandle> {
  const lockFile = await takeDaemonLock(paths);
  const started: Undo[] = [];
  try {
    return await compose(paths, passphrase, opts, started, () => lockFile.release());
  } catch (e) {
    for (const undo of started.reverse()) await (async () => undo())().catch(() => undefined);
    await lockFile.release();
    throw e;
  }
}

async function compose(paths: HomePaths, passphrase: Uint8Array, opts: DaemonOptions, started: Undo[], releaseLock: () => Promise<void>): Promise<DaemonHandle> {
  const { clock, log } = opts;
  const { config, vaultOpts, vault, snapshot, inUse, pendingFile, anchored, operatorKey } = await openHome(paths, passphrase, opts, started);
  const { journals, keeper } = anchored;

  const state = new DaemonState(vault, snapshot);
  const sessions = sessionsJournal(journals, log);
  const journalEvent = sessions.event;
  const bus = new EventBus(clock);
  // Off the call path: its own connection to the journals, its own timer (ship-loop.ts). The
  // connection string is read now, from the vault just opened.
  const ship = await startShipping({ paths, config, vault, clock, log, onProblem: (problem) => bus.emit({ type: 'ship.problem', problem }) });
  if (ship !== null) {
    started.push(() => ship.stop('the daemon stopped'));
    state.onLock(() => void ship.stop('the vault was locked'));
  }
  const inflight = new Set<Promise<unknown>>();
  const ssh = sshPoolFor(config);
  const http = httpPoolFor(config);
  // Minted tokens are secrets: the redactor learns each one, and the vault keeps it for later daemons, before it is used.
  const tokens: MintedTokens = new MintedTokens({ clock, learn: rememberMinted({ vaultPath: paths.vault, vault: vaultOpts, state, follower: { refresh: (): Promise<void> => follower.refresh() }, log }) });
  const idleness = new IdleTracker(clock, config.idle_lock_minutes * 60_000);
  const listeners: { broadcastListChanged(): Promise<number> }[] = [];
  const broadcastListChanged = async (): Promise<number> => (await Promise.all(listeners.map((l) => l.broadcastListChanged()))).reduce((a, b) => a + b, 0);
  // The follower and the catalog control need each other: a new vault may carry the mark of an accepted record.
  const rejudge = { now: (): void => undefined };
  const follower = new VaultFollower({ path: paths.vault, state, vault: vaultOpts, onChange: onVaultChange({ ssh, http, tokens, anchor: keeper, journalEvent, rejudgeCatalog: () => rejudge.now(), log }) });
  const queue = new ApprovalQueue(clock);
  const catalogs = new CatalogControl({ paths, clock, vault: vaultOpts, state, follower, queue, bus, anchor: keeper, journalEvent, log, broadcastListChanged, inUse });
  rejudge.now = () => void catalogs.rejudge();
  const grants = announcedGrants(bus, journalEvent);
  queue.subscribe((e) => bus.emit(e.type === 'added' ? { type: 'approval.added', card: e.card } : { type: 'approval.resolved', id: e.id, decision: e.decision }));
  queue.subscribe(() => idleness.touch());
  const unattended = opts.unattended === true || config.unattended ? new RuleBudgets() : null;
  const reporter = new RunReporter(clock, unattended ?? undefined);
  const svc = buildServices({ state, journals, config, clock, log, pendingFile }, {
    queue, grants, ssh, http, tokens, idleness, inflight, unattended,
    sessionsJournal: sessions,
    keepRefreshToken: refreshTokenWriteBack({ vaultPath: paths.vault, paths, vault: vaultOpts, state, tokens, follower, log }),
    vaultFile: follower,
    shadow: () => catalogs.shadowCandidate(),
    onActivity: (record) => {
      reporter.observe(record);
      bus.emit({ type: 'activity', record });
    },
  });
  let stopping = false;
  state.onLock(lockCascade({ queue, grants, ssh, http, tokens, bus, anchor: keeper, journalEvent, log, stopping: () => stopping }));
  let lockReason: string | null = null;
  state.onLock((reason) => void (lockReason = reason));

  const live = new Map<string, SessionView>();
  const hooks = (transport: 'stdio-socket' | 'http' | 'ssh-gateway'): ReturnType<typeof sessionHooks> => sessionHooks({ clock, idleness, live, bus, queue, grants, sessions }, transport);
  const agent = await startAgentSocket(paths.agentSocket, svc, hooks('stdio-socket'));
  started.push(() => agent.close());
  listeners.push(agent);
  // Other OS users the operator allowed (`postern agents allow`): a second socket beside the home, every peer checked.
  const shared = await startSharedAgentSocket({ paths, svc, hooks: hooks('stdio-socket'), key: () => (state.locked ? null : state.vault().deriveKey('catalog-mac')), log });
  if (shared !== null) {
    started.push(() => shared.close());
    listeners.push(shared);
  }
  // The optional HTTP listener: only when config.yaml enables it AND the operator authorized it.
  const httpEndpoint = await startHttpIfAuthorized({ paths, svc, config, key: vault.deriveKey('catalog-mac'), hooks: hooks('http'), log, journalEvent });
  if (httpEndpoint !== null) {
    started.push(() => httpEndpoint.close());
    listeners.push(httpEndpoint);
  }
  // The optional SSH gateway: likewise only when enabled AND authorized (docs/ssh-gateway.md).
  const gateway = await startSshGatewayIfAuthorized({ paths, svc, config, key: vault.deriveKey('catalog-mac'), hooks: hooks('ssh-gateway'), log, journalEvent });
  if (gateway !== null) started.push(() => gateway.close());
  const startedAt = clock.now().toISOString();
  const checkpointNow = (): { signed: boolean } => {
    keeper.checkpointNow('operator');
    return { signed: keeper.checkpointKey !== null };
  };
  // The approval page (off unless authorized) and its paired devices; pairing and revoking go through the operator channel.
  const page = await wireApprovalPage({ paths, clock, log, journals, journalEvent, queue, bus, vault: () => state.vault() });
  const backend = createBackend({ ...operatorBackend({ svc, catalogs, live, config, reporter, startedAt, vault, lockReason: () => lockReason, checkpointNow, shipProblem: () => (ship === null ? undefined : shipProblem(ship.status())) }), devices: page.deviceOps });
  const { running: runningPage, stopNotifications } = await page.start(() => backend.activity({ limit: 20 }));
  if (runningPage !== null) started.push(() => runningPage.close());
  started.push(stopNotifications);
  const operator = await startOperatorServer({ socketPath: paths.operatorSocket, key: () => (state.locked ? null : operatorKey), backend, bus });
  started.push(() => operator.close());
  if (opts.operatorPort !== undefined) void operator.attachPort(opts.operatorPort).catch((e: unknown) => log(`operator port: ${isPosternError(e) ? e.message : 'attach failed'}`));

  const watcher = watchHome(paths, follower, catalogs);
  const idle = idleLock(config, state, queue, idleness);
  // Learn the file's identity now (and adopt a save that landed while we started).
  await follower.refresh();
  await catalogs.refreshPending();
  announceStart({ journalEvent, bus, log, opts, vault, snapshot, recovered: journals.recovered.length, unattended, agentSocket: paths.agentSocket });

  const endpoints: Endpoint[] = [agent, ...(shared === null ? [] : [shared]), ...(httpEndpoint === null ? [] : [httpEndpoint]), ...(gateway === null ? [] : [gateway]), ...(runningPage === null ? [] : [runningPage]), operator];
  let closing: Promise<void> | undefined;
  return {
    services: svc,
    agent,
    events: bus,
    operator,
    reloadCatalog: () => catalogs.reload(),
    lock: (reason) => state.lock(reason),
    close: (reason) =>
      (closing ??= shutdown(
        {
          watchers: [() => watcher.close(), () => clearInterval(idle), stopNotifications, () => void ship?.stop('the daemon stopped')],
          endpoints, queue, inflight, ssh, http, state, journalEvent, log,
          pendingOutcomes: svc.pendingOutcomes,
          report: unattended === null ? null : { reporter, paths },
          beginStop: () => void (stopping = true),
          closeJournals: () => anchored.close(),
          release: async () => {
            operatorKey.fill(0);
            await releaseLock();
          },
        },
        reason,
      )),
  };
}

interface OpenedHome {
  readonly config: DaemonConfig;
  readonly vaultOpts: VaultOptions;
  readonly vault: UnlockedVault;
  readonly snapshot: Awaited<ReturnType<typeof loadSnapshot>>['snapshot'];
  readonly inUse: Awaited<ReturnType<typeof loadSnapshot>>['inUse'];
  /** Outcomes a call could not journal (the journal was locked), retried until journaled. */
  readonly pendingFile: string;
  readonly anchored: AnchoredJournals;
  readonly operatorKey: Uint8Array;
}

/**
 * The home as a daemon finds it, in order: a change a killed command left is
 * finished, received secrets folded into the vault, the vault unlocked, the
 * accepted catalog loaded, the anchored journals opened (and recorded in the
 * vault). Each part opened is pushed on `started`, to be undone if start fails.
 */
async function openHome(paths: HomePaths, passphrase: Uint8Array, opts: DaemonOptions, started: Undo[]): Promise<OpenedHome> {
  const { clock, log } = opts;
  // Every save records the journal's anchored heads in the vault, once the journals are open (journal-mark.ts).
  const journalHeads: { of?: () => RecordedJournal } = {};
  const vaultOpts: VaultOptions = { ...vaultOptionsFor(opts.kdf, clock), journalMark: () => journalHeads.of?.() };
  const config = await loadConfig(paths.config);
  // A change a killed command left is finished before anything is read (src/home/change-record.ts).
  const recovered = describeRecovery(await finishPendingChange(paths));
  if (recovered !== undefined) log(recovered);
  const folded = await foldPendingIntoVault({ paths, clock, vault: vaultOpts, out: log }, passphrase);
  const foldLine = describeFold(folded, paths.pendingSecrets);
  if (foldLine !== undefined) log(foldLine);
  const vault = await openVault(paths.vault, passphrase, vaultOpts);
  started.push(() => vault.lock());
  const { snapshot, inUse } = await loadSnapshot(paths, vault);
  // Outcomes the last daemon could not journal (the journal was locked) are journaled before recovery.
  const pendingFile = join(paths.journalDir, PENDING_OUTCOMES_FILE);
  const settle = readPendingOutcomes(pendingFile);
  // Refuses a journal that is missing, emptied, replaced, rolled back or rewritten, and an older vault.
  const anchored = openAnchoredJournals({ settle, journalDir: paths.journalDir, anchorPath: paths.anchor, key: vault.deriveKey('journal-anchor'), vaultGeneration: vault.generation, catalogDigest: snapshot.digest, clock, log, checkpoints: { path: paths.checkpoints, seed: vault.deriveKey('journal-checkpoint') }, vaultJournal: vault.journal });
  started.push(() => anchored.close());
  journalHeads.of = anchoredHeads(anchored.keeper, paths.checkpoints);
  await recordJournalInVault(paths.vault, vault, journalHeads.of, vaultOpts, log);
  if (settle.length > 0) {
    await clearPendingOutcomes(pendingFile);
    log(`${settle.length} outcome(s) the last daemon could not journal were journaled`);
  }
  logJournalStart(anchored, paths, log);
  const operatorKey = Uint8Array.from(vault.deriveKey('operator-auth'));
  started.push(() => void operatorKey.fill(0));

  return { config, vaultOpts, vault, snapshot, inUse, pendingFile, anchored, operatorKey };
}

/** Locks the vault once nothing happened for `idle_lock_minutes` and no call waits (undefined: never). */
function idleLock(config: DaemonConfig, state: DaemonState, queue: ApprovalQueue, idleness: IdleTracker): NodeJS.Timeout | undefined {
  if (config.idle_lock_minutes <= 0) return undefined;
  const idle = setInterval(() => {
    if (!state.locked && queue.list().length === 0 && idleness.expired()) state.lock('idle');
  }, 5_000);
  idle.unref();
  return idle;
}

/** Session grants whose changes the operator sees; an operator's revocation is journaled here (session ends and locks journal their own). */
function announcedGrants(bus: EventBus, journalEvent: JournalEvent): GrantStore {
  return new GrantStore({
    added: (g) => bus.emit({ type: 'grant.added', grant: grantView(g) }),
    revoked: (g, reason) => {
      bus.emit({ type: 'grant.revoked', id: g.approvalId, reason });
      if (reason === OPERATOR_REVOKED) journalEvent(g.sessionId, 'grant_revoked', { tool: g.tool, reason, approval_id: g.approvalId });
    },
  });
}

/** The home's files a running daemon follows: the vault, catalog.yaml (the pending view) and the acceptance record. */
function watchHome(paths: HomePaths, follower: VaultFollower, catalogs: CatalogControl): FSWatcher {
  return watch(paths.home, (_event, file) => {
    if (file === basename(paths.vault)) void follower.refresh();
    else if (file === basename(paths.catalog)) void catalogs.refreshPending();
    else if (file === basename(paths.acceptedRecord)) void catalogs.rejudge();
  });
}

function logJournalStart(anchored: AnchoredJournals, paths: HomePaths, log: (line: string) => void): void {
  const { found, keeper, journals } = anchored;
  if (found.kind === 'new') log(`new journal ${keeper.record.journal_id} anchored in ${paths.anchor}`);
  else if (found.tail.activity + found.tail.sessions > 0) {
    log(`adopted ${found.tail.activity} activity and ${found.tail.sessions} sessions entries past the anchor (written just before the daemon stopped without a final anchor write)`);
  }
  for (const id of journals.recovered) log(`call ${id} was interrupted: recorded as outcome_unknown`);
}

interface BackendWiring {
  readonly svc: Services;
  readonly catalogs: CatalogControl;
  readonly live: ReadonlyMap<string, SessionView>;
  readonly config: DaemonConfig;
  readonly reporter: RunReporter;
  readonly startedAt: string;
  readonly vault: UnlockedVault;
  readonly lockReason: () => string | null;
  /** `postern audit checkpoint`: a signed checkpoint now. */
  readonly checkpointNow: () => { signed: boolean };
  /** Journal shipping's problem line (null: none; undefined: shipping is off). */
  readonly shipProblem: () => string | null | undefined;
}

/** The operator channel's view of this daemon and what it may ask of it. */
function operatorBackend(w: BackendWiring): BackendParts {
  const { svc, catalogs } = w;
  // The cost in the header (public); a passphrase change is made with the daemon stopped or re-read by it.
  const kdf = w.vault.kdf;
  return {
    queue: svc.queue,
    grants: svc.grants,
    journals: svc.journals,
    operatorName: 'operator-cli',
    live: w.live,
    credentialStates: () => svc.tokens.states(),
    callsProfile: () => svc.profile.view(),
    status: () => ({
      pid: process.pid,
      locked: svc.state.locked,
      lock_reason: w.lockReason(),
      started_at: w.startedAt,
      catalog: catalogs.view(),
      catalog_pending: catalogs.pending !== null,
      approval_timeout_seconds: w.config.approval_timeout_seconds,
      vault_kdf: { ...kdf, below_floor: belowProductionFloor(kdf) },
      ...((): { ship_problem?: string | null } => {
        const p = w.shipProblem();
        return p === undefined ? {} : { ship_problem: p };
      })(),
    }),
    catalogPending: () => catalogs.pending,
    acceptCatalog: (digest) => catalogs.accept(digest),
    rejectCatalog: (digest) => catalogs.reject(digest),
    shadowCatalog: (digest) => catalogs.shadow(digest),
    lock: () => svc.state.lock('operator request'),
    checkpointNow: w.checkpointNow,
    runReport: () => w.reporter.report(svc.state.snapshot(), false),
  };
}

interface StartFacts {
  readonly journalEvent: JournalEvent;
  readonly bus: EventBus;
  readonly log: (line: string) => void;
  readonly opts: DaemonOptions;
  readonly vault: UnlockedVault;
  readonly snapshot: ReturnType<DaemonState['snapshot']>;
  readonly recovered: number;
  readonly unattended: RuleBudgets | null;
  readonly agentSocket: string;
}

/** The start in the journal (the vault was unlocked with the passphrase to start this daemon), on the bus and in the log. */
function announceStart(f: StartFacts): void {
  const { log, vault, snapshot } = f;
  f.journalEvent(null, 'daemon_started', { pid: process.pid, catalog: snapshot.digest, recovered: f.recovered });
  // An incident reviewer sees when the vault was open; an operator client (attached now, or later
  // with `since`) sees the counterpart of `daemon.locked`.
  f.journalEvent(null, 'unlock', { reason: 'daemon start', vault_generation: vault.generation });
  f.bus.emit({ type: 'daemon.unlocked' });
  if (f.unattended !== null) log(`unattended: no operator approves; ${snapshot.catalog.preapprovals.size} pre-approval rules decide, anything else needing approval is refused APPROVAL_UNAVAILABLE`);
  if (f.opts.kdf.name === 'test') log(`WARNING: the test key-derivation profile is on (POSTERN_TEST_KDF): vaults as cheap as ${describeKdf(f.opts.kdf.floor)} are opened`);
  const cheap = belowProductionFloor(vault.kdf);
  if (cheap) log(`WARNING: ${belowFloorWarning(vault.kdf)}`);
  if (snapshot.acceptedAt === null) log('no catalog accepted yet: agents see no tools; write catalog.yaml (postern catalog new) and run postern catalog accept');
  log(`daemon ready: ${snapshot.catalog.tools.size} tools, agent socket ${f.agentSocket}${cheap ? `, vault ${describeKdf(vault.kdf)} (TEST PROFILE, below the production floor)` : ''}`);
}
