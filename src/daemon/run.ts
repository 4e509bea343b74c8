/**
 * The daemon's composition root: unlock the vault, load the accepted catalog,
 * open the journals (recovering interrupted calls as outcome_unknown), listen
 * on the agent socket, the operator socket and (when enabled and authorized)
 * the HTTP listener, adopt newly accepted catalogs
 * (then tell sessions `tools/list_changed`), adopt new vault generations
 * written by `postern secret …` (vault-follow.ts), lock on idle, and shut down
 * cleanly. One daemon per home (a lock file in the 0700 run directory).
 */
import { keepRotatedRefreshToken } from './refresh-token-store.js';
import { MintedTokens } from './minted-tokens.js';
import { CallLimits } from './limits.js';
import { CallProfile } from './call-profile.js';
import { watch, type FSWatcher } from 'node:fs';
import type { Clock } from '../clock/index.js';
import { basename } from 'node:path';
import { ApprovalQueue } from '../approvals/queue.js';
import { GrantStore } from '../approvals/grants.js';
import type { Catalog } from '../contracts/index.js';
import { judgeSuccessor, parseCatalog, sha256Hex, type CurrentAcceptance } from '../contracts/index.js';
import type { ShadowCandidate } from './pipeline/shadow.js';
import { loadAcceptedCatalog, loadCopy, readAcceptance, readCatalogFile, readHistory, signedOnly } from '../home/catalog-store.js';
import type { HomePaths } from '../home/paths.js';
import type { Journals } from '../journal/index.js';
import { openAnchoredJournals, type AnchoredJournals } from '../journal/anchor/index.js';
import { isPosternError, PosternError } from '../protocol/errors.js';
import { acceptCatalog as acceptCatalogWith } from '../home/catalog-accept.js';
import { rejectPendingCatalog } from '../home/catalog-reject.js';
import { SshPool } from '../executors/ssh/index.js';
import { GroupCommit } from './pipeline/group-commit.js';
import { HttpPool } from '../executors/http/index.js';
import { belowFloorWarning, belowProductionFloor, describeKdf, openVault, vaultOptionsFor, type Credential, type KdfProfile, type UnlockedVault } from '../vault/index.js';
import { startAgentSocket, type AgentEndpoint } from './agent-socket.js';
import { loadConfig } from './config.js';
import { KeyReservations } from './pipeline/idempotency.js';
import { PendingOutcomes } from './pipeline/pending-outcomes.js';
import type { Services, SessionInfo } from './pipeline/context.js';
import { startHttpIfAuthorized } from './http/start.js';
import { takeDaemonLock } from './socket-file.js';
import { IdleTracker } from './idle.js';
import { DaemonState, snapshotOf, type CatalogSnapshot } from './state.js';
import type { MessagePort } from 'node:worker_threads';
import { startOperatorServer, type OperatorServer } from './operator/index.js';
import { createBackend, grantView, OPERATOR_REVOKED } from './operator/backend.js';
import { EventBus } from './events.js';
import { pendingCatalog } from './catalog-pending.js';
import type { CatalogPendingView } from '../protocol/operator/index.js';
import type { SessionView } from '../protocol/operator/index.js';
import { VaultFollower } from './vault-follow.js';
import { RuleBudgets } from '../approvals/unattended.js';
import { RunReporter } from './run-report.js';

export interface DaemonHandle {
  readonly services: Services;
  readonly agent: AgentEndpoint;
  /** Every change an operator sees, numbered (src/daemon/events.ts). */
  readonly events: EventBus;
  /** The operator channel: `attachPort` serves a private in-process port (postern up). */
  readonly operator: OperatorServer;
  /** Re-reads the accepted catalog; returns true when a new one was adopted. */
  reloadCatalog(): Promise<boolean>;
  lock(reason: string): void;
  close(reason: string): Promise<void>;
}

const SHUTDOWN_GRACE_MS = 10_000;

const EMPTY: Catalog = { fileName: '(no accepted catalog)', targets: new Map(), tools: new Map(), preapprovals: new Map() };

