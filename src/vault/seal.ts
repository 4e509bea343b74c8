/**
 * Sealing and unsealing whole vault files in memory (no I/O): the key wrap
 * (XChaCha20-Poly1305 of the data key under the Argon2id key, AD = header
 * magic..salt) and the payload (XChaCha20-Poly1305 under the data key, AD =
 * the whole 139-byte header, fresh random nonce per seal).
 *
 * Invariants: every AEAD failure — wrong passphrase or any modified byte —
 * is the same VAULT_AUTH error; structural problems are VAULT_CORRUPT and are
 * found before the KDF runs; nothing is returned unless every byte
 * authenticated; key-encryption keys are zeroed before returning.
 */
import { PosternError } from '../rules/errors.js';
import type { KdfBounds, KeyWrap, VaultHeader } from './format.js';
import {
  encodeHeader,
  encodeKeyWrapAd,
  HEADER_BYTES,
  KEY_BYTES,
  MAX_PAYLOAD_BYTES,
  NONCE_BYTES,
  parseHeader,
  SALT_BYTES,
  TAG_BYTES,
} from './format.js';
import type { DeriveKek } from './kdf.js';
import { sodium, zero } from './libsodium.js';
import type { KdfParams } from './types.js';

/** The single error for "wrong passphrase or modified file" — callers cannot tell them apart. */
function authError(source?: string): PosternError {
  const where = source === undefined ? '' : `: ${source}`;
  return new PosternError('VAULT_AUTH', `wrong passphrase, or the vault file was modified${where}`, {
    details: source === undefined ? {} : { path: source },
  });
}

/** Wrap `dataKey` under a key-encryption key with a fresh nonce. */
function wrapDataKey(kek: Uint8Array, dataKey: Uint8Array, kdf: KdfParams, salt: Uint8Array): KeyWrap {
  const wrapNonce = sodium.randombytes_buf(NONCE_BYTES);
  const ad = encodeKeyWrapAd(kdf, salt);
  const wrappedKey = sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(dataKey, ad, null, wrapNonce, kek);
  return { kdf: { opslimit: kdf.opslimit, memlimit: kdf.memlimit }, salt: salt.slice(), wrapNonce, wrappedKey };
}

/** New salt, Argon2id, wrap: everything that depends on the passphrase. */
export async function createKeyWrap(
  passphrase: Uint8Array,
  dataKey: Uint8Array,
  kdf: KdfParams,
  deriveKek: DeriveKek,
): Promise<KeyWrap> {
  const salt = sodium.randombytes_buf(SALT_BYTES);
  const kek = await deriveKek(passphrase, salt, kdf);
  try {
    return wrapDataKey(kek, dataKey, kdf, salt);
  } finally {
    zero(kek);
  }
}

function unwrapDataKey(kek: Uint8Array, wrap: KeyWrap, source?: string): Uint8Array {
  let dataKey: Uint8Array;
  try {
    const ad = encodeKeyWrapAd(wrap.kdf, wrap.salt);
    dataKey = sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(null, wrap.wrappedKey, ad, wrap.wrapNonce, kek);
  } catch {
    throw authError(source);
  }
  if (dataKey.length !== KEY_BYTES) {
    zero(dataKey);
    throw authError(source);
  }
  return dataKey;
}

/** A complete vault file: header (with a fresh payload nonce) ‖ sealed payload. */
export function sealVault(dataKey: Uint8Array, wrap: KeyWrap, plaintext: Uint8Array): Uint8Array {
  const payloadLength = plaintext.length + TAG_BYTES;
  if (payloadLength > MAX_PAYLOAD_BYTES) {
    throw new PosternError('INPUT_INVALID', `the vault would exceed the ${MAX_PAYLOAD_BYTES}-byte payload limit`, {
      details: { payload_bytes: payloadLength, limit: MAX_PAYLOAD_BYTES },
    });
  }
  const payloadNonce = sodium.randombytes_buf(NONCE_BYTES);
  const header = encodeHeader(wrap, payloadNonce, payloadLength);
  const sealed = sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(plaintext, header, null, payloadNonce, dataKey);
  const file = new Uint8Array(HEADER_BYTES + sealed.length);
  file.set(header, 0);
  file.set(sealed, HEADER_BYTES);
  return file;
}

/** Decrypt the payload of a file whose header was parsed from the same bytes. */
export function openPayload(dataKey: Uint8Array, file: Uint8Array, header: VaultHeader, source?: string): Uint8Array {
  try {
    const ad = file.subarray(0, HEADER_BYTES);
    const ciphertext = file.subarray(HEADER_BYTES, HEADER_BYTES + header.payloadLength);
    return sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(null, ciphertext, ad, header.payloadNonce, dataKey);
  } catch {
    throw authError(source);
  }
}

export interface UnsealOptions {
  readonly bounds?: KdfBounds;
  readonly deriveKek: DeriveKek;
  /** Named in error messages (the vault path); never secret. */
  readonly source?: string;
}

interface Unsealed {
  /** Caller owns and must zero: the data key and the decrypted payload. */
  readonly dataKey: Uint8Array;
  readonly plaintext: Uint8Array;
  readonly keyWrap: KeyWrap;
}

/** Parse, derive, unwrap, decrypt. Throws VAULT_CORRUPT (before any KDF) or VAULT_AUTH. */
export async function unsealVault(file: Uint8Array, passphrase: Uint8Array, opts: UnsealOptions): Promise<Unsealed> {
  const header = parseHeader(file, { bounds: opts.bounds, source: opts.source });
  const kek = await opts.deriveKek(passphrase, header.salt, header.kdf);
  let dataKey: Uint8Array;
  try {
    dataKey = unwrapDataKey(kek, header, opts.source);
  } finally {
    zero(kek);
  }
  try {
    const plaintext = openPayload(dataKey, file, header, opts.source);
    const { kdf, salt, wrapNonce, wrappedKey } = header;
    return { dataKey, plaintext, keyWrap: { kdf, salt, wrapNonce, wrappedKey } };
  } catch (e) {
    zero(dataKey);
    throw e;
  }
}
