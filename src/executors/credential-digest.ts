/**
 * A keyed digest of a credential's kind and secret parts, for the executors'
 * connection pools: two calls share a connection only when their credentials
 * are byte-for-byte the same, so a rotated secret never rides a connection
 * opened (or reused) for the old one. The key is per pool and random, so the
 * digest says nothing about the secret to anyone who reads a pool key.
 *
 * CredentialDigests remembers a digest by the credential's `source` (the
 * daemon's token for one vault generation's value, DaemonState.takeCredential),
 * so calls with the same value pay the HMAC once; a credential without a
 * source is digested every time. Only digests are kept, never the bytes.
 */
import { createHmac, randomBytes } from 'node:crypto';

export interface DigestibleCredential {
  readonly meta: { readonly kind: string };
  readonly secret: Readonly<Record<string, Uint8Array>>;
  /**
   * An object that stands for exactly these secret bytes: the same object is
   * only ever handed out with the same bytes (a new value, a new object).
   */
  readonly source?: object;
}

export function credentialDigest(credential: DigestibleCredential, keySecret: Uint8Array): string {
  const mac = createHmac('sha256', keySecret);
  const field = (bytes: Uint8Array): void => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    mac.update(length).update(bytes);
  };
  field(Buffer.from(credential.meta.kind));
  for (const [name, bytes] of Object.entries(credential.secret).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    field(Buffer.from(name));
    field(bytes);
  }
  return mac.digest('base64');
}

/** One pool's digests, under its own random key, remembered by source (weakly: a source no call holds is forgotten). */
export class CredentialDigests {
  readonly #keySecret = randomBytes(32);
  readonly #bySource = new WeakMap<object, string>();

  of(credential: DigestibleCredential): string {
    const source = credential.source;
    if (source === undefined) return credentialDigest(credential, this.#keySecret);
    const known = this.#bySource.get(source);
    if (known !== undefined) return known;
    const digest = credentialDigest(credential, this.#keySecret);
    this.#bySource.set(source, digest);
    return digest;
  }
}
