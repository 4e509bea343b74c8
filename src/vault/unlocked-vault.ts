/**
 * An opened vault in memory: credentials with their secret bytes, the data
 * key, and the header's key wrap (so saving never re-runs the KDF).
 *
 * Invariants: secret parts live only as Uint8Array; `get` and `secretValues`
 * hand out the vault's own arrays (do not modify them) and `lock()` zeroes
 * them, the data key and every derived key handed out, after which every
 * method throws VAULT_LOCKED. Inputs are copied, so callers zero their own
 * copies. Mutations only mark the vault dirty; writing is done by
 * withVaultWriter (vault.ts), which reaches the state through `vaultState`.
 */
import { PosternError } from '../rules/errors.js';
import { assertValidFields, assertValidKind, assertValidName, assertValidSecret } from './credentials.js';
import type { KeyWrap } from './format.js';
import { sodium, zero } from './libsodium.js';
import type { CatalogMark, StoredCredential, VaultContents } from './payload.js';
import { zeroCredentials } from './payload.js';
import type { Credential, CredentialKind, CredentialMeta, DerivedKeyPurpose, KdfParams } from './types.js';

/** @internal The mutable state behind an UnlockedVault. */
export interface VaultState {
  dataKey: Uint8Array;
  keyWrap: KeyWrap;
  readonly contents: VaultContents;
  dirty: boolean;
  locked: boolean;
  readonly derivedKeys: Map<DerivedKeyPurpose, Uint8Array>;
  readonly now: () => Date;
}

/** Subkey derivation: libsodium crypto_kdf_derive_from_key(32, id, context, dataKey). */
export const DERIVED_KEY_CONTEXT = 'pstnvlt1';
export function derivedKeyId(purpose: DerivedKeyPurpose): number {
  switch (purpose) {
    case 'catalog-mac':
      return 1;
    case 'operator-auth':
      return 2;
    case 'journal-anchor':
      return 3;
    case 'secret-exposure':
      return 4;
    case 'journal-checkpoint':
      return 5;
    case 'pending-secret':
      return 6;
  }
}

/** @internal A derived key straight from a data key (changePassphrase needs the new key's before the vault holds it). */
export function deriveFromDataKey(dataKey: Uint8Array, purpose: DerivedKeyPurpose): Uint8Array {
  return sodium.crypto_kdf_derive_from_key(32, derivedKeyId(purpose), DERIVED_KEY_CONTEXT, dataKey);
}

const states = new WeakMap<UnlockedVault, VaultState>();

function lockedError(): PosternError {
  return new PosternError('VAULT_LOCKED', 'the vault is locked');
}

/** @internal For vault.ts: the live state, or VAULT_LOCKED. */
export function vaultState(v: UnlockedVault): VaultState {
  const s = states.get(v);
  if (s === undefined || s.locked) throw lockedError();
  return s;
}

/** @internal Were there changes not yet saved? Readable after lock(), unlike the rest of the state. */
export function vaultIsDirty(v: UnlockedVault): boolean {
  return states.get(v)?.dirty ?? false;
}

function quoted(name: string): string {
  return JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name);
}

function notFound(name: string): PosternError {
  return new PosternError('SECRET_NOT_FOUND', `no secret named ${quoted(name)}`, { details: { name: name.slice(0, 64) } });
}

function copyMeta(c: StoredCredential): CredentialMeta {
  return Object.freeze({ ...c.meta, fields: Object.freeze({ ...c.meta.fields }) });
}

function copySecret(secret: Readonly<Record<string, Uint8Array>>): Record<string, Uint8Array> {
  const out: Record<string, Uint8Array> = {};
  // Uint8Array.from, not slice(): a Buffer's slice() is a view, and callers zero their inputs.
  for (const [part, bytes] of Object.entries(secret)) out[part] = Uint8Array.from(bytes);
  return out;
}

export interface NewCredential {
  name: string;
  kind: CredentialKind;
  fields: Record<string, string>;
  secret: Record<string, Uint8Array>;
}

export class UnlockedVault {
  /** @internal Obtain vaults from openVault or withVaultWriter. */
  constructor(state: VaultState) {
    states.set(this, state);
  }

  get generation(): number {
    return states.get(this)?.contents.generation ?? 0;
  }

  get locked(): boolean {
    return states.get(this)?.locked ?? true;
  }

  /** The Argon2id cost of the passphrase's key wrap (public: it is in the file's header). */
  get kdf(): KdfParams {
    const k = states.get(this)?.keyWrap.kdf;
    return { opslimit: k?.opslimit ?? 0, memlimit: k?.memlimit ?? 0 };
  }