/** The accepted catalog at start, judged against the vault's own mark of the last acceptance. */
async function loadSnapshot(paths: HomePaths, vault: UnlockedVault): Promise<{ snapshot: CatalogSnapshot; inUse: CurrentAcceptance }> {
  // No credential set: a credential removed from the vault fails its tools (CREDENTIAL_MISSING), not the catalog.
  const accepted = await loadAcceptedCatalog(paths, vault.deriveKey('catalog-mac'), vault.acceptedCatalog);
  if (accepted === undefined) return { snapshot: snapshotOf(EMPTY, sha256Hex(''), null), inUse: { sequence: 0, digest: null } };
  return { snapshot: snapshotOf(accepted.catalog, accepted.digest, accepted.acceptedAt), inUse: { sequence: accepted.sequence, digest: accepted.digest } };
}

/**
 * A changed record while running: adopted only when it is authentic, newer
 * than the acceptance in use and chained to it (directly or through the
 * authenticated history); anything else keeps the catalog in use.
 */
async function loadSuccessor(paths: HomePaths, vault: UnlockedVault, inUse: CurrentAcceptance): Promise<{ kind: 'same' } | { kind: 'refused'; reason: string } | { kind: 'adopt'; snapshot: CatalogSnapshot; inUse: CurrentAcceptance }> {
  const key = vault.deriveKey('catalog-mac');
  const next = judgeSuccessor(key, inUse, await readAcceptance(paths), signedOnly(await readHistory(paths)));
  if (next.kind !== 'adopt') return next.kind === 'same' ? next : { kind: 'refused', reason: next.reason };
  const r = next.record;
  const accepted = await loadCopy(paths, r.digest, r.sequence, r.accepted_at, false);
  return { kind: 'adopt', snapshot: snapshotOf(accepted.catalog, accepted.digest, accepted.acceptedAt), inUse: { sequence: r.sequence, digest: r.digest } };
}


