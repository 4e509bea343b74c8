/**
 * Pairing and the paired devices, in the daemon. `postern approvals pair`
 * (an operator connection: proof of the passphrase) opens a one-time code;
 * the device that brings it back first gets its own id and a key in two
 * random 256-bit halves: one in an HttpOnly cookie, one in the page's own
 * storage, sent as a header. The daemon keeps only a SHA-256 of both in the
 * MAC'd device file (src/home/approval-devices.ts). Two halves because a
 * browser sends a cookie for 127.0.0.1 to every port of 127.0.0.1 — to a
 * server an agent runs there, too — while the page's storage belongs to its
 * own origin (scheme, host and port) and the cookie stays out of reach of
 * any script. A revoked device is refused from its next request on.
 *
 * Invariants: a code is single-use, expires after PAIRING_TTL_MS (monotonic),
 * and all open codes are voided after MAX_WRONG_CODES wrong attempts (a guess
 * cannot outlast them); secrets and codes are compared as SHA-256 digests in
 * constant time; the file is saved before a pairing or a revocation is
 * answered, and a save that fails leaves the registry as it was.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../clock/index.js';
import type { PairedDevice } from '../../home/approval-devices.js';
import { MAX_DEVICES } from '../../home/approval-devices.js';
import { PosternError } from '../../rules/errors.js';

export const PAIRING_TTL_MS = 5 * 60_000;
export const MAX_WRONG_CODES = 10;
/** The cookie that carries `<device id>.<first half>`. */
export const DEVICE_COOKIE = 'postern_device';
/** The header that carries the second half (kept by the page in its origin's storage). */
export const DEVICE_HEADER = 'x-postern-device';
/** Unambiguous characters (no 0/O, 1/I/L): a code is read off a screen and typed. */
const CODE_ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';
const CODE_LENGTH = 10;

const sha256 = (s: string): Buffer => createHash('sha256').update(s).digest();
const sameDigest = (a: Buffer, b: Buffer): boolean => a.length === b.length && timingSafeEqual(a, b);

function newCode(): string {
  const bytes = randomBytes(CODE_LENGTH * 2);
  let code = '';
  for (let i = 0; code.length < CODE_LENGTH && i < bytes.length; i++) {
    const b = bytes[i] ?? 0;
    if (b < 248) code += CODE_ALPHABET[b % CODE_ALPHABET.length] ?? '';
  }
  return code.length === CODE_LENGTH ? code : newCode();
}

export interface OpenPairing {
  readonly code: string;
  readonly name: string;
  readonly expires_at: string;
}

export interface DeviceRegistryParts {
  readonly devices: readonly PairedDevice[];
  readonly clock: Clock;
  /** The sequence of the last save (0: never saved). */
  readonly sequence: number;
  /** Saves the whole list (MAC'd) as `sequence`; throws when it cannot. */
  readonly save: (devices: readonly PairedDevice[], sequence: number) => Promise<void>;
}

export class DeviceRegistry {
  #devices: PairedDevice[];
  #sequence: number;
  readonly #codes = new Map<string, { digest: Buffer; name: string; openedAt: number }>();
  #wrong = 0;
  readonly #clock: Clock;
  readonly #save: DeviceRegistryParts['save'];

  constructor(p: DeviceRegistryParts) {
    this.#devices = [...p.devices];
    this.#sequence = p.sequence;
    this.#clock = p.clock;
    this.#save = p.save;
  }

  list(): readonly PairedDevice[] {
    return this.#devices;
  }

  /** The sequence of the last save, for the journal. */
  get sequence(): number {
    return this.#sequence;
  }

  /** Opens a one-time pairing code for a device to be called `name`. */
  openPairing(name: string): OpenPairing {
    this.#expire();
    if (this.#codes.size >= 4) throw new PosternError('PAIRING_REFUSED', 'four pairing codes are already open: use one, or wait until they expire');
    const code = newCode();
    const openedAt = this.#clock.monotonicMs();
    this.#codes.set(code, { digest: sha256(code), name, openedAt });
    return { code, name, expires_at: new Date(this.#clock.now().getTime() + PAIRING_TTL_MS).toISOString() };
  }

  /** Redeems a code once: a new device, the cookie's value and the header's, or PAIRING_REFUSED. */
  async redeem(given: string): Promise<{ device: PairedDevice; cookie: string; header: string }> {
    this.#expire();
    const digest = sha256(given.trim().toUpperCase().replace(/[\s-]/g, ''));
    let found: string | undefined;
    for (const [code, c] of this.#codes) if (sameDigest(c.digest, digest)) found = code;
    const open = found === undefined ? undefined : this.#codes.get(found);
    if (found === undefined || open === undefined) {
      if (++this.#wrong >= MAX_WRONG_CODES) {
        this.#codes.clear();
        this.#wrong = 0;
      }
      throw new PosternError('PAIRING_REFUSED', 'that pairing code is wrong, used or expired: run `postern approvals pair` for a new one');
    }
    this.#codes.delete(found);
    if (this.#devices.length >= MAX_DEVICES) throw new PosternError('PAIRING_REFUSED', `${MAX_DEVICES} devices are recorded: remove revoked ones first`);
    const cookieHalf = randomBytes(32).toString('base64url');
    const headerHalf = randomBytes(32).toString('base64url');
    const device: PairedDevice = { id: randomBytes(8).toString('hex'), name: open.name, secret_sha256: sha256(`${cookieHalf}.${headerHalf}`).toString('hex'), paired_at: this.#clock.now().toISOString(), revoked_at: null };
    const next = [...this.#devices, device];
    await this.#save(next, this.#sequence + 1);
    this.#devices = next;
    this.#sequence++;
    return { device, cookie: `${device.id}.${cookieHalf}`, header: headerHalf };
  }

  /** The live device a cookie and a header prove together, or null (either missing or malformed, unknown, wrong, revoked). */
  authenticate(cookie: string | undefined, header: string | undefined): PairedDevice | null {
    const m = cookie === undefined ? null : /^([0-9a-f]{16})\.([A-Za-z0-9_-]{43})$/.exec(cookie);
    if (m === null || header === undefined || !/^[A-Za-z0-9_-]{43}$/.test(header)) return null;
    const d = this.#devices.find((x) => x.id === m[1]);
    if (d === undefined || d.revoked_at !== null) return null;
    return sameDigest(Buffer.from(d.secret_sha256, 'hex'), sha256(`${m[2] ?? ''}.${header}`)) ? d : null;
  }

  /** Revokes a device by id (or unique prefix); refused at once from then on. */
  async revoke(given: string): Promise<PairedDevice> {
    const matches = this.#devices.filter((d) => d.id === given || (given.length >= 4 && d.id.startsWith(given)));
    const d = matches.length === 1 ? matches[0] : undefined;
    if (d === undefined) throw new PosternError('DEVICE_NOT_FOUND', matches.length === 0 ? `no paired device ${given.slice(0, 32)}: see \`postern approvals devices\`` : `${matches.length} devices start with ${given.slice(0, 32)}: give more of the id`);
    if (d.revoked_at !== null) return d;
    const revoked: PairedDevice = { ...d, revoked_at: this.#clock.now().toISOString() };
    const next = this.#devices.map((x) => (x.id === d.id ? revoked : x));
    await this.#save(next, this.#sequence + 1);
    this.#devices = next;
    this.#sequence++;
    return revoked;
  }

  #expire(): void {
    const now = this.#clock.monotonicMs();
    for (const [code, c] of this.#codes) if (now - c.openedAt > PAIRING_TTL_MS) this.#codes.delete(code);
  }
}
