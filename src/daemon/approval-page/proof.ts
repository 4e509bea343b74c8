/**
 * How the approval page and its paired browsers prove themselves to each
 * other (docs/approval-page.md, "How the page and a device prove themselves").
 * The one home of the messages both sides sign; the page's script
 * (static/device.js) builds the same strings.
 *
 * - The daemon has a page identity key: an ECDSA P-256 key derived from the
 *   vault (HKDF over the catalog-mac key), so it is the same at every start and
 *   nobody without the passphrase can make it. A browser pins its public key
 *   at pairing. Each daemon run has a fresh random run id.
 * - Hello: before any request that uses the device, the script sends a random
 *   challenge (no credentials); the daemon signs (challenge, origin, run id)
 *   with the page key; the script checks it against the pinned key.
 * - A device's request: the browser's own key pair (WebCrypto, private key
 *   not extractable, in IndexedDB; the daemon keeps only the public key) signs
 *   (origin, run id, view token, device id, method, path, body digest,
 *   counter). The view token is issued only with a real navigation to the
 *   page; the counter is used once under its view.
 *
 * Invariants: signatures are IEEE P1363 (r‖s), as WebCrypto makes them; a
 * message never contains a newline from a field (every field is checked
 * against its shape before it is signed or verified); a counter is accepted
 * once per view within a sliding window of REPLAY_WINDOW below the highest
 * seen, and never below it; a view belongs to one device; view tokens are
 * bounded in number, and a forgotten one is refused.
 */
import { createECDH, createHash, createPrivateKey, createPublicKey, hkdfSync, randomBytes, sign, verify, type KeyObject } from 'node:crypto';

const HELLO_DOMAIN = 'postern approval-page hello v1';
const REQUEST_DOMAIN = 'postern approval-page request v1';
const PAIR_DOMAIN = 'postern approval-page pair v1';
/** A counter this far below the highest one seen is refused (the requests a page has in flight at once are far fewer). */
const REPLAY_WINDOW = 256;
const MAX_VIEWS = 1024;
const CODE_ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';

export const B64URL = /^[A-Za-z0-9_-]+$/;
const b64 = (b: Buffer): string => b.toString('base64url');

/** The page's identity: its signing key and the public key browsers pin (uncompressed point, base64url). */
export interface PageIdentity {
  readonly privateKey: KeyObject;
  readonly publicKey: string;
  /** A short code of the public key (shown at pairing, carried in the pairing link). */
  readonly keyCode: string;
}

/** A short, unambiguous code of some bytes: 8 characters as XXXX-XXXX (40 bits). */
function shortCode(bytes: Buffer): string {
  let out = '';
  for (let i = 0; out.length < 8; i++) out += CODE_ALPHABET[(bytes[i] ?? 0) % CODE_ALPHABET.length] ?? '';
  return `${out.slice(0, 4)}-${out.slice(4)}`;
}

/** The page key, derived from the vault's catalog-mac key (the same vault gives the same key; `postern passwd` a new one). */
export function pageIdentity(macKey: Uint8Array): PageIdentity {
  for (let i = 0; i < 16; i++) {
    const d = Buffer.from(hkdfSync('sha256', macKey, Buffer.alloc(0), `postern approval-page identity v1 ${i}`, 32));
    const ecdh = createECDH('prime256v1');
    try {
      ecdh.setPrivateKey(d);
    } catch {
      continue; // outside the curve's order (about 2^-32): the next one
    }
    const point = ecdh.getPublicKey();
    const jwk = { kty: 'EC', crv: 'P-256', d: b64(d), x: b64(point.subarray(1, 33)), y: b64(point.subarray(33, 65)) };
    const privateKey = createPrivateKey({ key: jwk, format: 'jwk' });
    return { privateKey, publicKey: b64(point), keyCode: shortCode(createHash('sha256').update(point).digest()) };
  }
  throw new Error('no page key could be derived');
}

