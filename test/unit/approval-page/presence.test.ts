/**
 * Presence on the approval page, without a browser: the challenge binds the
 * card's digest, the daemon run and the decision nonce; the relying-party id
 * is `localhost` only; a catalog tool's presence resolves from its effect and
 * its `approval:` (the object form parsed, a dropped presence shown as
 * `approval_loosened` at accept); an assertion (made here by a software authenticator: a
 * P-256 key, authenticator data and client data as a browser sends them)
 * verifies only for its own challenge, origin and passkey, with user
 * verification and a growing counter; the page's desk refuses an approval at
 * an IP address (PRESENCE_UNAVAILABLE) or without an assertion
 * (PRESENCE_REQUIRED), keeps the counter, and a revoked device's passkeys are
 * gone.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { isoCBOR } from '@simplewebauthn/server/helpers';
import { toolApproval } from '../../../src/contracts/catalog/build-tools.js';
import { classifyCatalogChange } from '../../../src/contracts/index.js';
import { catalog, toolOf, tool } from '../contracts/helpers.js';
import { DeviceRegistry } from '../../../src/daemon/approval-page/devices.js';
import { PasskeyDesk, presenceChallenge, relyingPartyId, verifyPresence, type Assertion } from '../../../src/daemon/approval-page/presence.js';
import type { Passkey, PairedDevice } from '../../../src/home/approval-devices.js';
import { isPosternError } from '../../../src/rules/errors.js';
import { ManualClock } from '../../helpers/clock.js';

const ORIGIN = 'http://localhost:7470';
const sha256 = (b: Buffer | string): Buffer => createHash('sha256').update(b).digest();

/** A platform authenticator in software: what a browser hands the page after navigator.credentials.get(). */
class SoftPasskey {
  readonly id = randomBytes(16).toString('base64url');
  readonly #keys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  #counter = 0;

  passkey(): Passkey {
    const jwk = this.#keys.publicKey.export({ format: 'jwk' });
    const cose = new Map<number, number | Uint8Array>([[1, 2], [3, -7], [-1, 1], [-2, Buffer.from(jwk.x ?? '', 'base64url')], [-3, Buffer.from(jwk.y ?? '', 'base64url')]]);
    return { id: this.id, public_key: Buffer.from(isoCBOR.encode(cose)).toString('base64url'), counter: 0, added_at: '2026-03-01T10:00:00.000Z' };
  }

  assert(challenge: string, o: { origin?: string; rpId?: string; uv?: boolean; counter?: number } = {}): Assertion {
    const clientData = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge, origin: o.origin ?? ORIGIN, crossOrigin: false }));
    const counter = Buffer.alloc(4);
    counter.writeUInt32BE(o.counter ?? ++this.#counter);
    const authData = Buffer.concat([sha256(o.rpId ?? 'localhost'), Buffer.from([0x01 | (o.uv === false ? 0 : 0x04)]), counter]);
    const signature = sign('sha256', Buffer.concat([authData, sha256(clientData)]), this.#keys.privateKey);
    const b = (x: Buffer): string => x.toString('base64url');
    return { id: this.id, rawId: this.id, type: 'public-key', response: { clientDataJSON: b(clientData), authenticatorData: b(authData), signature: b(signature) }, clientExtensionResults: {} };
  }
}

async function refused(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => isPosternError(e) && e.code === code);
}

