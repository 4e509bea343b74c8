/**
 * The approval page's listener in-process, with the daemon's own approval
 * queue and event bus: the gate (Host, Origin, Sec-Fetch-Site, method,
 * content type) and the headers of every answer; pairing once per code;
 * a decision bound to its card by digest and a single-use nonce — stale,
 * replayed, cross-card, foreign-device and token-less decisions refused
 * with their codes, nothing decided; a revoked device refused at once; the
 * decision made through the queue's own `decide`, attributed to the device.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { ApprovalQueue, type CardDraft } from '../../../src/approvals/queue.js';
import { EventBus } from '../../../src/daemon/events.js';
import { DeviceRegistry } from '../../../src/daemon/approval-page/devices.js';
import { PAGE_CSP } from '../../../src/daemon/approval-page/gate.js';
import { startApprovalPage, type ApprovalPageEndpoint } from '../../../src/daemon/approval-page/server.js';
import type { PairedDevice } from '../../../src/home/approval-devices.js';
import type { ApprovalDecision } from '../../../src/protocol/approvals.js';
import { ManualClock } from '../../helpers/clock.js';
import { card } from '../tui/fake-client.js';

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the answers are read field by field by the tests
  readonly json: any;
}

function draft(over: Partial<CardDraft> = {}): CardDraft {
  const { id: _id, requested_at: _r, expires_at: _e, ...rest } = card();
  return { ...rest, ...over };
}

describe('approval page listener', () => {
  const clock = new ManualClock('2026-03-01T10:00:00.000Z');
  const queue = new ApprovalQueue(clock);
  const bus = new EventBus(clock);
  queue.subscribe((e) => bus.emit(e.type === 'added' ? { type: 'approval.added', card: e.card } : { type: 'approval.resolved', id: e.id, decision: e.decision }));
  let saved: readonly PairedDevice[] = [];
  const devices = new DeviceRegistry({ devices: [], sequence: 0, clock, save: (d) => Promise.resolve(void (saved = d)) });
  let page: ApprovalPageEndpoint;
  let host: string;
  let origin: string;
  const journal: Record<string, unknown>[] = [];
  const aborts = new AbortController();

  /** `cookie` is a device's proof: its cookie and its key header. */
  const call = (method: string, path: string, o: { headers?: Record<string, string>; body?: unknown; cookie?: { cookie: string; key: string } } = {}): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const body = o.body === undefined ? undefined : JSON.stringify(o.body);
      const headers: Record<string, string> = { host, ...(body === undefined ? {} : { 'content-type': 'application/json', origin }), ...(o.cookie === undefined ? {} : { cookie: o.cookie.cookie, 'x-postern-device': o.cookie.key }), ...o.headers };
      const req = request({ host: '127.0.0.1', port: page.port, method, path, headers }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString('utf8')));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, json: text.startsWith('{') ? JSON.parse(text) : text }));
      });
      req.on('error', reject);
      req.end(body);
    });

  const pairDevice = async (name: string): Promise<{ cookie: { cookie: string; key: string }; id: string; csrf: string }> => {
    const { code } = devices.openPairing(name);
    const r = await call('POST', '/api/pair', { body: { code } });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    const set = String(r.headers['set-cookie']);
    assert.match(set, /^postern_device=[0-9a-f]{16}\.[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=\//);
    const cookie = { cookie: set.split(';')[0]!, key: r.json.key as string };
    assert.match(cookie.key, /^[A-Za-z0-9_-]{43}$/);
    const s = await call('GET', '/api/state', { cookie });
    return { cookie, id: r.json.device.id, csrf: s.json.csrf };
  };

  const open = (over: Partial<CardDraft> = {}): { id: string; digest: string; decision: Promise<ApprovalDecision> } => {
    const r = queue.request(draft(over), { timeoutMs: 3_600_000, signal: aborts.signal });
    return { id: r.card.id, digest: r.card.call_digest, decision: r.decision };
  };

  const stateOf = async (d: { cookie: { cookie: string; key: string } }, id: string): Promise<{ nonce: string; digest: string; approve: { once: boolean; session: boolean } }> => {
    const s = await call('GET', '/api/state', { cookie: d.cookie });
    const c = s.json.cards.find((x: { id: string }) => x.id === id);
    assert.ok(c !== undefined, `card ${id} on the page`);
    return c;
  };

  const decide = (d: { cookie: { cookie: string; key: string }; csrf: string }, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Answer> =>
    call('POST', '/api/decide', { cookie: d.cookie, body, headers: { 'x-postern-page': d.csrf, ...headers } });

  before(async () => {
    page = await startApprovalPage({ bind: '127.0.0.1', port: 0, tls: null, clock, queue, bus, devices, activity: () => [], journal: (_t, data) => journal.push(data) });
    host = `127.0.0.1:${page.port}`;
    origin = `http://${host}`;
  });
  after(async () => {
    aborts.abort();
    await page.close();
  });

  it('serves the page with a strict CSP, no framing, no caching, no inline script', async () => {
    const r = await call('GET', '/');
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-security-policy'], PAGE_CSP);
    assert.equal(r.headers['x-frame-options'], 'DENY');
    assert.equal(r.headers['x-content-type-options'], 'nosniff');
    assert.equal(r.headers['cache-control'], 'no-store');
    assert.equal(r.headers['access-control-allow-origin'], undefined);
    assert.doesNotMatch(String(r.json), /<script(?![^>]*\bsrc="\/app\.js")/, 'the only script is /app.js');
    assert.doesNotMatch(String(r.json), /\son\w+=/, 'no inline event handlers');
    const js = await call('GET', '/app.js');
    assert.match(String(js.headers['content-type']), /^text\/javascript/);
    assert.doesNotMatch(String(js.json), /innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/, 'agent text is only ever set as text');
  });

  it('refuses a foreign Host (DNS rebinding), a foreign Origin, a cross-site fetch, a form post and other methods', async () => {
    assert.equal((await call('GET', '/', { headers: { host: `evil.example:${page.port}` } })).status, 421);
    assert.equal((await call('GET', '/api/state', { headers: { origin: 'http://evil.example' } })).status, 403);
    assert.equal((await call('GET', '/api/state', { headers: { 'sec-fetch-site': 'cross-site' } })).status, 403);
    const form = await call('POST', '/api/pair', { headers: { 'content-type': 'application/x-www-form-urlencoded', origin } });
    assert.equal(form.status, 415);
    const noOrigin = await call('POST', '/api/pair', { body: { code: 'x' }, headers: { origin: '' } });
    assert.equal(noOrigin.status, 403);
    const put = await call('PUT', '/api/decide');
    assert.equal(put.status, 405);
    assert.equal(put.json.error.code, 'PAGE_REFUSED');
    assert.equal((await call('GET', '/api/state')).json.error.code, 'DEVICE_UNPAIRED');
  });

  it('a pairing code works once; a wrong one is refused', async () => {
    const { code } = devices.openPairing('laptop');
    assert.equal((await call('POST', '/api/pair', { body: { code: 'WRONGWRONG' } })).json.error.code, 'PAIRING_REFUSED');
    assert.equal((await call('POST', '/api/pair', { body: { code } })).status, 200);
    const again = await call('POST', '/api/pair', { body: { code } });
    assert.equal(again.status, 403);
    assert.equal(again.json.error.code, 'PAIRING_REFUSED');
    assert.equal(saved.filter((d) => d.name === 'laptop').length, 1);
    assert.ok(saved.every((d) => /^[0-9a-f]{64}$/.test(d.secret_sha256)), 'only a digest of the secret is kept');
    assert.deepEqual(journal.at(-1), { device: saved.at(-1)!.id, name: 'laptop', sequence: devices.sequence });
  });

  it('approves through the queue, attributed to the device; the same decision replayed is DECISION_REPLAYED', async () => {
    const d = await pairDevice('phone');
    const c = open();
    const s = await stateOf(d, c.id);
    const body = { card_id: c.id, digest: s.digest, nonce: s.nonce, verdict: 'approve', scope: 'once' };
    const r = await decide(d, body);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    const decision = await c.decision;
    assert.deepEqual({ kind: decision.kind, by: 'by' in decision ? decision.by : null }, { kind: 'approved', by: `device:${d.id}` });
    const replay = await decide(d, body);
    assert.equal(replay.status, 409);
    assert.equal(replay.json.error.code, 'DECISION_REPLAYED');
  });

  it('refuses a decision without the page token, with another card\'s nonce, another device\'s nonce, or another digest — nothing decided', async () => {
    const a = await pairDevice('tablet');
    const b = await pairDevice('desk');
    const one = open();
    const two = open();
    const s1 = await stateOf(a, one.id);
    const s2 = await stateOf(a, two.id);
    const noToken = await call('POST', '/api/decide', { cookie: a.cookie, body: { card_id: one.id, digest: s1.digest, nonce: s1.nonce, verdict: 'deny' } });
    assert.equal(noToken.json.error.code, 'PAGE_REFUSED');
    assert.equal((await decide(a, { card_id: one.id, digest: s1.digest, nonce: s2.nonce, verdict: 'approve', scope: 'once' })).json.error.code, 'DECISION_NONCE_INVALID');
    const sb = await stateOf(b, one.id);
    assert.equal((await decide(a, { card_id: one.id, digest: s1.digest, nonce: sb.nonce, verdict: 'approve', scope: 'once' })).json.error.code, 'DECISION_NONCE_INVALID');
    const s1b = await stateOf(a, one.id);
    assert.equal((await decide(a, { card_id: one.id, digest: 'f'.repeat(64), nonce: s1b.nonce, verdict: 'approve', scope: 'once' })).json.error.code, 'APPROVAL_MISMATCH');
    assert.deepEqual(queue.list().map((x) => x.id).sort(), [one.id, two.id].sort(), 'both still pending');
    const s1c = await stateOf(a, one.id);
    assert.equal((await decide(a, { card_id: one.id, digest: s1c.digest, nonce: s1c.nonce, verdict: 'deny', reason: 'no' })).status, 200);
    const s2b = await stateOf(a, two.id);
    assert.equal((await decide(a, { card_id: two.id, digest: s2b.digest, nonce: s2b.nonce, verdict: 'deny', reason: null })).status, 200);
    const d1 = await one.decision;
    assert.equal(d1.kind === 'denied' ? d1.reason : null, 'no');
  });

  it('a card gone stale offers deny only; approving it is DECISION_STALE', async () => {
    const d = await pairDevice('watch');
    const c = open();
    bus.emit({ type: 'approval.stale', id: c.id, reason: 'revision 2 rejects calls planned against revision 1' });
    const s = await stateOf(d, c.id);
    assert.deepEqual(s.approve, { once: false, session: false, why: 'approval is not offered: the contract changed while the call waited (stale)', when_seen: null });
    const r = await decide(d, { card_id: c.id, digest: s.digest, nonce: s.nonce, verdict: 'approve', scope: 'once' });
    assert.equal(r.json.error.code, 'DECISION_STALE');
    assert.equal(queue.get(c.id)?.id, c.id, 'still pending');
    const s2 = await stateOf(d, c.id);
    assert.equal((await decide(d, { card_id: c.id, digest: s2.digest, nonce: s2.nonce, verdict: 'deny' })).status, 200);
    assert.equal((await c.decision).kind, 'denied');
  });

  it('session approval only where the card view offers it', async () => {
    const d = await pairDevice('wall');
    const c = open({ scope_allowed: 'per-call' });
    const s = await stateOf(d, c.id);
    assert.equal(s.approve.session, false);
    const r = await decide(d, { card_id: c.id, digest: s.digest, nonce: s.nonce, verdict: 'approve', scope: 'session' });
    assert.equal(r.json.error.code, 'USAGE');
    assert.equal(queue.get(c.id)?.id, c.id);
    queue.decide(c.id, { verdict: 'deny', reason: null }, 'test');
  });

  it('a revoked device is refused at its next request', async () => {
    const d = await pairDevice('lost-phone');
    const c = open();
    const s = await stateOf(d, c.id);
    const cookieOnly = await call('GET', '/api/state', { headers: { cookie: d.cookie.cookie } });
    assert.equal(cookieOnly.json.error.code, 'DEVICE_UNPAIRED', 'the cookie alone — a browser sends it to every port of 127.0.0.1 — proves nothing');
    await devices.revoke(d.id);
    assert.equal((await call('GET', '/api/state', { cookie: d.cookie })).json.error.code, 'DEVICE_UNPAIRED');
    const r = await decide(d, { card_id: c.id, digest: s.digest, nonce: s.nonce, verdict: 'approve', scope: 'once' });
    assert.equal(r.status, 401);
    assert.equal(queue.get(c.id)?.id, c.id, 'nothing decided');
    assert.ok(saved.find((x) => x.id === d.id)?.revoked_at !== null);
    queue.decide(c.id, { verdict: 'deny', reason: null }, 'test');
  });

  it('pairing attempts are rate-limited per address', async () => {
    let limited: Answer | undefined;
    for (let i = 0; i < 12 && limited === undefined; i++) {
      const r = await call('POST', '/api/pair', { body: { code: `NOPE${i}` } });
      if (r.status === 429) limited = r;
    }
    assert.equal(limited?.json.error.code, 'PAGE_RATE_LIMITED');
    clock.advance(60_000);
    assert.equal((await call('POST', '/api/pair', { body: { code: 'NOPE' } })).json.error.code, 'PAIRING_REFUSED');
  });
});
