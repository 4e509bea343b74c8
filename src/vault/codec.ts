/**
 * Whole vault files ↔ vault contents, in memory: the exact code path openVault
 * and every save use, minus the disk. Tests (mutation sweep, corpus,
 * properties) call it directly to run thousands of cases quickly.
 *
 * Invariants: `openVaultBytes` returns only fully authenticated, fully
 * validated contents, or throws VAULT_CORRUPT / VAULT_AUTH (VAULT_IO only if
 * the KDF itself cannot run); on failure nothing it decrypted survives
 * unzeroed. `sealVaultContents` zeroes the plaintext it builds.
 */
import type { KeyWrap } from './format.js';
import { zero } from './libsodium.js';
import type { ContentsToSeal, VaultContents } from './payload.js';
import { decodePayload, encodePayload } from './payload.js';
import type { KdfBounds } from './format.js';
import { parseHeader } from './format.js';
import type { UnsealOptions } from './seal.js';
import { openPayload, sealVault, unsealVault } from './seal.js';

interface OpenedBytes {
  /** Caller owns and must zero the data key and the secrets in `contents`. */
  readonly dataKey: Uint8Array;
  readonly keyWrap: KeyWrap;
  readonly contents: VaultContents;
}

export async function openVaultBytes(file: Uint8Array, passphrase: Uint8Array, opts: UnsealOptions): Promise<OpenedBytes> {
  const { dataKey, plaintext, keyWrap } = await unsealVault(file, passphrase, opts);
  try {
    return { dataKey, keyWrap, contents: decodePayload(plaintext, opts.source) };
  } catch (e) {
    zero(dataKey);
    throw e;
  }
}

export function sealVaultContents(dataKey: Uint8Array, keyWrap: KeyWrap, contents: ContentsToSeal): Uint8Array {
  const plaintext = encodePayload(contents);
  try {
    return sealVault(dataKey, keyWrap, plaintext);
  } finally {
    zero(plaintext);
  }
}

/**
 * Open a file with a data key already held (no passphrase, no KDF): how a
 * running daemon adopts what a writer saved. A file sealed under another data
 * key fails exactly like a modified one (VAULT_AUTH).
 */
export function openVaultBytesWithKey(file: Uint8Array, dataKey: Uint8Array, opts: { bounds?: KdfBounds; source?: string }): { keyWrap: KeyWrap; contents: VaultContents } {
  const header = parseHeader(file, opts);
  const plaintext = openPayload(dataKey, file, header, opts.source);
  try {
    const { kdf, salt, wrapNonce, wrappedKey } = header;
    return { keyWrap: { kdf, salt, wrapNonce, wrappedKey }, contents: decodePayload(plaintext, opts.source) };
  } finally {
    zero(plaintext);
  }
}
