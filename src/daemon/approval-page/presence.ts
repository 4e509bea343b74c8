/**
 * Presence on the approval page: a passkey (WebAuthn, a platform
 * authenticator, user verification required) that a tool marked
 * `approval.presence: required` in the catalog needs for every approval given
 * on the page. Registration and assertion are verified with
 * @simplewebauthn/server (no CBOR or COSE of our own); the page's script uses
 * the browser's navigator.credentials API (static/presence.js).
 *
 * Invariants: the challenge of an approval is SHA-256 over a domain string,
 * the card's call digest, the daemon run id and the decision nonce the page
 * was given with the card — so an assertion made for another card, in another
 * run, or for a decision already sent (the nonce is consumed by its first
 * use) verifies for nothing else (PRESENCE_INVALID); the assertion must come
 * from a passkey of the device that signed the request, on the page's own
 * origin and relying-party id, with user presence and user verification; a
 * credential's signature counter only grows. A WebAuthn relying-party id is a
 * name, never an IP address: presence is available only when the page is
 * opened as `localhost` (PRESENCE_UNAVAILABLE elsewhere).
 */
import { createHash } from 'node:crypto';
import type { Clock } from '../../clock/index.js';
import { z } from 'zod';
import type { Passkey } from '../../home/approval-devices.js';
import type { PresenceProof } from '../../protocol/approvals.js';
import { PosternError } from '../../rules/errors.js';
import type { DeviceRegistry } from './devices.js';
import { B64URL } from './proof.js';
import { webauthn } from '../../libraries.js';

const PRESENCE_DOMAIN = 'postern approval-page presence v1';
/** How long a registration challenge may wait for the browser's answer. */
const REGISTRATION_TTL_MS = 5 * 60_000;

const b64 = (max: number) => z.string().min(1).max(max).regex(B64URL);

/** What the page sends as an assertion (the browser's PublicKeyCredential, base64url-encoded). */
export const AssertionSchema = z.object({
  id: b64(1400),
  rawId: b64(1400),
  type: z.literal('public-key'),
  response: z.object({ clientDataJSON: b64(4000), authenticatorData: b64(4000), signature: b64(1000), userHandle: b64(200).optional() }).strict(),
  clientExtensionResults: z.object({}).passthrough(),
  authenticatorAttachment: z.enum(['platform', 'cross-platform']).optional(),
}).strict();
export type Assertion = z.infer<typeof AssertionSchema>;

/** What the page sends to register a passkey (the browser's PublicKeyCredential from create()). */
const AttestationSchema = z.object({
  id: b64(1400),
  rawId: b64(1400),
  type: z.literal('public-key'),
  response: z.object({ clientDataJSON: b64(4000), attestationObject: b64(8000), transports: z.array(z.string().max(32)).max(8).optional() }).strict(),
  clientExtensionResults: z.object({}).passthrough(),
  authenticatorAttachment: z.enum(['platform', 'cross-platform']).optional(),
}).strict();
type Attestation = z.infer<typeof AttestationSchema>;

/** The challenge an approval's assertion signs: it binds the card's call digest, the daemon run and the decision nonce (base64url). */
export function presenceChallenge(callDigest: string, run: string, nonce: string): string {
  return createHash('sha256').update([PRESENCE_DOMAIN, callDigest, run, nonce].join('\n')).digest('base64url');
}

/** The relying-party id for a page opened on `host` (the Host header): `localhost` only — an IP address is not a valid one. */
export function relyingPartyId(host: string): string | null {
  return host.toLowerCase().replace(/:\d+$/, '') === 'localhost' ? 'localhost' : null;
}

/** Why presence cannot be given on a page opened at `host`, or null when it can. */
function presenceUnavailable(host: string): string | null {
  if (relyingPartyId(host) !== null) return null;
  return 'passkeys need the page opened as http://localhost:PORT (an IP address is not a valid WebAuthn relying-party id): open it there, or approve in the TUI';
}

/** The options the page hands to navigator.credentials.create(): a platform authenticator, user verification required. */
async function registrationOptions(rpId: string, device: { id: string; name: string }, existing: readonly Passkey[]): Promise<unknown> {
  const { generateRegistrationOptions } = await webauthn();
  return generateRegistrationOptions({
    rpName: 'Postern approval page',
    rpID: rpId,
    userName: `device ${device.name}`,
    userID: Buffer.from(device.id, 'hex'),
    attestationType: 'none',
    excludeCredentials: existing.map((k) => ({ id: k.id })),
    authenticatorSelection: { authenticatorAttachment: 'platform', residentKey: 'preferred', userVerification: 'required' },
    timeout: REGISTRATION_TTL_MS,
  });
}

const invalid = (why: string): PosternError => new PosternError('PRESENCE_INVALID', `${why}: nothing was approved`);

/** A new passkey from the browser's answer to `challenge`, or PRESENCE_INVALID. */
async function verifyRegistration(a: Attestation, challenge: string, origin: string, rpId: string, at: Date): Promise<Passkey> {
  const { verifyRegistrationResponse } = await webauthn();
  let r;
  try {
    r = await verifyRegistrationResponse({ response: a, expectedChallenge: challenge, expectedOrigin: origin, expectedRPID: rpId, requireUserVerification: true });
  } catch (e) {
    throw invalid(`the passkey could not be registered (${e instanceof Error ? e.message.slice(0, 160) : 'not verified'})`);
  }
  if (!r.verified) throw invalid('the passkey could not be registered');
  const c = r.registrationInfo.credential;
  return { id: c.id, public_key: Buffer.from(c.publicKey).toString('base64url'), counter: c.counter, added_at: at.toISOString() };
}

