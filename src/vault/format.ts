/**
 * Vault file format v1: the header's byte layout, its encoder and its parser
 * (the normative text is vault/FORMAT.md; keep the two in step).
 *
 * Pure: no I/O and no cryptography. Invariants of `parseHeader`:
 * - every field is checked before anything is derived or allocated: magic,
 *   version, KDF id, KDF bounds, payload length against the real file length;
 * - a header it returns describes exactly the bytes it was given (no
 *   truncation, no trailing bytes);
 * - every rejection is a VAULT_CORRUPT PosternError with a `reason`.
 */
import { PosternError } from '../rules/errors.js';
import type { KdfParams } from './types.js';

/** "\x89PVLT\r\n\x1a": high bit and CR/LF catch 7-bit and newline-mangling transfers. */
export const MAGIC: Uint8Array = Uint8Array.of(0x89, 0x50, 0x56, 0x4c, 0x54, 0x0d, 0x0a, 0x1a);
const FORMAT_VERSION = 1;
/** KDF id 1: Argon2id v1.3 (libsodium crypto_pwhash_ALG_ARGON2ID13). */
export const KDF_ARGON2ID13 = 1;

export const SALT_BYTES = 16;
export const NONCE_BYTES = 24;
export const KEY_BYTES = 32;
export const TAG_BYTES = 16;
const WRAPPED_KEY_BYTES = KEY_BYTES + TAG_BYTES;

/** Byte offsets of the header fields; integers are little-endian. */
export const HeaderOffsets = {
  magic: 0,
  version: 8, // u16
  kdfId: 10, // u8
  opslimit: 11, // u32
  memlimit: 15, // u64, bytes
  salt: 23, // 16 bytes
  wrapNonce: 39, // 24 bytes
  wrappedKey: 63, // 48 bytes
  payloadNonce: 111, // 24 bytes
  payloadLength: 135, // u32, ciphertext incl. tag
} as const;
/** The key-wrap AD is the header prefix magic..salt (binds the KDF params and salt). */
const KEY_WRAP_AD_BYTES = HeaderOffsets.wrapNonce;
export const HEADER_BYTES = 139;

export const MAX_PAYLOAD_BYTES = 16 * 1024 * 1024;
export const MAX_FILE_BYTES = HEADER_BYTES + MAX_PAYLOAD_BYTES;

/** libsodium's OPSLIMIT_MODERATE / MEMLIMIT_MODERATE: the default cost and read floor. */
export const MODERATE_KDF: KdfParams = Object.freeze({ opslimit: 3, memlimit: 256 * 1024 * 1024 });
/** The ceiling a reader accepts; above it a file is treated as hostile. */
export const MAXIMUM_KDF: KdfParams = Object.freeze({ opslimit: 16, memlimit: 1024 * 1024 * 1024 });
/** Argon2id's own minimums in libsodium; no floor can go below these. */
export const ABSOLUTE_MINIMUM_KDF: KdfParams = Object.freeze({ opslimit: 1, memlimit: 8192 });
const MEMLIMIT_GRANULE = 1024;

export interface KdfBounds {
  readonly min: KdfParams;
  readonly max: KdfParams;
}
export const DEFAULT_KDF_BOUNDS: KdfBounds = Object.freeze({ min: MODERATE_KDF, max: MAXIMUM_KDF });

/** The passphrase-dependent part of the header; unchanged by ordinary saves. */
export interface KeyWrap {
  readonly kdf: KdfParams;
  readonly salt: Uint8Array;
  readonly wrapNonce: Uint8Array;
  readonly wrappedKey: Uint8Array;
}

export interface VaultHeader extends KeyWrap {
  readonly version: number;
  readonly kdfId: number;
  readonly payloadNonce: Uint8Array;
  /** Ciphertext length including the 16-byte tag. */
  readonly payloadLength: number;
}

/** A VAULT_CORRUPT error whose message and details carry the reason. */
export function corruptError(reason: string, source?: string): PosternError {
  const where = source === undefined ? 'vault' : `vault ${source}`;
  return new PosternError('VAULT_CORRUPT', `${where} is malformed: ${reason}`, {
    details: source === undefined ? { reason } : { reason, path: source },
  });
}

