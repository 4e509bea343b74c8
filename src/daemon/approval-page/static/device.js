// The approval page's device: its key, the daemon's proof of itself, and every request that
// uses the device (the protocol of src/daemon/approval-page/proof.ts, which builds the same
// strings). Served by the daemon, same origin, no inline code.
//
// Invariants:
// - the device's private key is a WebCrypto ECDSA P-256 key made here with extractable: false
//   and kept in IndexedDB; only its public half ever leaves the browser (at pairing);
// - nothing is sent with credentials: no cookie exists, and every fetch says credentials: 'omit';
// - before any request that uses the device, the server proves it holds the page key this
//   browser pinned at pairing (a fresh random challenge, signed with the origin and the run);
//   a server that does not stops everything here, with a message;
// - each device request is signed over (origin, run, view token, device, method, path, body
//   digest, counter), so it is worth nothing in another run, on another path or sent twice;
// - once the daemon is lost (a stream ends, a request fails), nothing more is sent: the page
//   says so and waits for a reload, which proves the server again;
// - no service worker is kept: any registration found is removed and the page stops.
const HELLO = 'postern approval-page hello v1';
const REQUEST = 'postern approval-page request v1';
const PAIR = 'postern approval-page pair v1';
const ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';
const ECDSA = { name: 'ECDSA', hash: 'SHA-256' };
export const LOST = 'lost the daemon — reload when postern is running again';

/** Why the page stopped: nothing more is sent after one. */
export class Stopped extends Error {
  constructor(message, code) {
    super(message);
    this.code = code;
  }
}

let stopped = null;
const onStop = [];
/** The counter of this page's signed requests: one per page load (the view token), whoever in the page signs. */
let counter = 0;

/** Stops every device request from now on (the first reason wins) and tells the page. */
export function stop(message, code) {
  if (stopped === null) {
    stopped = new Stopped(message, code);
    for (const f of onStop) f(stopped);
  }
  return stopped;
}

export function whenStopped(f) {
  onStop.push(f);
  if (stopped !== null) f(stopped);
}

const enc = new TextEncoder();
export const b64u = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
export const fromB64u = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (s.length % 4)) % 4)), (c) => c.charCodeAt(0));
const hex = (bytes) => [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, '0')).join('');

async function shortCode(text) {
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', typeof text === 'string' ? enc.encode(text) : text));
  let out = '';
  for (let i = 0; out.length < 8; i++) out += ALPHABET[d[i] % ALPHABET.length];
  return `${out.slice(0, 4)}-${out.slice(4)}`;
}

/** The short code of a page key (as `postern approvals pair` prints it and the pairing link carries it). */
export const pageKeyCode = (pageKey) => shortCode(fromB64u(pageKey));

// ---- the device record in IndexedDB ---------------------------------------------------------

