/**
 * The vault's operations on a path: create, open (read-only, no lock), write
 * under the writer lock, change the passphrase, test for existence.
 *
 * Invariants: every entry point checks the directory and file permissions
 * before reading or writing; writers hold `<vault>.lock` from before the read
 * until after the rename and always release it; vaults opened here are
 * locked (zeroed) before a writer returns or throws; each save increments the
 * generation and re-seals the payload under a fresh nonce without re-running
 * the KDF; only create and changePassphrase derive a new key wrap, and
 * changePassphrase also replaces the data key.
 */
import { systemClock, type Clock } from '../clock/index.js';
import { resolve } from 'node:path';
import { PosternError } from '../rules/errors.js';
import type { KdfBounds } from './format.js';
import { ABSOLUTE_MINIMUM_KDF, boundsWithFloor, KEY_BYTES, kdfParamsProblem, MAXIMUM_KDF, MODERATE_KDF, parseHeader } from './format.js';
import { checkVaultDirectory, pathExists, readVaultFile, removeStaleTemps, writeVaultFile } from './files.js';
import type { DeriveKek, KdfRunner } from './kdf.js';
import { kekDeriver } from './kdf.js';
import { sodium, zero } from './libsodium.js';
import { openVaultBytes, openVaultBytesWithKey, sealVaultContents } from './codec.js';
import type { VaultContents } from './payload.js';
import { zeroCredentials } from './payload.js';
import { createKeyWrap } from './seal.js';
import type { DerivedKeyPurpose, JournalMark, KdfParams } from './types.js';
import { deriveFromDataKey, UnlockedVault, vaultIsDirty, vaultState } from './unlocked-vault.js';
import { acquireWriterLock } from './writer-lock.js';

export interface VaultOptions {
  /** Argon2id cost for createVault / changePassphrase; default MODERATE. */
  kdf?: KdfParams;
  /** Lowest cost accepted when reading; default MODERATE. Only tests lower it. */
  minimumKdf?: KdfParams;
  /** 'worker' (default) or 'inline' (tests running thousands of cheap derivations). */
  kdfRunner?: KdfRunner;
  /** The clock for credential metadata and generation times; the system clock by default. */
  clock?: Clock;
  /** The home change a save belongs to (src/home/change-record.ts); without it a save writes the file itself. */
  stage?: VaultStage;
  /**
   * The journal's anchored heads now (the home's writers and the daemon give
   * it): every save records them in the vault (FORMAT.md §4, `journal`).
   * Undefined when there is nothing to record.
   */
  journalMark?: (v: UnlockedVault) => JournalMark | undefined;
}

/**
 * How a save joins a change of several files: `recover` runs once the writer
 * lock is held, before the file is read (it finishes a change a killed writer
 * left); `replace` receives the sealed file instead of it being written here,
 * and the change writes it with its other files.
 */
export interface VaultStage {
  recover(): Promise<void>;
  replace(path: string, file: Uint8Array): Promise<void>;
}

interface Resolved {
  readonly kdf: KdfParams;
  readonly bounds: KdfBounds;
  readonly deriveKek: DeriveKek;
  readonly now: () => Date;
  readonly stage: VaultStage | undefined;
  readonly journalMark: ((v: UnlockedVault) => JournalMark | undefined) | undefined;
}

function invalid(message: string): PosternError {
  return new PosternError('INPUT_INVALID', message, { details: { reason: message } });
}

function resolveOptions(opts: VaultOptions | undefined): Resolved {
  const o = opts ?? {};
  if (o.minimumKdf !== undefined) {
    const problem = kdfParamsProblem(o.minimumKdf, { min: ABSOLUTE_MINIMUM_KDF, max: MAXIMUM_KDF });
    if (problem !== null) throw invalid(`minimumKdf rejected: ${problem}`);
  }
  return {
    kdf: o.kdf ?? MODERATE_KDF,
    bounds: boundsWithFloor(o.minimumKdf),
    deriveKek: kekDeriver(o.kdfRunner ?? 'worker'),
    now: () => (o.clock ?? systemClock).now(),
    stage: o.stage,
    journalMark: o.journalMark,
  };
}

