/**
 * The daemon's shared, swappable state: the unlocked vault (or none), the
 * redactor built from its secrets, and the accepted catalog snapshot.
 *
 * Invariants: a call reads `snapshot()` once and keeps that object to the end
 * (catalog swaps never mix revisions within a call); locking zeroes the vault,
 * the redactor's copies and the retired values, and voids approvals and grants
 * (done by the caller via `onLock`); the redactor always covers every secret
 * of the vault in use, every value the vault remembers (retired by a rotate
 * or rm, or minted, for as long as it matters: it survives a restart there)
 * and every value a rotate or rm retired since the unlock (a target may have
 * cached the old one and still echo it); adopting a newer
 * vault generation (`adoptVault`) never disturbs a call in flight: calls hold
 * their own copy of the credential (`takeCredential`) and earlier redactors
 * keep their own copies. A token minted from a vault credential
 * (`learnMinted`) is a secret too: the redactor covers it, in every form it is
 * sent in, from before it is used until the vault locks.
 */
import type { Catalog } from '../../contracts/index.js';
import { injectedForms, createRedactor, valueFingerprint, type NamedSecret, type Redactor } from '../../redaction/index.js';
import type { Credential, UnlockedVault } from '../../vault/index.js';
import type { RememberedValue } from '../../vault/types.js';
import { PosternError } from '../../rules/errors.js';
import { VERSION } from '../../version.js';

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

/** What adopting a vault generation changed, by credential name (never values). */
export interface VaultChange {
  readonly from: number;
  readonly to: number;
  readonly added: readonly string[];
  readonly rotated: readonly string[];
  readonly removed: readonly string[];
}

function sameSecret(a: Credential, b: Credential): boolean {
  if (a.meta.kind !== b.meta.kind) return false;
  const pa = Object.keys(a.secret).sort();
  const pb = Object.keys(b.secret).sort();
  if (pa.join('\0') !== pb.join('\0')) return false;
  return pa.every((p) => Buffer.from(a.secret[p] as Uint8Array).equals(Buffer.from(b.secret[p] as Uint8Array)))
    && JSON.stringify(a.meta.fields) === JSON.stringify(b.meta.fields);
}

/** Copies of a credential's redaction forms: they outlive the vault arrays they came from. */
/** Each form carries the keyed fingerprint of the value it came from, reported with every redaction of it. */
function formsOf(cred: Credential | RememberedValue, vault: UnlockedVault): NamedSecret[] {
  const fingerprint = valueFingerprint(vault.deriveKey('secret-exposure'), cred);
  return injectedForms(cred).map((f) => ({ name: f.name, bytes: Uint8Array.from(f.bytes), fingerprint }));
}

export class DaemonState {
  #vault: UnlockedVault | null;
  #lockReason: string | null = null;
  #redactor: Redactor | null = null;
  /** Forms of values retired by rotate or rm since the unlock. */
  #retired: NamedSecret[] = [];
  /** Forms of tokens minted since the unlock (minted-tokens.ts). */
  #minted: NamedSecret[] = [];
  /** takeCredential's sources, by name, for the vault in use (which never changes a value in place: a change is a new generation, adoptVault). */
  #sources = new Map<string, object>();
  /** Every copy of a form this state made, for any redactor since the unlock (zeroed at lock). */
  #owned: NamedSecret[] = [];
  /** The forms of the credentials of the vault in use, made once for it (its values never change in place). */
  #credentialForms: { readonly vault: UnlockedVault; readonly forms: readonly NamedSecret[] } | null = null;
  #snapshot: CatalogSnapshot;
  readonly #onLock: ((reason: string) => void)[] = [];
  readonly #onSnapshot = new Set<() => void>();

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
      const why = this.#lockReason === null ? '' : ` (${this.#lockReason})`;
      throw new PosternError('VAULT_LOCKED', `the vault is locked${why}: restart the daemon (\`postern daemon\`) to unlock it`);
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
    for (const l of [...this.#onSnapshot]) {
      try {
        l();
      } catch {
        // a waiting call's re-check must not stop the swap
      }
    }
  }

  /** Calls `listener` after every catalog swap (calls waiting for approval re-check their plan); returns the unsubscribe. */
  onSnapshot(listener: () => void): () => void {
    this.#onSnapshot.add(listener);
    return () => this.#onSnapshot.delete(listener);
  }

