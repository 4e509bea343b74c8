/**
 * The keyed fingerprint of a credential's value, recorded with every real
 * redaction so that `postern audit find-secret` can later tell whether *this*
 * value (not merely a credential of that name, nor a marker an agent typed)
 * reached an argument, a result or an error — without the journal ever
 * holding the value or an unkeyed hash of it (a short secret's plain hash
 * is guessed offline).
 *
 * fingerprint = "<key id>:<first 32 hex of HMAC-SHA256(key, value)>", where
 * value = "postern.exposure/1" ‖ name ‖ each secret part (sorted by part
 * name), every field length-prefixed; the key is the vault's
 * `secret-exposure` derived key, and the key id (16 hex of an HMAC of a
 * fixed label) says which data key it came from: a passphrase change makes a
 * new data key, and fingerprints recorded before it carry the old id.
 */
import { createHmac } from 'node:crypto';
import type { RedactableCredential } from './injected-forms.js';

const FINGERPRINT = /^([0-9a-f]{16}):([0-9a-f]{32})$/;

export interface ParsedFingerprint {
  readonly keyId: string;
  readonly value: string;
}

export function exposureKeyId(key: Uint8Array): string {
  return createHmac('sha256', key).update('postern.exposure-key-id/1').digest('hex').slice(0, 16);
}

function lengthPrefixed(b: Uint8Array): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(b.byteLength);
  return Buffer.concat([len, b]);
}

/** The fingerprint of `credential`'s current value under `key`. */
export function valueFingerprint(key: Uint8Array, credential: RedactableCredential): string {
  const mac = createHmac('sha256', key);
  mac.update(lengthPrefixed(Buffer.from('postern.exposure/1')));
  mac.update(lengthPrefixed(Buffer.from(credential.meta.name, 'utf8')));
  for (const part of Object.keys(credential.secret).sort()) {
    mac.update(lengthPrefixed(Buffer.from(part, 'utf8')));
    mac.update(lengthPrefixed(credential.secret[part] ?? new Uint8Array()));
  }
  return `${exposureKeyId(key)}:${mac.digest('hex').slice(0, 32)}`;
}

export function parseFingerprint(s: string): ParsedFingerprint | undefined {
  const m = FINGERPRINT.exec(s);
  return m === null ? undefined : { keyId: m[1]!, value: m[2]! };
}