  /** Metadata of every credential, sorted by name. */
  list(): CredentialMeta[] {
    const { contents } = vaultState(this);
    return [...contents.credentials.keys()].sort().map((name) => copyMeta(contents.credentials.get(name) as StoredCredential));
  }

  /** The credential with its secret parts (the vault's own arrays, zeroed by lock()). */
  get(name: string): Credential | undefined {
    const c = vaultState(this).contents.credentials.get(name);
    if (c === undefined) return undefined;
    return Object.freeze({ meta: copyMeta(c), secret: Object.freeze({ ...c.secret }) });
  }

  add(input: NewCredential): void {
    const s = vaultState(this);
    const { name, kind, fields, secret } = input;
    assertValidName(name);
    assertValidKind(kind);
    assertValidFields(kind, fields);
    assertValidSecret(kind, secret);
    if (s.contents.credentials.has(name)) {
      throw new PosternError('SECRET_EXISTS', `a secret named ${quoted(name)} already exists (use rotate to replace it)`, {
        details: { name },
      });
    }
    s.contents.credentials.set(name, {
      meta: { name, kind, created_at: s.now().toISOString(), rotated_at: null, last_used_at: null, fields: Object.freeze({ ...fields }) },
      secret: copySecret(secret),
    });
    s.dirty = true;
  }

  /** Replace the secret parts (and the fields, when given); the old parts are zeroed. */
  rotate(name: string, secret: Record<string, Uint8Array>, fields?: Record<string, string>): void {
    const s = vaultState(this);
    const c = s.contents.credentials.get(name);
    if (c === undefined) throw notFound(name);
    assertValidSecret(c.meta.kind, secret);
    if (fields !== undefined) assertValidFields(c.meta.kind, fields);
    const old = c.secret;
    c.secret = copySecret(secret);
    zero(...Object.values(old));
    if (fields !== undefined) c.meta.fields = Object.freeze({ ...fields });
    c.meta.rotated_at = s.now().toISOString();
    s.dirty = true;
  }

  remove(name: string): void {
    const s = vaultState(this);
    const c = s.contents.credentials.get(name);
    if (c === undefined) throw notFound(name);
    s.contents.credentials.delete(name);
    zeroCredentials([c]);
    s.dirty = true;
  }

  markUsed(name: string): void {
    const s = vaultState(this);
    const c = s.contents.credentials.get(name);
    if (c === undefined) throw notFound(name);
    c.meta.last_used_at = s.now().toISOString();
    s.dirty = true;
  }

  /**
   * The last catalog acceptance this vault recorded (sequence and digest), or
   * null before the first. Readable while unlocked.
   */
  get acceptedCatalog(): CatalogMark | null {
    const m = vaultState(this).contents.acceptedCatalog;
    return m === null ? null : { ...m };
  }

  /** Records a catalog acceptance; the sequence must go up by exactly one. Saved by withVaultWriter. */
  recordAcceptedCatalog(mark: CatalogMark): void {
    const s = vaultState(this);
    const want = (s.contents.acceptedCatalog?.sequence ?? 0) + 1;
    if (mark.sequence !== want || !/^[0-9a-f]{64}$/.test(mark.digest)) {
      throw new PosternError('INPUT_INVALID', `a catalog acceptance must be #${want} with a SHA-256 digest`);
    }
    s.contents.acceptedCatalog = { sequence: mark.sequence, digest: mark.digest };
    s.dirty = true;
  }

  /**
   * The 32-byte key for `purpose`, derived from the data key. changePassphrase
   * replaces the data key, so every derived key changes with the passphrase. Returns the vault's own array (do not modify it);
   * lock() zeroes it.
   */
  deriveKey(purpose: DerivedKeyPurpose): Uint8Array {
    const s = vaultState(this);
    let key = s.derivedKeys.get(purpose);
    if (key === undefined) {
      key = deriveFromDataKey(s.dataKey, purpose);
      s.derivedKeys.set(purpose, key);
    }
    return key;
  }

  /** Every non-empty secret part (the vault's own arrays), for redaction scanners. */
  secretValues(): Uint8Array[] {
    const out: Uint8Array[] = [];
    for (const c of vaultState(this).contents.credentials.values()) {
      for (const bytes of Object.values(c.secret)) if (bytes.length > 0) out.push(bytes);
    }
    return out;
  }

  /** Zero the data key, every secret part and every derived key. Idempotent. */
  lock(): void {
    const s = states.get(this);
    if (s === undefined || s.locked) return;
    s.locked = true;
    zeroCredentials(s.contents.credentials.values());
    s.contents.credentials.clear();
    zero(s.dataKey, ...s.derivedKeys.values());
    s.derivedKeys.clear();
  }
}
