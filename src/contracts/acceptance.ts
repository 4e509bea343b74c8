/**
 * Staged adoption, the pure half: the digest of a catalog file, the record an
 * operator's acceptance produces, its MAC under a key the vault derives
 * (purpose "catalog-mac"), and the decision whether the file on disk may be
 * used. A file whose digest differs from the authenticated accepted digest is
 * `pending` — never used silently — and a record whose MAC does not verify is
 * `unauthenticated`. Storage, the passphrase and the vault live elsewhere.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { canonicalJson, sha256Hex } from '../protocol/canonical.js';

/** Lowercase hex SHA-256 of the catalog file's exact bytes (a string is taken as UTF-8). */
export function catalogDigest(text: string | Uint8Array): string {
  return sha256Hex(text);
}

export interface AcceptanceRecord {
  readonly format: 'postern.catalog-acceptance/1';
  /** catalogDigest of the accepted file. */
  readonly digest: string;
  /** ISO-8601 time of acceptance. */
  readonly accepted_at: string;
  /** Digest of the catalog accepted before this one, or null for the first. */
  readonly previous_digest: string | null;
}

const MAC_DOMAIN = 'postern catalog acceptance v1\n';

export function acceptanceRecord(digest: string, acceptedAt: Date, previousDigest: string | null): AcceptanceRecord {
  return { format: 'postern.catalog-acceptance/1', digest, accepted_at: acceptedAt.toISOString(), previous_digest: previousDigest };
}

/** Hex HMAC-SHA256 over a domain tag and the record's canonical JSON. */
export function acceptanceMac(key: Uint8Array, record: AcceptanceRecord): string {
  return createHmac('sha256', key).update(MAC_DOMAIN).update(canonicalJson(record)).digest('hex');
}

export type AcceptanceCheck = { readonly kind: 'authentic' } | { readonly kind: 'forged' };

export function verifyAcceptance(key: Uint8Array, record: AcceptanceRecord, mac: string): AcceptanceCheck {
  const expected = Buffer.from(acceptanceMac(key, record), 'hex');
  const given = /^[0-9a-f]{64}$/.test(mac) ? Buffer.from(mac, 'hex') : Buffer.alloc(0);
  return given.length === expected.length && timingSafeEqual(given, expected) ? { kind: 'authentic' } : { kind: 'forged' };
}

export type CatalogState =
  | { readonly state: 'no_catalog' }
  /** A file exists but nothing was ever accepted. */
  | { readonly state: 'unaccepted'; readonly fileDigest: string }
  | { readonly state: 'unauthenticated'; readonly fileDigest: string | undefined }
  | { readonly state: 'accepted'; readonly digest: string }
  | { readonly state: 'pending'; readonly fileDigest: string; readonly acceptedDigest: string };

/**
 * Decides what the daemon may use. `accepted` is the stored record with its MAC
 * and the key to check it; only an authentic record counts.
 */
export function catalogState(fileDigest: string | undefined, accepted: { record: AcceptanceRecord; mac: string; key: Uint8Array } | undefined): CatalogState {
  if (accepted === undefined) return fileDigest === undefined ? { state: 'no_catalog' } : { state: 'unaccepted', fileDigest };
  if (verifyAcceptance(accepted.key, accepted.record, accepted.mac).kind !== 'authentic') return { state: 'unauthenticated', fileDigest };
  const acceptedDigest = accepted.record.digest;
  if (fileDigest === undefined || fileDigest === acceptedDigest) return { state: 'accepted', digest: acceptedDigest };
  return { state: 'pending', fileDigest, acceptedDigest };
}