describe('presence: the challenge and the relying party', () => {
  it('binds the call digest, the daemon run and the decision nonce', () => {
    const c = presenceChallenge('d1', 'run1', 'n1');
    assert.match(c, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(presenceChallenge('d1', 'run1', 'n1'), c, 'the same card, run and nonce: the same challenge');
    for (const other of [presenceChallenge('d2', 'run1', 'n1'), presenceChallenge('d1', 'run2', 'n1'), presenceChallenge('d1', 'run1', 'n2')]) assert.notEqual(other, c);
  });

  for (const [host, rp] of [['localhost:7470', 'localhost'], ['LOCALHOST:1', 'localhost'], ['127.0.0.1:7470', null], ['192.168.1.20:7470', null]] as const) {
    it(`the page at ${host}: relying party ${rp ?? 'none (an IP address is not one)'}`, () => assert.equal(relyingPartyId(host), rp));
  }
});

describe('presence: a catalog tool\'s approval resolved', () => {
  const rows = [
    ['per-call', 'destructive', 'required'],
    ['session', 'destructive', 'required'],
    ['none', 'destructive', 'none'],
    ['per-call', 'write', 'none'],
    [{ mode: 'per-call', presence: 'none' }, 'destructive', 'none'],
    [{ mode: 'session', presence: 'required' }, 'read', 'required'],
    [{ mode: 'per-call' }, 'destructive', 'required'],
  ] as const;
  for (const [given, effect, presence] of rows) {
    it(`approval ${JSON.stringify(given)}, effect ${effect} → presence ${presence}`, () => {
      assert.deepEqual(toolApproval(given, effect), { approval: typeof given === 'string' ? given : given.mode, presence });
    });
  }
});

describe('presence in the catalog', () => {
  const revisions = [{ revision: 1, input: { type: 'object', properties: {} }, http: { target: 'api', method: 'DELETE', path: '/x' } }];
  const withApproval = (approval: unknown) => catalog({ wipe: tool(revisions, { effect: 'destructive', approval }) });

  it('parses the mode string and the object form; a destructive tool needs presence unless it says `presence: none`', () => {
    assert.deepEqual([toolOf(withApproval('per-call'), 'wipe').presence, toolOf(withApproval('per-call'), 'wipe').approval], ['required', 'per-call']);
    assert.deepEqual([toolOf(withApproval({ mode: 'session', presence: 'none' }), 'wipe').presence, toolOf(withApproval({ mode: 'session', presence: 'none' }), 'wipe').approval], ['none', 'session']);
  });

  it('refuses an unknown presence or a missing mode', () => {
    assert.throws(() => withApproval({ mode: 'per-call', presence: 'sometimes' }), (e: unknown) => isPosternError(e) && e.code === 'CATALOG_INVALID');
    assert.throws(() => withApproval({ presence: 'required' }), (e: unknown) => isPosternError(e) && e.code === 'CATALOG_INVALID');
  });

  it('dropping presence is shown as less oversight at accept; requiring it as more', () => {
    const reasons = (a: unknown, b: unknown) => classifyCatalogChange(withApproval(a), withApproval(b)).flatMap((c) => c.reasons);
    assert.deepEqual(reasons('per-call', { mode: 'per-call', presence: 'none' }), [{ code: 'approval_loosened', text: 'presence on the approval page required → none (less oversight)' }]);
    assert.deepEqual(reasons({ mode: 'per-call', presence: 'none' }, 'per-call'), [{ code: 'approval_tightened', text: 'presence on the approval page none → required' }]);
    assert.deepEqual(reasons('per-call', { mode: 'per-call', presence: 'required' }), [], 'the default said explicitly is no change');
  });
});

describe('presence: an assertion verified', () => {
  const challenge = presenceChallenge('digest', 'run', 'nonce');

  it('verifies for its own challenge, origin and passkey: the credential, user present and verified, the new counter', async () => {
    const k = new SoftPasskey();
    const v = await verifyPresence(k.assert(challenge), [k.passkey()], challenge, ORIGIN, 'localhost');
    assert.deepEqual(v, { proof: { credential: k.id, user_present: true, user_verified: true }, counter: 1 });
  });

  it('refuses one made for another card, run or nonce, on another origin or relying party, without user verification, or from an unknown passkey', async () => {
    const k = new SoftPasskey();
    const keys = [k.passkey()];
    await refused(verifyPresence(k.assert(presenceChallenge('other', 'run', 'nonce')), keys, challenge, ORIGIN, 'localhost'), 'PRESENCE_INVALID');
    await refused(verifyPresence(k.assert(presenceChallenge('digest', 'run', 'used-nonce')), keys, challenge, ORIGIN, 'localhost'), 'PRESENCE_INVALID');
    await refused(verifyPresence(k.assert(challenge, { origin: 'http://127.0.0.1:7470' }), keys, challenge, ORIGIN, 'localhost'), 'PRESENCE_INVALID');
    await refused(verifyPresence(k.assert(challenge, { rpId: 'evil.example' }), keys, challenge, ORIGIN, 'localhost'), 'PRESENCE_INVALID');
    await refused(verifyPresence(k.assert(challenge, { uv: false }), keys, challenge, ORIGIN, 'localhost'), 'PRESENCE_INVALID');
    await refused(verifyPresence(new SoftPasskey().assert(challenge), keys, challenge, ORIGIN, 'localhost'), 'PRESENCE_INVALID');
  });

  it('refuses a counter that does not grow (an assertion sent again, or a cloned authenticator)', async () => {
    const k = new SoftPasskey();
    const a = k.assert(challenge, { counter: 5 });
    const v = await verifyPresence(a, [k.passkey()], challenge, ORIGIN, 'localhost');
    await refused(verifyPresence(a, [{ ...k.passkey(), counter: v.counter }], challenge, ORIGIN, 'localhost'), 'PRESENCE_INVALID');
  });
});

describe('presence: the page\'s desk and the device file', () => {
  const device: PairedDevice = { id: '0123456789abcdef', name: 'laptop', public_key: 'A'.repeat(87), paired_at: '2026-03-01T10:00:00.000Z', revoked_at: null };
  const make = (): { desk: PasskeyDesk; devices: DeviceRegistry; saved: () => readonly PairedDevice[]; journal: Record<string, unknown>[] } => {
    const clock = new ManualClock('2026-03-01T10:00:00.000Z');
    let saved: readonly PairedDevice[] = [];
    const devices = new DeviceRegistry({ devices: [device], sequence: 1, clock, save: (d) => Promise.resolve(void (saved = d)) });
    const journal: Record<string, unknown>[] = [];
    return { desk: new PasskeyDesk(devices, clock, (d) => journal.push(d)), devices, saved: () => saved, journal };
  };
  const local = { host: 'localhost:7470', origin: ORIGIN };
  const challenge = presenceChallenge('digest', 'run', 'nonce');

  it('at an IP address: PRESENCE_UNAVAILABLE, whether or not an assertion comes; the state says why', async () => {
    const { desk, devices } = make();
    const k = new SoftPasskey();
    await devices.addPasskey(device.id, k.passkey());
    const ip = { host: '127.0.0.1:7470', origin: 'http://127.0.0.1:7470' };
    await refused(desk.approve(ip, device.id, challenge, undefined), 'PRESENCE_UNAVAILABLE');
    await refused(desk.approve(ip, device.id, challenge, k.assert(challenge, { origin: ip.origin })), 'PRESENCE_UNAVAILABLE');
    await refused(desk.options(ip, device), 'PRESENCE_UNAVAILABLE');
    const s = desk.status(ip, device.id);
    assert.equal(s.available, false);
    assert.match(s.why ?? '', /localhost/);
  });

  it('without an assertion: PRESENCE_REQUIRED; with one, the proof, and the counter is saved before the approval is given', async () => {
    const { desk, devices, saved } = make();
    const k = new SoftPasskey();
    await devices.addPasskey(device.id, k.passkey());
    await refused(desk.approve(local, device.id, challenge, undefined), 'PRESENCE_REQUIRED');
    assert.deepEqual(await desk.approve(local, device.id, challenge, k.assert(challenge)), { credential: k.id, user_present: true, user_verified: true });
    assert.equal(saved()[0]?.passkeys?.[0]?.counter, 1);
    assert.deepEqual(desk.status(local, device.id), { available: true, why: null, passkeys: [{ id: k.id, added_at: '2026-03-01T10:00:00.000Z' }] });
  });

  it('a registration answered without one being opened is PRESENCE_INVALID; the options open one for this device', async () => {
    const { desk } = make();
    await refused(desk.register(local, device.id, { response: { id: 'x', rawId: 'x', type: 'public-key', response: { clientDataJSON: 'x', attestationObject: 'x' }, clientExtensionResults: {} } }), 'PRESENCE_INVALID');
    const o = (await desk.options(local, device)) as { rp: { id: string }; challenge: string; authenticatorSelection: { userVerification: string; authenticatorAttachment: string } };
    assert.deepEqual([o.rp.id, o.authenticatorSelection.userVerification, o.authenticatorSelection.authenticatorAttachment], ['localhost', 'required', 'platform']);
    assert.match(o.challenge, /^[A-Za-z0-9_-]+$/);
  });

  it('a revoked device\'s passkeys go with it: saved without them, and its assertions verify no more', async () => {
    const { desk, devices, saved } = make();
    const k = new SoftPasskey();
    await devices.addPasskey(device.id, k.passkey());
    await devices.revoke(device.id);
    assert.equal(saved()[0]?.passkeys, undefined);
    assert.deepEqual(devices.passkeys(device.id), []);
    await refused(desk.approve(local, device.id, challenge, k.assert(challenge)), 'PRESENCE_INVALID');
  });
});
