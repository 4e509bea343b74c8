/**
 * Pairing and the paired devices, in the daemon. `postern approvals pair`
 * (an operator connection: proof of the passphrase) opens a one-time code;
 * the browser that brings it back first, with the public half of a key pair
 * it made itself (WebCrypto, the private half not extractable and never sent),
 * becomes a device with its own id. The daemon keeps only that public key in
 * the MAC'd device file (src/home/approval-devices.ts); a device proves each
 * request by a signature (proof.ts), so nothing the browser sends is a bearer
 * secret that a server holding the page's port could keep and use. A revoked
 * device is refused from its next request on.
 *
 * Invariants: a code is single-use, expires after PAIRING_TTL_MS (monotonic),
 * and all open codes are voided after MAX_WRONG_CODES wrong attempts (a guess
 * cannot outlast them); codes are compared as SHA-256 digests in constant
 * time; a public key must be a P-256 point, and one already paired is refused;
 * the file is saved before a pairing or a revocation is answered, and a save
 * that fails leaves the registry as it was.
 */
import { createHash, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { Clock } from '../../clock/index.js';
import type { PairedDevice } from '../../home/approval-devices.js';
import { MAX_DEVICES, MAX_PASSKEYS, type Passkey } from '../../home/approval-devices.js';
import { PosternError } from '../../rules/errors.js';
import { devicePublicKey } from './proof.js';

export const PAIRING_TTL_MS = 5 * 60_000;
const MAX_WRONG_CODES = 10;
/** The header that names the device of a request (its proof is a signature: proof.ts). */
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

interface OpenPairing {
  readonly code: string;
  readonly name: string;
  readonly expires_at: string;
}

interface DeviceRegistryParts {
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
  readonly #keys = new Map<string, KeyObject>();
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

  /** Redeems a code once for the browser whose public key is `publicKey`: a new device, or PAIRING_REFUSED. */
  async redeem(given: string, publicKey: string): Promise<PairedDevice> {
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
    if (devicePublicKey(publicKey) === null) throw new PosternError('PAIRING_REFUSED', 'the browser sent no valid device key: reload the page and pair again');
    if (this.#devices.some((d) => d.public_key === publicKey)) throw new PosternError('PAIRING_REFUSED', 'that device key is already paired');
    this.#codes.delete(found);
    if (this.#devices.length >= MAX_DEVICES) throw new PosternError('PAIRING_REFUSED', `${MAX_DEVICES} devices are recorded: remove revoked ones first`);
    const device: PairedDevice = { id: randomBytes(8).toString('hex'), name: open.name, public_key: publicKey, paired_at: this.#clock.now().toISOString(), revoked_at: null };
    const next = [...this.#devices, device];
    await this.#save(next, this.#sequence + 1);
    this.#devices = next;
    this.#sequence++;
    return device;
  }

  /** A live device and its public key by id, or null (malformed, unknown, revoked). */
  live(id: string | undefined): { device: PairedDevice; key: KeyObject } | null {
    if (id === undefined || !/^[0-9a-f]{16}$/.test(id)) return null;
    const d = this.#devices.find((x) => x.id === id);
    if (d === undefined || d.revoked_at !== null) return null;
    let key = this.#keys.get(d.public_key);
    if (key === undefined) {
      key = devicePublicKey(d.public_key) ?? undefined;
      if (key === undefined) return null;
      this.#keys.set(d.public_key, key);
    }
    return { device: d, key };
  }

  /** Revokes a device by id (or unique prefix); refused at once from then on. */
  async revoke(given: string): Promise<PairedDevice> {
    const matches = this.#devices.filter((d) => d.id === given || (given.length >= 4 && d.id.startsWith(given)));
    const d = matches.length === 1 ? matches[0] : undefined;
    if (d === undefined) throw new PosternError('DEVICE_NOT_FOUND', matches.length === 0 ? `no paired device ${given.slice(0, 32)}: see \`postern approvals devices\`` : `${matches.length} devices start with ${given.slice(0, 32)}: give more of the id`);
    if (d.revoked_at !== null) return d;
    // Its passkeys go with it: a revoked device proves nothing any more.
    const { passkeys: _gone, ...kept } = d;
    const revoked: PairedDevice = { ...kept, revoked_at: this.#clock.now().toISOString() };
    await this.#replace(revoked);
    return revoked;
  }

  /** The passkeys of a device (none for an unknown or revoked one). */
  passkeys(id: string): readonly Passkey[] {
    const d = this.#devices.find((x) => x.id === id);
    return d === undefined || d.revoked_at !== null ? [] : (d.passkeys ?? []);
  }

  /** Adds a passkey to a live device (saved before it counts). */
  async addPasskey(id: string, key: Passkey): Promise<void> {
    const d = this.#devices.find((x) => x.id === id && x.revoked_at === null);
    if (d === undefined) throw new PosternError('DEVICE_UNPAIRED', 'this device is not paired (or it was revoked)');
    const keys = d.passkeys ?? [];
    if (keys.some((k) => k.id === key.id)) throw new PosternError('PRESENCE_INVALID', 'that passkey is already registered for this device');
    if (keys.length >= MAX_PASSKEYS) throw new PosternError('PRESENCE_INVALID', `${MAX_PASSKEYS} passkeys are registered for this device`);
    await this.#replace({ ...d, passkeys: [...keys, key] });
  }

  /** Keeps a passkey's new signature counter (saved before the approval it proved is given). */
  async passkeyUsed(id: string, credential: string, counter: number): Promise<void> {
    const d = this.#devices.find((x) => x.id === id && x.revoked_at === null);
    const keys = d?.passkeys ?? [];
    if (d === undefined || !keys.some((k) => k.id === credential && k.counter !== counter)) return;
    await this.#replace({ ...d, passkeys: keys.map((k) => (k.id === credential ? { ...k, counter } : k)) });
  }

  /** Saves the list with `d` in place of the device of its id, then holds it (a failed save changes nothing). */
  async #replace(d: PairedDevice): Promise<void> {
    const next = this.#devices.map((x) => (x.id === d.id ? d : x));
    await this.#save(next, this.#sequence + 1);
    this.#devices = next;
    this.#sequence++;
  }

  #expire(): void {
    const now = this.#clock.monotonicMs();
    for (const [code, c] of this.#codes) if (now - c.openedAt > PAIRING_TTL_MS) this.#codes.delete(code);
  }
}