/** The cost a new key wrap will use must be one this reader would accept. */
function assertWritableKdf(r: Resolved): void {
  const problem = kdfParamsProblem(r.kdf, r.bounds);
  if (problem !== null) throw invalid(`KDF parameters rejected: ${problem}`);
}

function assertPassphrase(p: unknown, what = 'passphrase'): asserts p is Uint8Array {
  if (!(p instanceof Uint8Array)) throw invalid(`the ${what} must be a Uint8Array`);
}

async function loadVault(path: string, passphrase: Uint8Array, r: Resolved): Promise<UnlockedVault> {
  const file = await readVaultFile(path);
  const opened = await openVaultBytes(file, passphrase, { bounds: r.bounds, deriveKek: r.deriveKek, source: path });
  const { dataKey, keyWrap, contents } = opened;
  return new UnlockedVault({ dataKey, keyWrap, contents, dirty: false, locked: false, derivedKeys: new Map(), now: r.now });
}

/** Seal the vault's contents as the next generation and replace the file. Caller holds the lock. */
async function saveVault(path: string, vault: UnlockedVault, stage: VaultStage | undefined): Promise<void> {
  const s = vaultState(vault);
  const next: VaultContents = { ...s.contents, generation: s.contents.generation + 1 };
  const file = sealVaultContents(s.dataKey, s.keyWrap, next);
  await removeStaleTemps(path);
  if (stage === undefined) await writeVaultFile(path, file);
  else await stage.replace(path, file);
  s.contents.generation = next.generation;
  s.dirty = false;
}

/** Create a new, empty vault (generation 1). VAULT_EXISTS if anything is at `path`. */
export async function createVault(path: string, passphrase: Uint8Array, opts?: VaultOptions): Promise<void> {
  assertPassphrase(passphrase);
  const r = resolveOptions(opts);
  assertWritableKdf(r);
  const vaultPath = resolve(path);
  await checkVaultDirectory(vaultPath, true);
  const lock = await acquireWriterLock(vaultPath);
  const dataKey = sodium.randombytes_buf(KEY_BYTES);
  try {
    if (await pathExists(vaultPath)) {
      throw new PosternError('VAULT_EXISTS', `a vault already exists at ${vaultPath}`, { details: { path: vaultPath } });
    }
    const keyWrap = await createKeyWrap(passphrase, dataKey, r.kdf, r.deriveKek);
    const file = sealVaultContents(dataKey, keyWrap, { generation: 1, createdAt: r.now().toISOString(), acceptedCatalog: null, journalGap: null, credentials: new Map() });
    await removeStaleTemps(vaultPath);
    await writeVaultFile(vaultPath, file);
  } finally {
    zero(dataKey);
    await lock.release();
  }
}

/** Open for reading (the daemon). Holds no lock; changes made to the result are never saved. */
export async function openVault(path: string, passphrase: Uint8Array, opts?: VaultOptions): Promise<UnlockedVault> {
  assertPassphrase(passphrase);
  const r = resolveOptions(opts);
  const vaultPath = resolve(path);
  await checkVaultDirectory(vaultPath, false);
  return loadVault(vaultPath, passphrase, r);
}

/** What re-reading the vault file found, compared with the generation held. */
export type Reopened =
  | { readonly kind: 'unchanged'; readonly generation: number }
  | { readonly kind: 'newer'; readonly vault: UnlockedVault }
  | { readonly kind: 'older'; readonly generation: number };

/**
 * Re-read the vault file with the data key `current` holds: the running
 * daemon adopts what `secret add|rotate|rm` saved, without the passphrase
 * (which it no longer has). The returned vault owns copies of everything;
 * `current` is left as it is (the caller locks it). Throws VAULT_AUTH when the
 * file is sealed under another data key (or was modified), VAULT_CORRUPT,
 * VAULT_NOT_FOUND or VAULT_PERMISSIONS as openVault would.
 */