/** A P-256 public key from its uncompressed point (base64url), or null when it is not one. */
export function devicePublicKey(raw: string): KeyObject | null {
  if (!B64URL.test(raw) || raw.length !== 87) return null;
  const point = Buffer.from(raw, 'base64url');
  if (point.length !== 65 || point[0] !== 4) return null;
  try {
    return createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: b64(point.subarray(1, 33)), y: b64(point.subarray(33, 65)) }, format: 'jwk' });
  } catch {
    return null;
  }
}

export function newRunId(): string {
  return b64(randomBytes(32));
}

/** The short code of a daemon run: the page key and the run id (the page shows it once the daemon proved itself). */
export function runFingerprint(identity: PageIdentity, run: string): string {
  return shortCode(createHash('sha256').update(`postern approval-page run v1\n${identity.publicKey}\n${run}`).digest());
}

export const helloMessage = (challenge: string, origin: string, run: string): string => `${HELLO_DOMAIN}\n${challenge}\n${origin}\n${run}`;

export function signHello(identity: PageIdentity, challenge: string, origin: string, run: string): string {
  return b64(sign('sha256', Buffer.from(helloMessage(challenge, origin, run)), { key: identity.privateKey, dsaEncoding: 'ieee-p1363' }));
}

interface RequestFields {
  readonly origin: string;
  readonly run: string;
  readonly view: string;
  readonly device: string;
  readonly method: string;
  readonly path: string;
  /** SHA-256 of the body, hex (of nothing for a GET). */
  readonly bodySha256: string;
  readonly counter: number;
}

export const requestMessage = (f: RequestFields): string =>
  [REQUEST_DOMAIN, f.origin, f.run, f.view, f.device, f.method, f.path, f.bodySha256, String(f.counter)].join('\n');

export const pairMessage = (code: string, origin: string, run: string, view: string, publicKey: string): string => [PAIR_DOMAIN, code, origin, run, view, publicKey].join('\n');

/** Whether `signature` (base64url, P1363) is `key`'s over `message`. */
export function verifies(key: KeyObject, message: string, signature: string): boolean {
  if (!B64URL.test(signature) || signature.length !== 86) return false;
  try {
    return verify('sha256', Buffer.from(message), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(signature, 'base64url'));
  } catch {
    return false;
  }
}

export const bodyDigest = (body: Buffer): string => createHash('sha256').update(body).digest('hex');

type ViewVerdict = 'ok' | 'unknown' | 'other-device' | 'used';

/**
 * The view tokens this run issued, one per real navigation to the page, and
 * the counters used under each: a view belongs to the first device that signs
 * with it, and each counter is good once (none REPLAY_WINDOW below the highest).
 * Past MAX_VIEWS the oldest view is forgotten, with its counters — and is
 * refused from then on, so forgetting never reopens a used counter.
 */
export class Views {
  readonly #issued = new Map<string, { device: string | null; high: number; used: Set<number> }>();

  issue(): string {
    const v = b64(randomBytes(24));
    this.#issued.set(v, { device: null, high: 0, used: new Set() });
    while (this.#issued.size > MAX_VIEWS) {
      const oldest = this.#issued.keys().next();
      if (oldest.done === true) break;
      this.#issued.delete(oldest.value);
    }
    return v;
  }

  has(v: string): boolean {
    return this.#issued.has(v);
  }

  /** Takes `counter` under `view` for `device`. */
  take(view: string, device: string, counter: number): ViewVerdict {
    const s = this.#issued.get(view);
    if (s === undefined) return 'unknown';
    if (s.device !== null && s.device !== device) return 'other-device';
    if (!Number.isSafeInteger(counter) || counter < 1 || counter <= s.high - REPLAY_WINDOW || s.used.has(counter)) return 'used';
    s.device = device;
    s.used.add(counter);
    if (counter > s.high) s.high = counter;
    for (const c of s.used) if (c <= s.high - REPLAY_WINDOW) s.used.delete(c);
    return 'ok';
  }
}