/**
 * A well-formed header whose Argon2id cost is under the reader's floor: still
 * VAULT_CORRUPT to a caller (it is refused like any unacceptable header), with
 * `below_floor` in the details and a message that says what it is.
 */
function belowFloorError(reason: string, source?: string): PosternError {
  const where = source === undefined ? 'vault' : `vault ${source}`;
  return new PosternError(
    'VAULT_CORRUPT',
    `${where} has a key-derivation cost below the production floor (${reason}): it was made by the test profile (POSTERN_TEST_KDF), which only tests use; make a real vault with \`postern init\``,
    { details: source === undefined ? { reason, below_floor: true } : { reason, below_floor: true, path: source } },
  );
}

/** Why `kdf` falls outside `bounds` (or is not encodable), or null when it is acceptable. */
export function kdfParamsProblem(kdf: KdfParams, bounds: KdfBounds): string | null {
  const { opslimit, memlimit } = kdf;
  if (!Number.isSafeInteger(opslimit) || opslimit < 0) return `opslimit ${opslimit} is not an unsigned integer`;
  if (!Number.isSafeInteger(memlimit) || memlimit < 0) return `memlimit ${memlimit} is not an unsigned integer`;
  if (opslimit < bounds.min.opslimit) return `opslimit ${opslimit} is below the minimum ${bounds.min.opslimit}`;
  if (opslimit > bounds.max.opslimit) return `opslimit ${opslimit} exceeds the maximum ${bounds.max.opslimit}`;
  if (memlimit < bounds.min.memlimit) return `memlimit ${memlimit} bytes is below the minimum ${bounds.min.memlimit}`;
  if (memlimit > bounds.max.memlimit) return `memlimit ${memlimit} bytes exceeds the maximum ${bounds.max.memlimit}`;
  if (memlimit % MEMLIMIT_GRANULE !== 0) return `memlimit ${memlimit} bytes is not a multiple of ${MEMLIMIT_GRANULE}`;
  return null;
}

/** Bounds with the caller's floor, never below Argon2id's own minimums. */
export function boundsWithFloor(floor: KdfParams | undefined): KdfBounds {
  if (floor === undefined) return DEFAULT_KDF_BOUNDS;
  return {
    min: {
      opslimit: Math.max(floor.opslimit, ABSOLUTE_MINIMUM_KDF.opslimit),
      memlimit: Math.max(floor.memlimit, ABSOLUTE_MINIMUM_KDF.memlimit),
    },
    max: MAXIMUM_KDF,
  };
}

/** Header bytes magic..salt: the associated data of the key wrap. */
export function encodeKeyWrapAd(kdf: KdfParams, salt: Uint8Array): Uint8Array {
  const out = new Uint8Array(KEY_WRAP_AD_BYTES);
  const view = new DataView(out.buffer);
  out.set(MAGIC, HeaderOffsets.magic);
  view.setUint16(HeaderOffsets.version, FORMAT_VERSION, true);
  view.setUint8(HeaderOffsets.kdfId, KDF_ARGON2ID13);
  view.setUint32(HeaderOffsets.opslimit, kdf.opslimit, true);
  view.setBigUint64(HeaderOffsets.memlimit, BigInt(kdf.memlimit), true);
  if (salt.length !== SALT_BYTES) throw new RangeError('salt must be 16 bytes');
  out.set(salt, HeaderOffsets.salt);
  return out;
}

/** The full 139-byte v1 header. */
export function encodeHeader(wrap: KeyWrap, payloadNonce: Uint8Array, payloadLength: number): Uint8Array {
  if (wrap.wrapNonce.length !== NONCE_BYTES || payloadNonce.length !== NONCE_BYTES) throw new RangeError('nonces must be 24 bytes');
  if (wrap.wrappedKey.length !== WRAPPED_KEY_BYTES) throw new RangeError('wrapped key must be 48 bytes');
  const out = new Uint8Array(HEADER_BYTES);
  out.set(encodeKeyWrapAd(wrap.kdf, wrap.salt), 0);
  out.set(wrap.wrapNonce, HeaderOffsets.wrapNonce);
  out.set(wrap.wrappedKey, HeaderOffsets.wrappedKey);
  out.set(payloadNonce, HeaderOffsets.payloadNonce);
  new DataView(out.buffer).setUint32(HeaderOffsets.payloadLength, payloadLength, true);
  return out;
}