export interface DaemonOptions {
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

export async function startDaemon(paths: HomePaths, passphrase: Uint8Array, opts: DaemonOptions): Promise<DaemonHandle> {
  const { clock, log } = opts;
  const vaultOpts = vaultOptionsFor(opts.kdf, clock);
  const lockFile = await takeDaemonLock(paths);
  let anchored: AnchoredJournals | undefined;
  let vault: UnlockedVault | undefined;
  // Start-up is all or nothing: whatever started before a failure is stopped again.
  const started: (() => Promise<void> | void)[] = [];
  try {
    const config = await loadConfig(paths.config);
    vault = await openVault(paths.vault, passphrase, vaultOpts);
    const { snapshot, inUse: atStart } = await loadSnapshot(paths, vault);
    let inUse = atStart;
    // Refuses a journal that is missing, emptied, replaced, rolled back or rewritten, and an older vault.
    anchored = openAnchoredJournals({ journalDir: paths.journalDir, anchorPath: paths.anchor, key: vault.deriveKey('journal-anchor'), vaultGeneration: vault.generation, catalogDigest: snapshot.digest, clock, log, checkpoints: { path: paths.checkpoints, seed: vault.deriveKey('journal-checkpoint') } });
    const journals = anchored.journals;
    const keeper = anchored.keeper;
    if (anchored.found.kind === 'new') log(`new journal ${keeper.record.journal_id} anchored in ${paths.anchor}`);
    else if (anchored.found.tail.activity + anchored.found.tail.sessions > 0) {
      log(`adopted ${anchored.found.tail.activity} activity and ${anchored.found.tail.sessions} sessions entries past the anchor (written just before the daemon stopped without a final anchor write)`);
    }
    for (const id of journals.recovered) log(`call ${id} was interrupted: recorded as outcome_unknown`);
    const operatorKey = Uint8Array.from(vault.deriveKey('operator-auth'));
    // The cost in the header (public); a passphrase change is made with the daemon stopped or re-read by it.
    const startKdf = vault.kdf;
    started.push(() => void operatorKey.fill(0));
    const state = new DaemonState(vault, snapshot);
    const ssh = new SshPool({ idleMs: config.ssh.idle_close_seconds * 1000, maxChannelsPerConnection: config.ssh.max_channels_per_connection });
    const http = config.http.keep_alive_seconds > 0 ? new HttpPool({ keepAliveMs: config.http.keep_alive_seconds * 1000 }) : undefined;
    // Minted tokens are secrets: the redactor learns each one before it is used.
    const tokens = new MintedTokens({ clock, learn: (name, token) => state.learnMinted(name, token) });
    // A rotated refresh token: learnt by the redactor, then saved atomically with the held vault key.
    const keepRefreshToken = async (cred: Credential, next: Uint8Array): Promise<void> => {
      const name = cred.meta.name;
      state.learnMinted(name, next);
      const sent = cred.secret['refresh_token'];
      if (sent === undefined) return;
      tokens.expectOwnChange(name);
      try {
        const r = await keepRotatedRefreshToken(paths.vault, state.vault(), name, sent, next, vaultOpts);
        log(r === 'saved' ? `credential ${name}: the rotated refresh token was saved to the vault` : `credential ${name}: changed in the vault meanwhile; the rotated refresh token was not saved`);
        await follower.refresh();
      } catch (e) {
        log(`credential ${name}: the rotated refresh token could not be saved (${isPosternError(e) ? e.code : 'error'})`);
      }
    };
    const idleness = new IdleTracker(clock, config.idle_lock_minutes * 60_000);
    const pendingOutcomes = new PendingOutcomes((id, o, busyTimeoutMs) => journals.activity.recordOutcome(id, o, busyTimeoutMs === undefined ? {} : { busyTimeoutMs }), log);
    // Set once the catalog reload exists (below); a vault adopted before that has nothing to re-judge.
    let rejudge = (): void => undefined;
    const rejudgeCatalog = (): void => rejudge();
    const follower = new VaultFollower({
      path: paths.vault,
      state,
      vault: vaultOpts,
      onChange: (change) => {
        // Connections authenticated with a value that changed end once their running commands finish.
        let closed = 0;
        for (const name of [...change.rotated, ...change.removed]) {
          closed += ssh.retire(name);
          http?.retire(name);
          tokens.drop(name);
        }
        journalEvent(null, 'vault_changed', { ...change, ssh_connections_retired: closed });
        // A restored copy older than this generation must be refused at the next start too.
        keeper.noteVaultGeneration(change.to);
        // A new vault may carry the mark of an accepted record that arrived first.
        rejudgeCatalog();
        const list = (names: readonly string[]): string => (names.length === 0 ? '-' : names.join(','));
        log(`vault generation ${change.to} adopted (was ${change.from}): added ${list(change.added)}; rotated ${list(change.rotated)}; removed ${list(change.removed)}; ${closed} SSH connections retired`);
      },
    });
    const bus = new EventBus(clock);
    const grants = new GrantStore({
      added: (g) => bus.emit({ type: 'grant.added', grant: grantView(g) }),
      revoked: (g, reason) => {
        bus.emit({ type: 'grant.revoked', id: g.approvalId, reason });
        // Session ends and locks journal their own revocations; an operator's is journaled here.
        if (reason === OPERATOR_REVOKED) journalEvent(g.sessionId, 'grant_revoked', { tool: g.tool, reason, approval_id: g.approvalId });
      },
    });
    const live = new Map<string, SessionView>();
    const startedAt = clock.now().toISOString();
    const inflightCalls = new Set<Promise<unknown>>();
    // The journal's executed calls are the one truth for the limits: counted again at every start.
    const limits = CallLimits.fromActivity(clock, journals.activity);
    /** The pending catalog an operator runs in shadow; never the catalog in use. */
    let shadow: ShadowCandidate | null = null;
    const unattended = opts.unattended === true || config.unattended ? new RuleBudgets() : undefined;
    const reporter = new RunReporter(clock, unattended);
    const onActivity = (record: Parameters<RunReporter['observe']>[0]): void => {
      reporter.observe(record);
      bus.emit({ type: 'activity', record });
    };
    const profile = new CallProfile();
    const svc: Services = { ...(unattended === undefined ? {} : { unattended }), profile, shadow: () => (shadow !== null && shadow.digest !== state.snapshot().digest ? shadow : null), onActivity, state, journals, queue: new ApprovalQueue(clock), grants, reservations: new KeyReservations(), commits: new GroupCommit(journals.activity, { busy: () => inflightCalls.size > 1 }), config, ssh, ...(http === undefined ? {} : { http }), tokens, keepRefreshToken, clock, idleness, inflight: inflightCalls, vaultFile: follower, pendingOutcomes, limits };
    const a = anchored;
    const closeJournals = (): void => a.close();
    const j = journals;
    const journalEvent = (session: string | null, type: Parameters<Journals['sessions']['event']>[1], data: Record<string, unknown>): void => {
      try {
        j.sessions.event(session, type, data);
      } catch (e) {
        log(`journal: ${isPosternError(e) ? e.message : 'write failed'}`);
      }
    };
    let stopping = false;
    svc.queue.subscribe((e) => {
      if (e.type === 'added') bus.emit({ type: 'approval.added', card: e.card });
      else bus.emit({ type: 'approval.resolved', id: e.id, decision: e.decision });
    });
    state.onLock((reason) => {
      bus.emit({ type: 'daemon.locked', reason });
      const voided = svc.queue.voidAll(`vault locked: ${reason}`);
      const revoked = svc.grants.revokeAll();
      // Authenticated SSH connections are closed with the keys that opened them; kept-alive HTTP ones too.
      void ssh.close();
      void http?.close();
      tokens.clear();
      journalEvent(null, 'lock', { reason, voided_approvals: voided, revoked_grants: revoked.length });
      // The anchor key goes with the vault: a last anchor write (the lock included), then none. Entries
      // journaled while locked are an unanchored tail, adopted at the next start; and a passphrase change
      // (which locks this daemon first) can re-key the anchor without this daemon writing over it.
      // (A clean stop writes the final anchor itself, after its last events.)
      if (!stopping) {
        try {
          keeper.close();
        } catch (e) {
          log(`journal anchor: ${isPosternError(e) ? e.message : 'final write failed'}`);
        }
      }
      log(`vault locked (${reason}); ${voided} pending approvals voided, ${revoked.length} grants revoked; restart the daemon to unlock`);
    });

    const sessionHooks = (transport: 'stdio-socket' | 'http'): { sessionStarted(s: SessionInfo): void; sessionEnded(s: SessionInfo): void } => ({
      sessionStarted: (s) => {
        idleness.touch();
        const view: SessionView = { id: s.id, client_name: s.clientName, client_version: s.clientVersion, pid: s.pid, protocol_version: s.protocolVersion, started_at: clock.now().toISOString(), ended_at: null, end_reason: null };
        live.set(s.id, view);
        bus.emit({ type: 'session.opened', session: view });
        try {
          j.sessions.startSession({ session_id: s.id, transport, client_name: s.clientName, client_version: s.clientVersion, protocol_version: s.protocolVersion, peer_pid: s.pid, peer_uid: null, run_id: s.runId, agent_release: s.agentRelease });
        } catch (e) {
          log(`journal: ${isPosternError(e) ? e.message : 'write failed'}`);
        }
      },
      sessionEnded: (s) => {
        if (live.delete(s.id)) bus.emit({ type: 'session.closed', id: s.id, ended_at: clock.now().toISOString() });
        // Cards left open for this session's calls (APPROVAL_PENDING) leave the queue with it.
        svc.queue.parked.dropSession(s.id);
        const revoked = svc.grants.revokeSession(s.id);
        for (const g of revoked) journalEvent(s.id, 'grant_revoked', { tool: g.tool, reason: 'session ended' });
        try {
          j.sessions.endSession(s.id, 'disconnected');
        } catch {
          // already logged by the journal's own failure path
        }
      },
    });
    const agent = await startAgentSocket(paths.agentSocket, svc, sessionHooks('stdio-socket'));
    started.push(() => agent.close());
    // The optional HTTP listener: only when config.yaml enables it AND the operator authorized it.
    const httpEndpoint = await startHttpIfAuthorized({ paths, svc, config, key: vault.deriveKey('catalog-mac'), hooks: sessionHooks('http'), log, journalEvent });
    if (httpEndpoint !== null) started.push(() => httpEndpoint.close());
    // What catalog.yaml would change (read-only; recomputed when it or the catalog in use changes).
    let pending: CatalogPendingView | null = null;
    const refreshPending = async (): Promise<void> => {
      if (state.locked) return;
      const snap = state.snapshot();
      const next = await pendingCatalog(paths.catalog, { catalog: snap.catalog, digest: snap.digest, trusted: snap.acceptedAt !== null }, new Set(state.vault().list().map((m) => m.name))).catch(() => pending);
      if (JSON.stringify(next) === JSON.stringify(pending)) return;
      pending = next;
      bus.emit({ type: 'catalog.pending', pending });
    };
    let lockReason: string | null = null;
    state.onLock((reason) => void (lockReason = reason));
    const backend = createBackend({
      queue: svc.queue,
      grants,
      journals,
      operatorName: 'operator-cli',
      live,
      credentialStates: () => tokens.states(),
      callsProfile: () => profile.view(),
      status: () => {
        const snap = state.snapshot();
        return {
          pid: process.pid,
          locked: state.locked,
          lock_reason: lockReason,
          started_at: startedAt,
          catalog: { digest: snap.digest, sequence: inUse.sequence, accepted_at: snap.acceptedAt, tools: snap.catalog.tools.size },
          catalog_pending: pending !== null,
          approval_timeout_seconds: config.approval_timeout_seconds,
          vault_kdf: { ...startKdf, below_floor: belowProductionFloor(startKdf) },
        };
      },
      catalogPending: () => pending,
      acceptCatalog: async (digest) => {
        // An authenticated operator connection stands for the passphrase (it proved the key derived
        // from it); the daemon's unlocked vault opens the file, and the operator names the exact
        // digest they reviewed, as `postern catalog accept --digest` does.
        if (state.locked) throw new PosternError('VAULT_LOCKED', 'the daemon is locked');
        const report: string[] = [];
        let outcome: Awaited<ReturnType<typeof acceptCatalogWith>>;
        try {
          outcome = await acceptCatalogWith({ paths, clock, vault: vaultOpts, out: (l) => report.push(l), unlockPassphrase: () => Promise.resolve({ held: state.vault() }) }, { digest, expectDigest: digest });
        } catch (e) {
          if (isPosternError(e, 'RELEASE_GATE_FAILED')) throw new PosternError('RELEASE_GATE_FAILED', `${e.message.replace(/; see the report above$/, '')}: nothing was accepted (the catalog view lists the changes; \`postern catalog accept --force\` overrides)`);
          throw e;
        }
        if (outcome.kind !== 'accepted' && outcome.kind !== 'already') throw new PosternError('CATALOG_PENDING', 'nothing was accepted');
        await follower.refresh();
        reloading = reloading.then(() => reloadCatalog().then(() => refreshPending()));
        await reloading;
        const snap = state.snapshot();
        return { digest: snap.digest, sequence: inUse.sequence, accepted_at: snap.acceptedAt, tools: snap.catalog.tools.size };
      },
      rejectCatalog: async (digest) => {
        if (state.locked) throw new PosternError('VAULT_LOCKED', 'the daemon is locked');
        await refreshPending();
        if (pending === null || pending.digest !== digest) throw new PosternError('CATALOG_PENDING', 'catalog.yaml is not the pending catalog you reviewed; nothing was rejected');
        const aside = await rejectPendingCatalog(paths, digest);
        journalEvent(null, 'catalog_rejected', { digest, set_aside_as: basename(aside), by: 'operator' });
        log(`catalog ${digest.slice(0, 16)}… rejected by the operator; set aside as ${basename(aside)}`);
        await refreshPending();
      },
      shadowCatalog: async (digest) => {
        if (state.locked) throw new PosternError('VAULT_LOCKED', 'the daemon is locked');
        if (digest === null) {
          const was = shadow;
          shadow = null;
          if (was !== null) {
            journalEvent(null, 'catalog_shadow', { digest: null, stopped: was.digest, by: 'operator' });
            log(`catalog ${was.digest.slice(0, 16)}… no longer runs in shadow`);
          }
          return null;
        }
        const file = await readCatalogFile(paths.catalog);
        if (file === undefined || file.digest !== digest) throw new PosternError('CATALOG_PENDING', 'catalog.yaml is not the catalog you named; nothing runs in shadow');
        if (digest === state.snapshot().digest) throw new PosternError('CATALOG_PENDING', 'that catalog is the one in use: there is nothing to shadow');
        const catalog = parseCatalog(file.text, paths.catalog, new Set(state.vault().list().map((m) => m.name)));
        shadow = { digest, catalog };
        journalEvent(null, 'catalog_shadow', { digest, by: 'operator' });
        log(`catalog ${digest.slice(0, 16)}… runs in shadow: every call is also planned against it, with no effect`);
        return digest;
      },
      lock: () => state.lock('operator request'),
      runReport: () => reporter.report(state.snapshot(), false),
    });
    const operator = await startOperatorServer({
      socketPath: paths.operatorSocket,
      key: () => (state.locked ? null : operatorKey),
      backend,
      bus,
    });
    if (opts.operatorPort !== undefined) void operator.attachPort(opts.operatorPort).catch((e: unknown) => log(`operator port: ${isPosternError(e) ? e.message : 'attach failed'}`));

    started.push(() => operator.close());

    const reloadCatalog = async (): Promise<boolean> => {
      if (state.locked) return false;
      // An acceptance is judged against the vault's mark: read the vault as it is now first (the
      // accept saves the vault and the record one after the other; their events race).
      await follower.refresh();
      if (state.locked) return false;
      const judged = await loadSuccessor(paths, state.vault(), inUse);
      if (judged.kind === 'same') return false;
      if (judged.kind === 'refused') {
        log(`ALARM: catalog not adopted: ${judged.reason}`);
        journalEvent(null, 'catalog_refused', { reason: judged.reason, in_use: inUse.sequence });
        return false;
      }
      const next = judged.snapshot;
      inUse = judged.inUse;
      // Build the new tool list first, then tell sessions (in-flight calls keep their snapshot).
      // Cards whose call no longer matches the new catalog are marked for the operator first; a call
      // still waiting on its card then withdraws it as the swap reaches it (re-planned: refused or migrated).
      const stale = svc.queue.staleCards(next.catalog);
      for (const s of stale) bus.emit({ type: 'approval.stale', id: s.id, reason: s.reason });
      state.setSnapshot(next);
      keeper.noteCatalog(next.digest);
      journalEvent(null, 'catalog_accepted', { digest: next.digest, sequence: inUse.sequence, accepted_at: next.acceptedAt, tools: next.catalog.tools.size });
      const n = (await agent.broadcastListChanged()) + (httpEndpoint === null ? 0 : await httpEndpoint.broadcastListChanged());
      journalEvent(null, 'list_changed_sent', { digest: next.digest, sessions: n });
      log(`adopted catalog ${next.digest.slice(0, 16)}…; told ${n} sessions`);
      bus.emit({ type: 'catalog.adopted', catalog: { digest: next.digest, sequence: inUse.sequence, accepted_at: next.acceptedAt, tools: next.catalog.tools.size } });
      return true;
    };
    let reloading = Promise.resolve();
    rejudge = (): void => {
      reloading = reloading.then(() => reloadCatalog().then(() => refreshPending())).catch((e: unknown) => log(`catalog not adopted: ${isPosternError(e) ? e.message : 'error'}`));
    };
    const watcher: FSWatcher = watch(paths.home, (_event, file) => {
      if (file === basename(paths.vault)) {
        void follower.refresh();
        return;
      }
      if (file === basename(paths.catalog)) {
        void refreshPending();
        return;
      }
      if (file !== basename(paths.acceptedRecord)) return;
      rejudge();
    });
    const idle = config.idle_lock_minutes > 0
      ? setInterval(() => {
          if (!state.locked && svc.queue.list().length === 0 && idleness.expired()) state.lock('idle');
        }, 5_000)
      : undefined;
    idle?.unref();
    svc.queue.subscribe(() => idleness.touch());

    // Learn the file's identity now (and adopt a save that landed while we started).
    await follower.refresh();
    await refreshPending();
    journalEvent(null, 'daemon_started', { pid: process.pid, catalog: snapshot.digest, recovered: journals.recovered.length });
    // The vault was unlocked with the passphrase to start this daemon: an incident reviewer sees when it was open,
    // and an operator client (attached now, or later with `since`) sees the counterpart of `daemon.locked`.
    journalEvent(null, 'unlock', { reason: 'daemon start', vault_generation: vault.generation });
    bus.emit({ type: 'daemon.unlocked' });
    if (unattended !== undefined) log(`unattended: no operator approves; ${snapshot.catalog.preapprovals.size} pre-approval rules decide, anything else needing approval is refused APPROVAL_UNAVAILABLE`);
    if (opts.kdf.name === 'test') log(`WARNING: the test key-derivation profile is on (POSTERN_TEST_KDF): vaults as cheap as ${describeKdf(opts.kdf.floor)} are opened`);
    const cheap = belowProductionFloor(vault.kdf);
    if (cheap) log(`WARNING: ${belowFloorWarning(vault.kdf)}`);
    log(`daemon ready: ${snapshot.catalog.tools.size} tools, agent socket ${paths.agentSocket}${cheap ? `, vault ${describeKdf(vault.kdf)} (TEST PROFILE, below the production floor)` : ''}`);

    let closing: Promise<void> | undefined;
    return {
      services: svc,
      agent,
      events: bus,
      operator,
      reloadCatalog,
      lock: (reason) => state.lock(reason),
      close(reason: string) {
        closing ??= (async () => {
          watcher.close();
          if (idle !== undefined) clearInterval(idle);
          // Stop admitting, end waiting approvals, let running actions finish (bounded), then close.
          agent.stopAccepting();
          httpEndpoint?.stopAccepting();
          svc.queue.voidAll(`daemon stopping: ${reason}`);
          const drained = Promise.allSettled([...svc.inflight]);
          const grace = new Promise<void>((resolve) => setTimeout(resolve, SHUTDOWN_GRACE_MS).unref());
          await Promise.race([drained, grace]);
          if (svc.inflight.size > 0) log(`${svc.inflight.size} calls still running at shutdown: they will show as outcome_unknown`);
          await agent.close();
          await httpEndpoint?.close();
          await operator.close();
          await ssh.close();
          // Past the grace period: a request still running is cut (its call shows as outcome_unknown).
          await http?.destroy();
          const unwritten = pendingOutcomes.flushNow();
          if (unwritten > 0) log(`${unwritten} outcomes could not be journaled: they will show as outcome_unknown`);
          // The unattended run's report, once every call has ended (or been cut): the file, then the log line.
          if (unattended !== undefined) {
            try {
              log(`run report written to ${await reporter.write(paths.home, reporter.report(state.snapshot(), true))}`);
            } catch (e) {
              log(`run report: ${isPosternError(e) ? e.message : 'could not be written'}`);
            }
          }
          // Lock (journaled, like every lock) before the journals close, so the last events are kept.
          stopping = true;
          state.lock(reason);
          journalEvent(null, 'daemon_stopped', { reason });
          try {
            closeJournals();
          } catch (e) {
            log(`journal anchor: ${isPosternError(e) ? e.message : 'final write failed'}`);
          }
          operatorKey.fill(0);
          await lockFile.release();
        })();
        return closing;
      },
    };
  } catch (e) {
    for (const stop of started.reverse()) await Promise.resolve(stop()).catch(() => undefined);
    try {
      anchored?.close();
    } catch {
      // the start failed already; that error is the one to report
    }
    vault?.lock();
    await lockFile.release();
    throw e;
  }
}