interface PresenceVerdict {
  readonly proof: PresenceProof;
  /** The credential's counter after this assertion (to be kept). */
  readonly counter: number;
}

/** Verifies an approval's assertion against the device's passkeys and the challenge of this card, run and nonce; or PRESENCE_INVALID. */
export async function verifyPresence(a: Assertion, passkeys: readonly Passkey[], challenge: string, origin: string, rpId: string): Promise<PresenceVerdict> {
  const key = passkeys.find((k) => k.id === a.id);
  if (key === undefined) throw invalid('the assertion is not from a passkey of this device');
  const { verifyAuthenticationResponse } = await webauthn();
  let r;
  try {
    r = await verifyAuthenticationResponse({
      response: a,
      expectedChallenge: challenge,
      expectedOrigin: origin,
      expectedRPID: rpId,
      credential: { id: key.id, publicKey: Buffer.from(key.public_key, 'base64url'), counter: key.counter },
      requireUserVerification: true,
    });
  } catch (e) {
    throw invalid(`the assertion does not verify for this card, run and decision (${e instanceof Error ? e.message.slice(0, 160) : 'not verified'})`);
  }
  if (!r.verified) throw invalid('the assertion does not verify for this card, run and decision');
  // verifyAuthenticationResponse refuses an assertion without user presence; user verification was required.
  return { proof: { credential: key.id, user_present: true, user_verified: r.authenticationInfo.userVerified }, counter: r.authenticationInfo.newCounter };
}

/** Where a request reached the page: the Host it addressed and the origin made of it. */
export interface PageAt {
  readonly host: string;
  readonly origin: string;
}

const unavailable = (at: PageAt): string => {
  const rpId = relyingPartyId(at.host);
  if (rpId === null) throw new PosternError('PRESENCE_UNAVAILABLE', presenceUnavailable(at.host) ?? 'passkeys are not available here');
  return rpId;
};

/**
 * The page's passkey desk: registration (a challenge per device, used once,
 * for REGISTRATION_TTL_MS) and the check of an approval's presence (the
 * assertion verified, the counter kept before the approval is given).
 */
export class PasskeyDesk {
  readonly #registering = new Map<string, { challenge: string; at: number }>();
  readonly #devices: DeviceRegistry;
  readonly #clock: Clock;
  readonly #journal: (data: Record<string, unknown>) => void;

  constructor(devices: DeviceRegistry, clock: Clock, journal: (data: Record<string, unknown>) => void) {
    this.#devices = devices;
    this.#clock = clock;
    this.#journal = journal;
  }

  /** What the page says about presence for this device at this address. */
  status(at: PageAt, device: string): { readonly available: boolean; readonly why: string | null; readonly passkeys: readonly { readonly id: string; readonly added_at: string }[] } {
    const why = presenceUnavailable(at.host);
    return { available: why === null, why, passkeys: this.#devices.passkeys(device).map((k) => ({ id: k.id, added_at: k.added_at })) };
  }

  /** Opens a registration for the device: the options for navigator.credentials.create(). */
  async options(at: PageAt, device: { id: string; name: string }): Promise<unknown> {
    const rpId = unavailable(at);
    const options = (await registrationOptions(rpId, device, this.#devices.passkeys(device.id))) as { challenge: string };
    this.#registering.set(device.id, { challenge: options.challenge, at: this.#clock.monotonicMs() });
    return options;
  }

  /** Registers the passkey the browser made for the open registration of this device (saved and journaled). */
  async register(at: PageAt, device: string, body: unknown): Promise<{ id: string; added_at: string }> {
    const rpId = unavailable(at);
    const r = z.strictObject({ response: AttestationSchema }).safeParse(body);
    if (!r.success) throw new PosternError('USAGE', 'the registration is not {response: PublicKeyCredential}');
    const open = this.#registering.get(device);
    this.#registering.delete(device);
    if (open === undefined || this.#clock.monotonicMs() - open.at > REGISTRATION_TTL_MS) throw invalid('no passkey registration is open for this device (or it expired): press "Add a passkey" again');
    const key = await verifyRegistration(r.data.response, open.challenge, at.origin, rpId, this.#clock.now());
    await this.#devices.addPasskey(device, key);
    this.#journal({ device, credential: key.id, sequence: this.#devices.sequence });
    return { id: key.id, added_at: key.added_at };
  }

  /** The presence an approval of a card that needs it carries: verified for this card, run and nonce; or PRESENCE_UNAVAILABLE / PRESENCE_REQUIRED / PRESENCE_INVALID. */
  async approve(at: PageAt, device: string, challenge: string, assertion: Assertion | undefined): Promise<PresenceProof> {
    const rpId = unavailable(at);
    if (assertion === undefined) throw new PosternError('PRESENCE_REQUIRED', 'this tool needs presence: approve with a passkey of this device (or in the TUI); nothing was approved');
    const v = await verifyPresence(assertion, this.#devices.passkeys(device), challenge, at.origin, rpId);
    await this.#devices.passkeyUsed(device, v.proof.credential, v.counter);
    return v.proof;
  }
}