  /**
   * A copy of the credential for one call: the call keeps using it to the end
   * even if the vault generation changes meanwhile. The caller zeroes it.
   * Its `source` is the same object for every copy of this generation's value
   * (the executors' pools digest a value once by it, credential-digest.ts).
   */
  takeCredential(name: string): (Credential & { readonly source: object }) | undefined {
    const c = this.vault().get(name);
    if (c === undefined) return undefined;
    const secret: Record<string, Uint8Array> = {};
    for (const [part, bytes] of Object.entries(c.secret)) secret[part] = Uint8Array.from(bytes);
    let source = this.#sources.get(name);
    if (source === undefined) this.#sources.set(name, (source = {}));
    return Object.freeze({ meta: c.meta, secret: Object.freeze(secret), source });
  }

  /**
   * Swap in a newer generation of the vault (same data key). The old vault is
   * zeroed; the values it held that the new one no longer has stay redacted.
   */
  adoptVault(next: UnlockedVault): VaultChange {
    const old = this.vault();
    const added: string[] = [];
    const rotated: string[] = [];
    const removed: string[] = [];
    for (const meta of old.list()) {
      const before = old.get(meta.name) as Credential;
      const after = next.get(meta.name);
      if (after === undefined) removed.push(meta.name);
      else if (!sameSecret(before, after)) rotated.push(meta.name);
      else continue;
      const forms = formsOf(before, old);
      this.#retired.push(...forms);
      this.#owned.push(...forms);
    }
    for (const meta of next.list()) if (old.get(meta.name) === undefined) added.push(meta.name);
    const change: VaultChange = { from: old.generation, to: next.generation, added, rotated, removed };
    this.#vault = next;
    this.#sources = new Map();
    old.lock();
    // The previous redactor's copies are not zeroed here: calls in flight may still hold it.
    this.#rebuildRedactor();
    return change;
  }

  /** A token minted from credential `name`: every later redactor covers it (until the lock). */
  learnMinted(name: string, token: Uint8Array): void {
    const v = this.vault();
    const meta = v.get(name)?.meta;
    const minted = { meta: { name, kind: meta?.kind ?? 'oauth_client_credentials', fields: meta?.fields ?? {} }, secret: { access_token: Uint8Array.from(token) } };
    const fingerprint = valueFingerprint(v.deriveKey('secret-exposure'), minted);
    const forms = injectedForms(minted).map((f) => ({ name: f.name, bytes: Uint8Array.from(f.bytes), fingerprint }));
    minted.secret.access_token.fill(0);
    this.#minted.push(...forms);
    this.#owned.push(...forms);
    this.#rebuildRedactor();
  }

  onLock(listener: (reason: string) => void): void {
    this.#onLock.push(listener);
  }

  lock(reason: string): void {
    if (this.#vault === null) return;
    this.#vault.lock();
    this.#vault = null;
    this.#sources = new Map();
    this.#lockReason = reason;
    this.#redactor = null;
    for (const f of this.#owned) f.bytes.fill(0);
    this.#owned = [];
    this.#credentialForms = null;
    this.#retired = [];
    this.#minted = [];
    for (const l of this.#onLock) l(reason);
  }

  /**
   * A redactor over every value that still matters: the vault's credentials (their forms made once
   * per vault, so a daemon that mints tokens all day keeps one copy of them, not one per token), its
   * remembered values (made each time: remembered() leaves out those whose time is over), and the
   * values retired and the tokens minted since the unlock.
   */
  #rebuildRedactor(): void {
    const v = this.vault();
    if (this.#credentialForms?.vault !== v) {
      const forms: NamedSecret[] = [];
      for (const meta of v.list()) {
        const cred = v.get(meta.name);
        if (cred !== undefined) forms.push(...formsOf(cred, v));
      }
      this.#owned.push(...forms);
      this.#credentialForms = { vault: v, forms };
    }
    const remembered = v.remembered().flatMap((r) => formsOf(r, v));
    this.#owned.push(...remembered);
    this.#redactor = createRedactor([...this.#credentialForms.forms, ...remembered, ...this.#retired, ...this.#minted]);
  }
}
