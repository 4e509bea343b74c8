/**
 * The catalog a running daemon uses, and the operator's hold on it:
 * - at start, the accepted catalog judged against the vault's own mark of the
 *   last acceptance (`loadSnapshot`);
 * - while running, a changed acceptance record is adopted only when it is
 *   authentic, newer than the one in use and chained to it (directly or
 *   through the authenticated history); anything else keeps the catalog in
 *   use and raises an alarm. Adoption marks the cards it makes stale, swaps
 *   the snapshot (calls in flight keep theirs), tells the anchor and every
 *   session (`tools/list_changed`);
 * - what catalog.yaml would change (the pending view, read-only);
 * - the operator's accept, reject and shadow of the pending catalog.
 * Adoptions run one after another (`rejudge` queues one).
 */
import { basename } from 'node:path';
import type { ApprovalQueue } from '../../approvals/queue.js';
import type { Clock } from '../../clock/index.js';
import type { Catalog, CurrentAcceptance } from '../../contracts/index.js';
import { judgeSuccessor, parseCatalog, sha256Hex } from '../../contracts/index.js';
import { acceptCatalog } from '../../home/catalog-accept.js';
import { rejectPendingCatalog } from '../../home/catalog-reject.js';
import { loadAcceptedCatalog, loadCopy, readAcceptance, readCatalogFile, readHistory, signedOnly } from '../../home/catalog-store.js';
import type { HomePaths } from '../../home/paths.js';
import { isPosternError, PosternError } from '../../rules/errors.js';
import type { CatalogInUse, CatalogPendingView, ShadowChange } from '../../protocol/operator/index.js';
import type { UnlockedVault, VaultOptions } from '../../vault/index.js';
import { pendingCatalog } from './catalog-pending.js';
import type { EventBus } from '../services/events.js';
import type { JournalEvent } from '../services/journal-event.js';
import type { ShadowCandidate } from '../pipeline/context.js';
import { snapshotOf, type CatalogSnapshot, type DaemonState } from '../services/state.js';

const EMPTY: Catalog = { fileName: '(no accepted catalog)', targets: new Map(), tools: new Map(), preapprovals: new Map() };

/** The accepted catalog at start, judged against the vault's own mark of the last acceptance. */
export async function loadSnapshot(paths: HomePaths, vault: UnlockedVault): Promise<{ snapshot: CatalogSnapshot; inUse: CurrentAcceptance }> {
  // No credential set: a credential removed from the vault fails its tools (CREDENTIAL_MISSING), not the catalog.
  const accepted = await loadAcceptedCatalog(paths, vault.deriveKey('catalog-mac'), vault.acceptedCatalog);
  if (accepted === undefined) return { snapshot: snapshotOf(EMPTY, sha256Hex(''), null), inUse: { sequence: 0, digest: null } };
  return { snapshot: snapshotOf(accepted.catalog, accepted.digest, accepted.acceptedAt), inUse: { sequence: accepted.sequence, digest: accepted.digest } };
}

type Successor = { kind: 'same' } | { kind: 'refused'; reason: string } | { kind: 'adopt'; snapshot: CatalogSnapshot; inUse: CurrentAcceptance };

async function loadSuccessor(paths: HomePaths, vault: UnlockedVault, inUse: CurrentAcceptance): Promise<Successor> {
  // Read first, then derive and judge with no await between: a lock meanwhile wipes the vault's keys.
  const record = await readAcceptance(paths);
  const history = signedOnly(await readHistory(paths));
  const next = judgeSuccessor(vault.deriveKey('catalog-mac'), inUse, record, history);
  if (next.kind !== 'adopt') return next.kind === 'same' ? next : { kind: 'refused', reason: next.reason };
  const r = next.record;
  const accepted = await loadCopy(paths, r.digest, r.sequence, r.accepted_at, false);
  return { kind: 'adopt', snapshot: snapshotOf(accepted.catalog, accepted.digest, accepted.acceptedAt), inUse: { sequence: r.sequence, digest: r.digest } };
}