/**
 * Parse and bounds-check the header of a complete vault file. The returned
 * byte fields are copies, so the caller may wipe `file` independently.
 */
export function parseHeader(file: Uint8Array, opts: { bounds?: KdfBounds; source?: string } = {}): VaultHeader {
  const bounds = opts.bounds ?? DEFAULT_KDF_BOUNDS;
  const fail = (reason: string): PosternError => corruptError(reason, opts.source);
  if (file.length === 0) throw fail('empty file');
  for (let i = 0; i < Math.min(file.length, MAGIC.length); i++) {
    if (file[i] !== MAGIC[i]) throw fail('not a Postern vault (bad magic)');
  }
  if (file.length < HeaderOffsets.kdfId) throw fail(`truncated header (${file.length} of ${HEADER_BYTES} bytes)`);
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const version = view.getUint16(HeaderOffsets.version, true);
  if (version !== FORMAT_VERSION) {
    throw fail(`unsupported format version ${version} (this Postern reads version ${FORMAT_VERSION})`);
  }
  if (file.length < HEADER_BYTES) throw fail(`truncated header (${file.length} of ${HEADER_BYTES} bytes)`);
  const kdfId = view.getUint8(HeaderOffsets.kdfId);
  if (kdfId !== KDF_ARGON2ID13) throw fail(`unknown KDF id ${kdfId}`);
  const opslimit = view.getUint32(HeaderOffsets.opslimit, true);
  const rawMemlimit = view.getBigUint64(HeaderOffsets.memlimit, true);
  // Compared as a bigint first: a u64 above the ceiling never becomes a Number.
  if (rawMemlimit > BigInt(bounds.max.memlimit)) {
    throw fail(`memlimit ${rawMemlimit} bytes exceeds the maximum ${bounds.max.memlimit}`);
  }
  const kdf: KdfParams = { opslimit, memlimit: Number(rawMemlimit) };
  const kdfProblem = kdfParamsProblem(kdf, bounds);
  if (kdfProblem !== null) {
    // Valid Argon2id parameters under the floor: a vault of the test profile (kdf-profile.ts), not a damaged one.
    const belowFloor = kdfParamsProblem(kdf, { min: ABSOLUTE_MINIMUM_KDF, max: bounds.max }) === null;
    throw belowFloor ? belowFloorError(kdfProblem, opts.source) : fail(kdfProblem);
  }
  const payloadLength = view.getUint32(HeaderOffsets.payloadLength, true);
  if (payloadLength < TAG_BYTES) throw fail(`payload length ${payloadLength} is shorter than the ${TAG_BYTES}-byte tag`);
  if (payloadLength > MAX_PAYLOAD_BYTES) throw fail(`payload length ${payloadLength} exceeds the maximum ${MAX_PAYLOAD_BYTES}`);
  const expected = HEADER_BYTES + payloadLength;
  if (file.length < expected) throw fail(`truncated payload (file has ${file.length} bytes, header declares ${expected})`);
  if (file.length > expected) throw fail(`${file.length - expected} trailing bytes after the payload`);
  const copy = (offset: number, length: number): Uint8Array => file.slice(offset, offset + length);
  return {
    version,
    kdfId,
    kdf,
    salt: copy(HeaderOffsets.salt, SALT_BYTES),
    wrapNonce: copy(HeaderOffsets.wrapNonce, NONCE_BYTES),
    wrappedKey: copy(HeaderOffsets.wrappedKey, WRAPPED_KEY_BYTES),
    payloadNonce: copy(HeaderOffsets.payloadNonce, NONCE_BYTES),
    payloadLength,
  };
}
