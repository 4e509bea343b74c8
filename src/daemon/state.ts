/**
 * The daemon's shared, swappable state: the unlocked vault (or none), the
 * redactor built from its secrets, and the accepted catalog snapshot.
 *
 * Invariants: a call reads `snapshot()` once and keeps that object to the end
 * (catalog swaps never mix revisions within a call); locking zeroes the vault,
 * drops the redactor and voids approvals and grants (done by the caller via
 * `onLock`); the redactor always covers every secret of the vault in use.
 */
import type { Catalog } from '../contracts/index.js';
import { injectedForms, createRedactor, type Redactor, type SecretInput } from '../redaction/index.js';
import type { UnlockedVault } from '../vault/index.js';
import { PosternError } from '../protocol/errors.js';
import { VERSION } from '../version.js';

export interface CatalogSnapshot {
  readonly catalog: Catalog;
  /** SHA-256 of the accepted catalog file. */
  readonly digest: string;
  /** Build version + catalog digest: what the journal records as the handler revision. */
  readonly handlerRevision: string;
  /** A short toolset version for tool `_meta`. */
  readonly toolset: string;
  readonly acceptedAt: string | null;
}

export function snapshotOf(catalog: Catalog, digest: string, acceptedAt: string | null): CatalogSnapshot {
  return Object.freeze({ catalog, digest, handlerRevision: `postern/${VERSION}+catalog.${digest.slice(0, 16)}`, toolset: digest.slice(0, 12), acceptedAt });
}

export class DaemonState {
  #vault: UnlockedVault | null;
  #redactor: Redactor | null = null;
  #snapshot: CatalogSnapshot;
  readonly #onLock: ((reason: string) => void)[] = [];

  constructor(vault: UnlockedVault, snapshot: CatalogSnapshot) {
    this.#vault = vault;
    this.#snapshot = snapshot;
    this.#rebuildRedactor();
  }

  get locked(): boolean {
    return this.#vault === null;
  }

  /** The vault, or VAULT_LOCKED with what the human must do. */
  vault(): UnlockedVault {
    if (this.#vault === null || this.#vault.locked) {
      throw new PosternError('VAULT_LOCKED', 'the vault is locked: restart the daemon (`postern daemon`) to unlock it');
    }
    return this.#vault;
  }

  redactor(): Redactor {
    if (this.#redactor === null) this.vault();
    return this.#redactor as Redactor;
  }

  snapshot(): CatalogSnapshot {
    return this.#snapshot;
  }

  setSnapshot(s: CatalogSnapshot): void {
    this.#snapshot = s;
  }

  onLock(listener: (reason: string) => void): void {
    this.#onLock.push(listener);
  }

  lock(reason: string): void {
    if (this.#vault === null) return;
    this.#vault.lock();
    this.#vault = null;
    this.#redactor = null;
    for (const l of this.#onLock) l(reason);
  }

  #rebuildRedactor(): void {
    const v = this.vault();
    const inputs: SecretInput[] = [];
    for (const meta of v.list()) {
      const cred = v.get(meta.name);
      if (cred !== undefined) inputs.push(...injectedForms(cred));
    }
    this.#redactor = createRedactor(inputs);
  }
}
