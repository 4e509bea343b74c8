/**
 * A keyed digest of a credential's kind and secret parts, for the executors'
 * connection pools: two calls share a connection only when their credentials
 * are byte-for-byte the same, so a rotated secret never rides a connection
 * opened (or reused) for the old one. The key is per pool and random, so the
 * digest says nothing about the secret to anyone who reads a pool key.
 */
import { createHmac } from 'node:crypto';

export interface DigestibleCredential {
  readonly meta: { readonly kind: string };
  readonly secret: Readonly<Record<string, Uint8Array>>;
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