export async function reopenVault(path: string, current: UnlockedVault, opts?: VaultOptions): Promise<Reopened> {
  const r = resolveOptions(opts);
  const vaultPath = resolve(path);
  const held = vaultState(current);
  await checkVaultDirectory(vaultPath, false);
  const file = await readVaultFile(vaultPath);
  const { keyWrap, contents } = openVaultBytesWithKey(file, held.dataKey, { bounds: r.bounds, source: vaultPath });
  if (contents.generation <= held.contents.generation) {
    zeroCredentials(contents.credentials.values());
    const generation = contents.generation;
    return generation === held.contents.generation ? { kind: 'unchanged', generation } : { kind: 'older', generation };
  }
  const vault = new UnlockedVault({ dataKey: Uint8Array.from(held.dataKey), keyWrap, contents, dirty: false, locked: false, derivedKeys: new Map(), now: r.now });
  return { kind: 'newer', vault };
}

/**
 * How a writer opens the vault: with the passphrase, or with a vault already
 * unlocked (the daemon's, after an authenticated operator asked), whose data
 * key opens the file as it is now without a key derivation.
 */
export type VaultUnlock = Uint8Array | { readonly held: UnlockedVault };

async function loadWith(path: string, unlock: VaultUnlock, r: Resolved): Promise<UnlockedVault> {
  if (unlock instanceof Uint8Array) return loadVault(path, unlock, r);
  if (unlock.held.locked) throw new PosternError('VAULT_LOCKED', 'the vault is locked');
  const held = vaultState(unlock.held);
  const file = await readVaultFile(path);
  const { keyWrap, contents } = openVaultBytesWithKey(file, held.dataKey, { bounds: r.bounds, source: path });
  return new UnlockedVault({ dataKey: Uint8Array.from(held.dataKey), keyWrap, contents, dirty: false, locked: false, derivedKeys: new Map(), now: r.now });
}

/** What `withVaultWriter` saved: the new generation, or null when `fn` changed nothing. */
export type VaultSave = { readonly generation: number } | null;

/**
 * Lock, open, run `fn`, save if `fn` changed anything, run `afterSave` (still
 * holding the writer lock: files that must follow the vault's new generation;
 * it is told the generation saved), zero, unlock. If `fn` throws nothing is
 * saved. The vault passed to `fn` is locked when this returns, so `fn` must
 * not return secret arrays.
 */
export async function withVaultWriter<T>(
  path: string,
  unlock: VaultUnlock,
  fn: (v: UnlockedVault) => T | Promise<T>,
  opts?: VaultOptions,
  afterSave?: (result: T, saved: VaultSave) => Promise<void>,
): Promise<T> {
  if (!(unlock instanceof Uint8Array) && !((unlock as { held?: unknown } | null)?.held instanceof UnlockedVault)) throw invalid('the vault writer needs a passphrase (Uint8Array) or an unlocked vault');
  const r = resolveOptions(opts);
  const vaultPath = resolve(path);
  await checkVaultDirectory(vaultPath, false);
  const lock = await acquireWriterLock(vaultPath);
  let vault: UnlockedVault | undefined;
  try {
    await r.stage?.recover();
    vault = await loadWith(vaultPath, unlock, r);
    const result = await fn(vault);
    if (vault.locked && vaultIsDirty(vault)) {
      throw new PosternError('VAULT_LOCKED', `the vault was locked before its changes were saved; nothing was written to ${vaultPath}`);
    }
    let saved: VaultSave = null;
    if (vaultIsDirty(vault)) {
      const mark = r.journalMark?.(vault);
      if (mark !== undefined) vault.recordJournal(mark);
      await saveVault(vaultPath, vault, r.stage);
      saved = { generation: vault.generation };
    }
    vault.lock();
    await afterSave?.(result, saved);
    return result;
  } finally {
    vault?.lock();
    await lock.release();
  }
}

