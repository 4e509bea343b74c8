// Passkeys on the approval page (the daemon's side is src/daemon/approval-page/presence.ts): a passkey
// registered for this device, and the assertion an approval of a tool that needs presence carries, made
// with the browser's own navigator.credentials API (a platform authenticator, user verification
// required). The challenge comes from the daemon (it binds the card, the daemon run and the decision
// nonce); the daemon verifies everything. Only on http://localhost:PORT: an IP address is not a valid
// relying-party id.
import { b64u, fromB64u } from './device.js';

export const supported = () => typeof window.PublicKeyCredential === 'function' && navigator.credentials !== undefined;

function credentialJSON(c, response) {
  const out = { id: c.id, rawId: b64u(c.rawId), type: c.type, response, clientExtensionResults: c.getClientExtensionResults() };
  if (c.authenticatorAttachment === 'platform' || c.authenticatorAttachment === 'cross-platform') out.authenticatorAttachment = c.authenticatorAttachment;
  return out;
}

/** Makes a passkey with the daemon's registration options; the browser's answer, encoded for the daemon. */
export async function createPasskey(o) {
  const c = await navigator.credentials.create({
    publicKey: { ...o, challenge: fromB64u(o.challenge), user: { ...o.user, id: fromB64u(o.user.id) }, excludeCredentials: (o.excludeCredentials || []).map((x) => ({ type: 'public-key', id: fromB64u(x.id) })) },
  });
  const r = c.response;
  const response = { clientDataJSON: b64u(r.clientDataJSON), attestationObject: b64u(r.attestationObject) };
  if (typeof r.getTransports === 'function') response.transports = r.getTransports();
  return credentialJSON(c, response);
}

/** Asks this device's passkey to sign `challenge` (user verification required); the assertion, encoded for the daemon. */
export async function assertPresence(challenge, passkeys) {
  const c = await navigator.credentials.get({
    publicKey: { challenge: fromB64u(challenge), rpId: location.hostname, allowCredentials: passkeys.map((k) => ({ type: 'public-key', id: fromB64u(k.id) })), userVerification: 'required', timeout: 120000 },
  });
  const r = c.response;
  const response = { clientDataJSON: b64u(r.clientDataJSON), authenticatorData: b64u(r.authenticatorData), signature: b64u(r.signature) };
  if (r.userHandle) response.userHandle = b64u(r.userHandle);
  return credentialJSON(c, response);
}