interface CatalogControlParts {
  readonly paths: HomePaths;
  readonly clock: Clock;
  readonly vault: VaultOptions;
  readonly state: DaemonState;
  /** Reads the vault file as it is now (vault-follow.ts): an acceptance is judged against the vault's mark. */
  readonly follower: { refresh(): Promise<void> };
  readonly queue: ApprovalQueue;
  readonly bus: EventBus;
  readonly anchor: { noteCatalog(digest: string): void };
  readonly journalEvent: JournalEvent;
  readonly log: (line: string) => void;
  /** Tells every session the tool list changed; returns how many were told. */
  readonly broadcastListChanged: () => Promise<number>;
  /** The acceptance in use at start. */
  readonly inUse: CurrentAcceptance;
}

export class CatalogControl {
  readonly #p: CatalogControlParts;
  #inUse: CurrentAcceptance;
  #pending: CatalogPendingView | null = null;
  /** The pending catalog an operator runs in shadow; never the catalog in use. */
  #shadow: ShadowCandidate | null = null;
  #reloading: Promise<unknown> = Promise.resolve();

  constructor(parts: CatalogControlParts) {
    this.#p = parts;
    this.#inUse = parts.inUse;
  }

  /** The catalog in use, as the operator channel shows it. */
  view(): CatalogInUse {
    const snap = this.#p.state.snapshot();
    return { digest: snap.digest, sequence: this.#inUse.sequence, accepted_at: snap.acceptedAt, tools: snap.catalog.tools.size };
  }

  get pending(): CatalogPendingView | null {
    return this.#pending;
  }

  /** The candidate calls are also planned against (pipeline/stages/planning/shadow.ts), unless it became the catalog in use. */
  shadowCandidate(): ShadowCandidate | null {
    const s = this.#shadow;
    return s !== null && s.digest !== this.#p.state.snapshot().digest ? s : null;
  }

  /** Re-reads the accepted record; true when a new catalog was adopted. */
  async reload(): Promise<boolean> {
    const { state, follower, paths, log, journalEvent, queue, bus } = this.#p;
    if (state.locked) return false;
    // An acceptance is judged against the vault's mark: read the vault as it is now first (the
    // accept saves the vault and the record one after the other; their events race).
    await follower.refresh();
    if (state.locked) return false;
    const judged = await loadSuccessor(paths, state.vault(), this.#inUse);
    // Locked (a stop, idle) while the files were read: the judgement is void, never an alarm.
    if (state.locked || judged.kind === 'same') return false;
    if (judged.kind === 'refused') {
      log(`ALARM: catalog not adopted: ${judged.reason}`);
      journalEvent(null, 'catalog_refused', { reason: judged.reason, in_use: this.#inUse.sequence });
      return false;
    }
    const next = judged.snapshot;
    this.#inUse = judged.inUse;
    // Build the new tool list first, then tell sessions (in-flight calls keep their snapshot).
    // Cards whose call no longer matches the new catalog are marked for the operator first; a call
    // still waiting on its card then withdraws it as the swap reaches it (re-planned: refused or migrated).
    for (const s of queue.staleCards(next.catalog)) bus.emit({ type: 'approval.stale', id: s.id, reason: s.reason });
    state.setSnapshot(next);
    this.#p.anchor.noteCatalog(next.digest);
    journalEvent(null, 'catalog_accepted', { digest: next.digest, sequence: this.#inUse.sequence, accepted_at: next.acceptedAt, tools: next.catalog.tools.size });
    const n = await this.#p.broadcastListChanged();
    journalEvent(null, 'list_changed_sent', { digest: next.digest, sessions: n });
    log(`adopted catalog ${next.digest.slice(0, 16)}…; told ${n} sessions`);
    bus.emit({ type: 'catalog.adopted', catalog: this.view() });
    return true;
  }

  /** Queues a reload and a refresh of the pending view (after any already queued). */
  rejudge(): Promise<unknown> {
    this.#reloading = this.#reloading
      .then(() => this.reload().then(() => this.refreshPending()))
      .catch((e: unknown) => this.#p.log(`catalog not adopted: ${isPosternError(e) ? e.message : 'error'}`));
    return this.#reloading;
  }

  /** What catalog.yaml would change (read-only; recomputed when it or the catalog in use changes). */
  async refreshPending(): Promise<void> {
    const { state, paths, bus } = this.#p;
    if (state.locked) return;
    const snap = state.snapshot();
    const next = await pendingCatalog(paths.catalog, { catalog: snap.catalog, digest: snap.digest, trusted: snap.acceptedAt !== null }, new Set(state.vault().list().map((m) => m.name))).catch(() => this.#pending);
    if (JSON.stringify(next) === JSON.stringify(this.#pending)) return;
    this.#pending = next;
    bus.emit({ type: 'catalog.pending', pending: next });
  }

  /**
   * The operator accepts the exact digest they reviewed. An authenticated
   * operator connection stands for the passphrase (it proved the key derived
   * from it); the daemon's unlocked vault opens the file, as `postern catalog
   * accept --digest` does.
   */
  async accept(digest: string): Promise<CatalogInUse> {
    const { state, paths, clock, follower } = this.#p;
    this.#unlocked();
    let outcome: Awaited<ReturnType<typeof acceptCatalog>>;
    try {
      outcome = await acceptCatalog({ paths, clock, vault: this.#p.vault, out: () => undefined, unlockPassphrase: () => Promise.resolve({ held: state.vault() }) }, { digest, expectDigest: digest });
    } catch (e) {
      if (isPosternError(e, 'RELEASE_GATE_FAILED')) throw new PosternError('RELEASE_GATE_FAILED', `${e.message.replace(/; see the report above$/, '')}: nothing was accepted (the catalog view lists the changes; \`postern catalog accept --force\` overrides)`);
      throw e;
    }
    if (outcome.kind !== 'accepted' && outcome.kind !== 'already') throw new PosternError('CATALOG_PENDING', 'nothing was accepted');
    await follower.refresh();
    await this.rejudge();
    return this.view();
  }

  async reject(digest: string): Promise<void> {
    const { paths, journalEvent, log } = this.#p;
    this.#unlocked();
    await this.refreshPending();
    if (this.#pending === null || this.#pending.digest !== digest) throw new PosternError('CATALOG_PENDING', 'catalog.yaml is not the pending catalog you reviewed; nothing was rejected');
    const aside = await rejectPendingCatalog(paths, digest);
    journalEvent(null, 'catalog_rejected', { digest, set_aside_as: basename(aside), by: 'operator' });
    log(`catalog ${digest.slice(0, 16)}… rejected by the operator; set aside as ${basename(aside)}`);
    await this.refreshPending();
  }

  /** Runs catalog.yaml (the digest named) in shadow, or stops (null); says which shadow that ended, if any. */
  async shadow(digest: string | null): Promise<ShadowChange> {
    const { state, paths, journalEvent, log } = this.#p;
    this.#unlocked();
    if (digest === null) {
      const was = this.#shadow;
      this.#shadow = null;
      if (was !== null) {
        journalEvent(null, 'catalog_shadow', { digest: null, stopped: was.digest, by: 'operator' });
        log(`catalog ${was.digest.slice(0, 16)}… no longer runs in shadow`);
      }
      return { shadow: null, stopped: was?.digest ?? null };
    }
    const file = await readCatalogFile(paths.catalog);
    if (file === undefined || file.digest !== digest) throw new PosternError('CATALOG_PENDING', 'catalog.yaml is not the catalog you named; nothing runs in shadow');
    if (digest === state.snapshot().digest) throw new PosternError('CATALOG_PENDING', 'that catalog is the one in use: there is nothing to shadow');
    const catalog = parseCatalog(file.text, paths.catalog, new Set(state.vault().list().map((m) => m.name)));
    const was = this.#shadow;
    this.#shadow = { digest, catalog };
    journalEvent(null, 'catalog_shadow', { digest, by: 'operator' });
    log(`catalog ${digest.slice(0, 16)}… runs in shadow: every call is also planned against it, with no effect`);
    return { shadow: digest, stopped: was !== null && was.digest !== digest ? was.digest : null };
  }

  #unlocked(): void {
    if (this.#p.state.locked) throw new PosternError('VAULT_LOCKED', 'the daemon is locked');
  }
}