function db() {
  return new Promise((resolve, reject) => {
    const r = indexedDB.open('postern', 1);
    r.onupgradeneeded = () => r.result.createObjectStore('device');
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

async function stored(mode, f) {
  const d = await db();
  try {
    return await new Promise((resolve, reject) => {
      const tx = d.transaction('device', mode);
      const r = f(tx.objectStore('device'));
      tx.oncomplete = () => resolve(r.result);
      tx.onerror = () => reject(tx.error);
    });
  } finally {
    d.close();
  }
}

const loadRecord = () => stored('readonly', (s) => s.get('self'));
const saveRecord = (rec) => stored('readwrite', (s) => s.put(rec, 'self'));
export const forget = () => stored('readwrite', (s) => s.delete('self'));

// ---- the server's proof -----------------------------------------------------------------------

/** The view token the daemon put in this page when the browser navigated to it ('' when it did not). */
function viewToken() {
  const m = document.querySelector('meta[name="postern-view"]');
  return m === null ? '' : m.getAttribute('content') || '';
}

async function importPageKey(pageKey) {
  const p = fromB64u(pageKey);
  if (p.length !== 65 || p[0] !== 4) throw stop('the server sent no valid page key: this is not a Postern daemon', 'SERVER_UNPROVEN');
  const jwk = { kty: 'EC', crv: 'P-256', x: b64u(p.slice(1, 33)), y: b64u(p.slice(33, 65)), ext: true };
  return crypto.subtle.importKey('jwk', jwk, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['verify']);
}

/** Asks the server to sign a fresh challenge; returns {page_key, run} once the signature verifies with `pageKey` (or with the key it sent, when none is pinned yet). */
async function hello(pinned) {
  const challenge = b64u(crypto.getRandomValues(new Uint8Array(32)));
  let r;
  try {
    r = await fetch('/api/hello', { method: 'POST', credentials: 'omit', cache: 'no-store', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ challenge }) });
  } catch {
    throw stop(LOST, 'DAEMON_LOST');
  }
  const j = await r.json().catch(() => ({}));
  const pageKey = pinned ?? j.page_key;
  if (typeof pageKey !== 'string' || typeof j.run !== 'string' || typeof j.signature !== 'string' || j.page_key !== pageKey) {
    throw stop('the server on this address did not prove it is the Postern daemon this browser paired with: nothing was sent to it; do not use this page', 'SERVER_UNPROVEN');
  }
  const ok = await crypto.subtle.verify(ECDSA, await importPageKey(pageKey), fromB64u(j.signature), enc.encode(`${HELLO}\n${challenge}\n${location.origin}\n${j.run}`)).catch(() => false);
  if (!ok) throw stop('the server on this address did not prove it is the Postern daemon this browser paired with: nothing was sent to it; do not use this page', 'SERVER_UNPROVEN');
  return { pageKey, run: j.run };
}

/** Checks what must hold before the page says anything to the server with the device. */
async function preflight() {
  if (stopped !== null) throw stopped;
  if (navigator.serviceWorker !== undefined) {
    const regs = await navigator.serviceWorker.getRegistrations();
    if (regs.length > 0) {
      await Promise.all(regs.map((r) => r.unregister()));
      throw stop('a service worker was registered for this address (Postern has none): it was removed; close every tab of this page, then open it again', 'SERVICE_WORKER');
    }
  }
  const view = viewToken();
  if (view === '') throw stop('this page was not opened by its address (no page token): open it again from the address bar', 'NO_VIEW');
  return view;
}

// ---- the device's requests --------------------------------------------------------------------

class Device {
  constructor(rec, run, view) {
    this.id = rec.id;
    this.name = rec.name;
    this.key = rec.key;
    this.run = run;
    this.view = view;
    this.streams = new Set();
    whenStopped(() => {
      for (const a of this.streams) a.abort();
    });
  }

  async #headers(method, path, body) {
    if (stopped !== null) throw stopped;
    const n = ++counter;
    const digest = hex(await crypto.subtle.digest('SHA-256', enc.encode(body)));
    const message = [REQUEST, location.origin, this.run, this.view, this.id, method, path, digest, String(n)].join('\n');
    const sig = b64u(await crypto.subtle.sign(ECDSA, this.key, enc.encode(message)));
    return { 'X-Postern-Device': this.id, 'X-Postern-View': this.view, 'X-Postern-Proof': `${n}.${sig}` };
  }

  /** One signed request; {status, json}. A failure to reach the daemon stops the page. */
  async send(method, path, payload) {
    const body = payload === undefined ? '' : JSON.stringify(payload);
    const headers = await this.#headers(method, path, body);
    if (body !== '') headers['Content-Type'] = 'application/json';
    let r;
    try {
      r = await fetch(path, { method, credentials: 'omit', cache: 'no-store', headers, body: body === '' ? undefined : body });
    } catch {
      throw stop(LOST, 'DAEMON_LOST');
    }
    const json = await r.json().catch(() => ({}));
    return { status: r.status, json };
  }

  /** Follows the daemon's "changed" pings; calls `ping` on each. When the stream ends the daemon is lost: the page stops. */
  async listen(ping) {
    const headers = await this.#headers('GET', '/api/events', '');
    const abort = new AbortController();
    this.streams.add(abort);
    try {
      const r = await fetch('/api/events', { credentials: 'omit', cache: 'no-store', headers, signal: abort.signal });
      if (!r.ok || r.body === null) {
        const j = await r.json().catch(() => ({}));
        throw stop(j.error ? `${j.error.code}: ${j.error.message}` : LOST, j.error ? j.error.code : 'DAEMON_LOST');
      }
      const reader = r.body.getReader();
      const text = new TextDecoder();
      ping();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (text.decode(value, { stream: true }).includes('data: revoked')) throw stop('this browser was revoked as a device: reload the page to pair it again', 'DEVICE_UNPAIRED');
        ping();
      }
      throw stop(LOST, 'DAEMON_LOST');
    } catch (e) {
      if (e instanceof Stopped) throw e;
      throw stop(LOST, 'DAEMON_LOST');
    } finally {
      this.streams.delete(abort);
    }
  }
}

/**
 * Opens the device of this browser: {device} when paired (the server proved it holds the pinned
 * page key), {unpaired} when this browser holds no device key. Throws Stopped otherwise.
 */
export async function open() {
  const view = await preflight();
  const rec = await loadRecord().catch(() => undefined);
  if (rec === undefined || rec.origin !== location.origin) return { unpaired: true };
  const { run } = await hello(rec.pageKey);
  return { device: new Device(rec, run, view) };
}

/**
 * Pairs this browser with a one-time code: a new key pair (the private key not extractable),
 * the server's proof (checked against `keyCode`, the page key's code from the pairing link,
 * when there is one), the public key and its signature sent with the code. Returns the device,
 * or {error} as the daemon answered.
 */
export async function pair(code, keyCode) {
  const view = await preflight();
  const { pageKey, run } = await hello(null);
  if (keyCode && (await pageKeyCode(pageKey)) !== keyCode) throw stop(`the server on this address holds another page key than the pairing link names (${keyCode}): nothing was sent to it; do not use this page`, 'SERVER_UNPROVEN');
  const pairKeys = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']);
  const publicKey = b64u(await crypto.subtle.exportKey('raw', pairKeys.publicKey));
  const clean = code.trim().toUpperCase().replace(/[\s-]/g, '');
  const sig = b64u(await crypto.subtle.sign(ECDSA, pairKeys.privateKey, enc.encode([PAIR, clean, location.origin, run, view, publicKey].join('\n'))));
  let r;
  try {
    r = await fetch('/api/pair', { method: 'POST', credentials: 'omit', cache: 'no-store', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ code: clean, public_key: publicKey, view, signature: sig }) });
  } catch {
    throw stop(LOST, 'DAEMON_LOST');
  }
  const j = await r.json().catch(() => ({}));
  if (!r.ok) return { error: j.error || { code: 'ERROR', message: `refused (${r.status})` } };
  const rec = { id: j.device.id, name: j.device.name, key: pairKeys.privateKey, pageKey, origin: location.origin };
  await saveRecord(rec);
  return { device: new Device(rec, run, view) };
}