/** The keys derived from the data key before and after a passphrase change (the vault's own arrays: do not keep them). */
export interface RekeyKeys {
  readonly old: (purpose: DerivedKeyPurpose) => Uint8Array;
  readonly new: (purpose: DerivedKeyPurpose) => Uint8Array;
}

/**
 * Reads whatever the old keys authenticate and prepares it under the new
 * keys (writing nothing); the returned function writes it, after the vault
 * was saved, still under the writer lock.
 */
export type Reauthenticate<T> = (keys: RekeyKeys) => Promise<() => Promise<T>>;

/**
 * A new passphrase AND a new data key: the vault is re-sealed under a random
 * data key wrapped with `newPass` (new salt, `opts.kdf` or the vault's own
 * cost where that is higher: a passphrase change never lowers it), so an old copy of
 * the file with the old passphrase opens only the contents of that copy and
 * derives keys that no longer authenticate anything. Every artefact MAC'd
 * with a derived key is re-authenticated by `reauthenticate` (prepared before
 * the save, written after it). Credentials are unchanged.
 */
export async function changePassphrase<T = void>(path: string, oldPass: Uint8Array, newPass: Uint8Array, opts?: VaultOptions, reauthenticate?: Reauthenticate<T>): Promise<T | undefined> {
  assertPassphrase(oldPass, 'old passphrase');
  assertPassphrase(newPass, 'new passphrase');
  const r = resolveOptions(opts);
  assertWritableKdf(r);
  const vaultPath = resolve(path);
  await checkVaultDirectory(vaultPath, false);
  const lock = await acquireWriterLock(vaultPath);
  let vault: UnlockedVault | undefined;
  const newDataKey = sodium.randombytes_buf(KEY_BYTES);
  const newDerived = new Map<DerivedKeyPurpose, Uint8Array>();
  try {
    await r.stage?.recover();
    vault = await loadVault(vaultPath, oldPass, r);
    const opened = vault;
    const keys: RekeyKeys = {
      old: (p) => opened.deriveKey(p),
      new: (p) => {
        let k = newDerived.get(p);
        if (k === undefined) newDerived.set(p, (k = deriveFromDataKey(newDataKey, p)));
        return k;
      },
    };
    const commit = reauthenticate === undefined ? undefined : await reauthenticate(keys);
    const s = vaultState(vault);
    // Never lower: a cheap profile (tests) cannot weaken a vault made at a higher cost.
    const cost = { opslimit: Math.max(r.kdf.opslimit, s.keyWrap.kdf.opslimit), memlimit: Math.max(r.kdf.memlimit, s.keyWrap.kdf.memlimit) };
    const keyWrap = await createKeyWrap(newPass, newDataKey, cost, r.deriveKek);
    const oldDataKey = s.dataKey;
    s.dataKey = newDataKey.slice();
    s.keyWrap = keyWrap;
    // Keys derived from the old data key are stale from here on (the hook copied what it needs).
    zero(oldDataKey, ...s.derivedKeys.values());
    s.derivedKeys.clear();
    await saveVault(vaultPath, vault, r.stage);
    return await commit?.();
  } finally {
    zero(newDataKey, ...newDerived.values());
    vault?.lock();
    await lock.release();
  }
}

/**
 * The Argon2id cost written in the vault file's header, read without the
 * passphrase (the header is public): what `postern doctor` shows. Errors as
 * openVault's before the key derivation (VAULT_NOT_FOUND, VAULT_CORRUPT…).
 */
export async function vaultKdf(path: string): Promise<KdfParams> {
  const vaultPath = resolve(path);
  await checkVaultDirectory(vaultPath, false);
  const file = await readVaultFile(vaultPath);
  return parseHeader(file, { bounds: { min: ABSOLUTE_MINIMUM_KDF, max: MAXIMUM_KDF }, source: vaultPath }).kdf;
}

/** Is there anything at `path` (a vault, or something openVault will refuse)? */
export async function vaultExists(path: string): Promise<boolean> {
  return pathExists(resolve(path));
}
