/**
 * The checkpoint signature, the one place it is made and checked: Ed25519
 * (libsodium) over a domain string and the canonical JSON of the record. The
 * key pair comes from a 32-byte seed the vault derives for this purpose alone
 * (`journal-checkpoint`, vault/FORMAT.md §6), so only someone who can open
 * the vault signs, and anyone with the public key verifies — no vault needed.
 *
 * Invariants: the private key lives only inside a `CheckpointSigner` and is
 * zeroed by `close`; verification never throws on malformed input (false).
 */
import { createHash } from 'node:crypto';
import { sodium, zero } from '../../vault/libsodium.js';
import { canonicalJson } from '../json.js';

/** What a signature is for: its domain string, so that no signed record can pass for another kind. */
const DOMAINS = {
  checkpoint: 'postern journal checkpoint v1\n',
  /** A gap in a shipped journal accepted by its home (`audit ship --accept-gap`; ship/gaps.ts). */
  ship_gap: 'postern ship gap v1\n',
} as const;
type SignedKind = keyof typeof DOMAINS;
const HEX64 = /^[0-9a-f]{64}$/;
const HEX128 = /^[0-9a-f]{128}$/;

function message(record: unknown, kind: SignedKind): Uint8Array {
  return Buffer.from(DOMAINS[kind] + canonicalJson(record), 'utf8');
}

/** `SHA256:` and the unpadded base64 of SHA-256 over the 32 public-key bytes (as ssh-keygen prints host keys). */
export function keyFingerprint(publicKeyHex: string): string {
  return `SHA256:${createHash('sha256').update(Buffer.from(publicKeyHex, 'hex')).digest('base64').replace(/=+$/, '')}`;
}

/** Does `given` (a fingerprint or the public key in hex) name this public key? */
export function namesKey(given: string, publicKeyHex: string): boolean {
  const g = given.trim();
  return g === keyFingerprint(publicKeyHex) || g.toLowerCase() === publicKeyHex;
}

export function verifySignature(publicKeyHex: string, record: unknown, signatureHex: string, kind: SignedKind = 'checkpoint'): boolean {
  if (!HEX64.test(publicKeyHex) || !HEX128.test(signatureHex)) return false;
  try {
    return sodium.crypto_sign_verify_detached(Buffer.from(signatureHex, 'hex'), message(record, kind), Buffer.from(publicKeyHex, 'hex'));
  } catch {
    return false;
  }
}

export class CheckpointSigner {
  readonly publicKey: string;
  readonly #privateKey: Uint8Array;

  /** `seed`: the vault's journal-checkpoint key (not kept). */
  constructor(seed: Uint8Array) {
    const pair = sodium.crypto_sign_seed_keypair(seed);
    this.publicKey = Buffer.from(pair.publicKey).toString('hex');
    this.#privateKey = pair.privateKey;
  }

  get fingerprint(): string {
    return keyFingerprint(this.publicKey);
  }

  sign(record: unknown, kind: SignedKind = 'checkpoint'): string {
    return Buffer.from(sodium.crypto_sign_detached(message(record, kind), this.#privateKey)).toString('hex');
  }

  close(): void {
    zero(this.#privateKey);
  }
}

/** The public key of a seed, for `postern audit key` and `verify --unlock`. */
export function publicKeyOf(seed: Uint8Array): string {
  const s = new CheckpointSigner(seed);
  try {
    return s.publicKey;
  } finally {
    s.close();
  }
}
