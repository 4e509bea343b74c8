/**
 * The approval page's listener in-process, with the daemon's own approval
 * queue and event bus: the gate (Host, Origin, Sec-Fetch-Site, method,
 * content type) and the headers of every answer; the page token only in a
 * navigation's page; the daemon's signed hello; pairing once per code with a
 * device key; every device request signed for this run, view, path, body and
 * counter — a request sent again, moved to another path or body, or signed
 * for another run refused DEVICE_PROOF_INVALID; a decision bound to its card
 * by digest and a single-use nonce — stale, replayed, cross-card and
 * foreign-device decisions refused with their codes, nothing decided; a
 * revoked device refused at once; revocation from the page; the decision made
 * through the queue's own `decide`, attributed to the device.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { ApprovalQueue, type CardDraft } from '../../../src/approvals/queue.js';
import { EventBus } from '../../../src/daemon/services/events.js';
import { createPublicKey, verify } from 'node:crypto';
import { DeviceRegistry } from '../../../src/daemon/approval-page/devices.js';
import { helloMessage, pageIdentity } from '../../../src/daemon/approval-page/proof.js';
import { NodeDevice } from '../../helpers/page-device.js';
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
  const identity = pageIdentity(Buffer.alloc(32, 7));
  let run = '';
  let view = '';
  /** Each device's own page token (a view belongs to the first device that signs with it). */
  const views = new Map<NodeDevice, string>();
  const navigate = async (): Promise<string> => {
    const nav = await call('GET', '/', { headers: { 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' } });
    return /name="postern-view" content="([A-Za-z0-9_-]{32})"/.exec(String(nav.json))?.[1] ?? '';
  };

  /** `device`: sign the request as that device does (this run, the test's view). */
  const call = (method: string, path: string, o: { headers?: Record<string, string>; body?: unknown; device?: NodeDevice } = {}): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const body = o.body === undefined ? undefined : JSON.stringify(o.body);
      const signed = o.device === undefined ? {} : o.device.headers({ origin, run, view: views.get(o.device) ?? view, method, path, body: body ?? '' });
      const headers: Record<string, string> = { host, ...(body === undefined ? {} : { 'content-type': 'application/json', origin }), ...signed, ...o.headers };
      const req = request({ host: '127.0.0.1', port: page.port, method, path, headers }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString('utf8')));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, json: text.startsWith('{') ? JSON.parse(text) : text }));
      });
      req.on('error', reject);
      req.end(body);
    });

  const pairDevice = async (name: string): Promise<{ device: NodeDevice; id: string }> => {
    const { code } = devices.openPairing(name);
    const device = new NodeDevice();
    views.set(device, await navigate());
    clock.advance(60_000); // pairing is limited per address; these are the test's own
    const r = await call('POST', '/api/pair', { body: device.pairing(code, origin, run, views.get(device) ?? '') });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.headers['set-cookie'], undefined, 'no cookie');
    assert.equal(r.json.page_key, identity.publicKey);
    device.id = r.json.device.id;
    return { device, id: device.id };
  };

  const open = (over: Partial<CardDraft> = {}): { id: string; digest: string; decision: Promise<ApprovalDecision> } => {
    const r = queue.request(draft(over), { timeoutMs: 3_600_000, signal: aborts.signal });
    return { id: r.card.id, digest: r.card.call_digest, decision: r.decision };
  };

  const stateOf = async (d: { device: NodeDevice }, id: string): Promise<{ nonce: string; digest: string; approve: { once: boolean; session: boolean } }> => {
    const s = await call('GET', '/api/state', { device: d.device });
    const c = s.json.cards.find((x: { id: string }) => x.id === id);
    assert.ok(c !== undefined, `card ${id} on the page`);
    return c;
  };

  const decide = (d: { device: NodeDevice }, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Answer> => call('POST', '/api/decide', { device: d.device, body, headers });

  before(async () => {
    const revoke = async (id: string) => {
      const d = await devices.revoke(id);
      page.dropDevice(d.id);
      return { id: d.id, name: d.name, paired_at: d.paired_at, revoked_at: d.revoked_at };
    };
    page = await startApprovalPage({ bind: '127.0.0.1', port: 0, tls: null, clock, queue, bus, devices, activity: () => [], journal: (_t, data) => journal.push(data), identity, revoke });
    host = `127.0.0.1:${page.port}`;
    origin = `http://${host}`;
    view = await navigate();
    const hello = await call('POST', '/api/hello', { body: { challenge: 'C'.repeat(43) } });
    run = hello.json.run;
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
    assert.doesNotMatch(String(r.json), /<script(?![^>]*\bsrc="\/app\.js")/, 'the only script is /app.js');
    assert.match(String(r.json), /name="postern-view" content=""/, 'a page fetched by a script (no navigation) carries no page token');
    assert.equal(r.headers['cross-origin-opener-policy'], 'same-origin', 'a window it opens is not readable by its opener');
    for (const f of ['/app.js', '/device.js']) {
      const js = await call('GET', f);
      assert.match(String(js.headers['content-type']), /^text\/javascript/);
      assert.doesNotMatch(String(js.json), /innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/, 'agent text is only ever set as text');
    }
    const sw = await call('GET', '/device.js', { headers: { 'service-worker': 'script' } });
    assert.deepEqual([sw.status, sw.json.error.code], [403, 'PAGE_REFUSED'], 'no service worker script is ever served');
  });

  it('hello: the page key signs the challenge, the origin the browser addressed and the run', async () => {
    const r = await call('POST', '/api/hello', { body: { challenge: 'Z'.repeat(43) } });
    assert.deepEqual([r.json.page_key, r.json.run], [identity.publicKey, run]);
    const point = Buffer.from(identity.publicKey, 'base64url');
    const key = createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33).toString('base64url') }, format: 'jwk' });
    const sig = Buffer.from(r.json.signature, 'base64url');
    assert.ok(verify('sha256', Buffer.from(helloMessage('Z'.repeat(43), origin, run)), { key, dsaEncoding: 'ieee-p1363' }, sig));
    assert.ok(!verify('sha256', Buffer.from(helloMessage('Z'.repeat(43), 'http://127.0.0.1:1', run)), { key, dsaEncoding: 'ieee-p1363' }, sig), 'another origin: another message');
    assert.equal(pageIdentity(Buffer.alloc(32, 7)).publicKey, identity.publicKey, 'the same vault key gives the same page key');
  });

  it('a device request is good once, for its path, body, run and view only', async () => {
    const d = await pairDevice('signer');
    const mine = views.get(d.device) ?? '';
    const h = d.device.headers({ origin, run, view: mine, method: 'GET', path: '/api/state' });
    assert.equal((await call('GET', '/api/state', { headers: h })).status, 200);
    const again = await call('GET', '/api/state', { headers: h });
    assert.deepEqual([again.status, again.json.error.code], [401, 'DEVICE_PROOF_INVALID'], 'sent again');
    const moved = d.device.headers({ origin, run, view: mine, method: 'GET', path: '/api/state' });
    assert.equal((await call('GET', '/api/events', { headers: moved })).json.error.code, 'DEVICE_PROOF_INVALID', 'another path');
    const otherRun = d.device.headers({ origin, run: 'A'.repeat(43), view: mine, method: 'GET', path: '/api/state' });
    assert.equal((await call('GET', '/api/state', { headers: otherRun })).json.error.code, 'DEVICE_PROOF_INVALID', 'another run');
    const noView = d.device.headers({ origin, run, view: '', method: 'GET', path: '/api/state' });
    assert.equal((await call('GET', '/api/state', { headers: noView })).json.error.code, 'DEVICE_PROOF_INVALID', 'no page token');
    const body = JSON.stringify({ id: '0000000000000000' });
    const forBody = d.device.headers({ origin, run, view: mine, method: 'POST', path: '/api/revoke', body });
    const swapped = await call('POST', '/api/revoke', { headers: forBody, body: { id: d.id } });
    assert.equal(swapped.json.error.code, 'DEVICE_PROOF_INVALID', 'another body');
    assert.equal(saved.find((x) => x.id === d.id)?.revoked_at, null);
    const other = new NodeDevice();
    other.id = d.id;
    views.set(other, mine);
    assert.equal((await call('GET', '/api/state', { device: other })).json.error.code, 'DEVICE_PROOF_INVALID', 'another key');
    const first = await pairDevice('first');
    views.set(d.device, views.get(first.device) ?? '');
    assert.equal((await call('GET', '/api/state', { device: first.device })).status, 200);
    assert.equal((await call('GET', '/api/state', { device: d.device })).json.error.code, 'DEVICE_PROOF_INVALID', "another device's page token");
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
    assert.equal((await call('POST', '/api/pair', { body: new NodeDevice().pairing('WRONGWRONG', origin, run, view) })).json.error.code, 'PAIRING_REFUSED');
    const unsigned = { ...new NodeDevice().pairing(code, origin, run, view), signature: 'A'.repeat(86) };
    assert.equal((await call('POST', '/api/pair', { body: unsigned })).json.error.code, 'DEVICE_PROOF_INVALID', 'a key that did not sign');
    assert.equal((await call('POST', '/api/pair', { body: new NodeDevice().pairing(code, origin, run, '') })).json.error.code, 'USAGE', 'no page token');
    assert.equal((await call('POST', '/api/pair', { body: new NodeDevice().pairing(code, origin, run, view) })).status, 200);
    const again = await call('POST', '/api/pair', { body: new NodeDevice().pairing(code, origin, run, view) });
    assert.equal(again.status, 403);
    assert.equal(again.json.error.code, 'PAIRING_REFUSED');
    assert.equal(saved.filter((d) => d.name === 'laptop').length, 1);
    assert.ok(saved.every((d) => /^[A-Za-z0-9_-]{87}$/.test(d.public_key)), 'only a public key is kept');
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

  it('refuses a decision with another card\'s nonce, another device\'s nonce, or another digest — nothing decided', async () => {
    const a = await pairDevice('tablet');
    const b = await pairDevice('desk');
    const one = open();
    const two = open();
    const s1 = await stateOf(a, one.id);
    const s2 = await stateOf(a, two.id);
    const unsigned = await call('POST', '/api/decide', { headers: { 'x-postern-device': a.id, 'x-postern-view': views.get(a.device) ?? '' }, body: { card_id: one.id, digest: s1.digest, nonce: s1.nonce, verdict: 'deny' } });
    assert.equal(unsigned.json.error.code, 'DEVICE_PROOF_INVALID');
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
    assert.equal(r.json.error?.code, 'DECISION_STALE', `a refusal, not a decision: ${JSON.stringify(r.json)}`);
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
    assert.equal(r.json.error?.code, 'USAGE', `a refusal, not a decision: ${JSON.stringify(r.json)}`);
    assert.equal(queue.get(c.id)?.id, c.id);
    queue.decide(c.id, { verdict: 'deny', reason: null }, 'test');
  });

  it('a revoked device is refused at its next request', async () => {
    const d = await pairDevice('lost-phone');
    const c = open();
    const s = await stateOf(d, c.id);
    const other = await pairDevice('other-phone');
    const r0 = await call('POST', '/api/revoke', { device: other.device, body: { id: d.id } });
    assert.equal(r0.status, 200, JSON.stringify(r0.json));
    assert.equal((await call('GET', '/api/state', { device: d.device })).json.error.code, 'DEVICE_UNPAIRED');
    const listed = (await call('GET', '/api/state', { device: other.device })).json.devices.find((x: { id: string }) => x.id === d.id);
    assert.notEqual(listed.revoked_at, null, 'the page lists it, revoked');
    const r = await decide(d, { card_id: c.id, digest: s.digest, nonce: s.nonce, verdict: 'approve', scope: 'once' });
    assert.equal(r.status, 401);
    assert.equal(queue.get(c.id)?.id, c.id, 'nothing decided');
    assert.ok(saved.find((x) => x.id === d.id)?.revoked_at !== null);
    queue.decide(c.id, { verdict: 'deny', reason: null }, 'test');
  });

  it('a nonce whose first use was refused (stale card, session not offered) is DECISION_REPLAYED when sent again while the card is pending', async () => {
    const d = await pairDevice('second-try');
    const stale = open();
    bus.emit({ type: 'approval.stale', id: stale.id, reason: 'revision 2 rejects calls planned against revision 1' });
    const perCall = open({ scope_allowed: 'per-call' });
    const cases: [typeof stale, Record<string, unknown>, string][] = [
      [stale, { verdict: 'approve', scope: 'once' }, 'DECISION_STALE'],
      [perCall, { verdict: 'approve', scope: 'session' }, 'USAGE'],
    ];
    for (const [c, verdict, first] of cases) {
      const s = await stateOf(d, c.id);
      const body = { card_id: c.id, digest: s.digest, nonce: s.nonce, ...verdict };
      const r1 = await decide(d, body);
      assert.equal(r1.json.error?.code, first, JSON.stringify(r1.json));
      assert.equal(queue.get(c.id)?.id, c.id, 'still pending after the refusal');
      // Sent again, and as a deny (which the card would accept): the nonce is spent either way.
      for (const again of [body, { ...body, verdict: 'deny', scope: undefined }]) {
        const r2 = await decide(d, again);
        assert.equal(r2.status, 409, JSON.stringify(r2.json));
        assert.equal(r2.json.error?.code, 'DECISION_REPLAYED', JSON.stringify(r2.json));
      }
      assert.equal(queue.get(c.id)?.id, c.id, 'nothing decided by the spent nonce');
      queue.decide(c.id, { verdict: 'deny', reason: null }, 'test');
    }
  });

  it('a card no longer pending is APPROVAL_NOT_FOUND with details.state saying what became of it (decided, withdrawn)', async () => {
    const d = await pairDevice('late');
    const cases: { state: string; decision: string; end: (id: string, abort: AbortController) => void }[] = [
      { state: 'decided', decision: 'denied', end: (id) => void queue.decide(id, { verdict: 'deny', reason: null }, 'operator-cli') },
      { state: 'withdrawn', decision: 'cancelled', end: (_id, abort) => abort.abort() },
    ];
    for (const k of cases) {
      const abort = new AbortController();
      const r = queue.request(draft(), { timeoutMs: 3_600_000, signal: abort.signal });
      // The nonce is issued while the card is pending; the card ends before the page's decision arrives.
      const s = await stateOf(d, r.card.id);
      k.end(r.card.id, abort);
      assert.equal((await r.decision).kind, k.decision);
      const a = await decide(d, { card_id: r.card.id, digest: s.digest, nonce: s.nonce, verdict: 'approve', scope: 'once' });
      assert.equal(a.status, 410, JSON.stringify(a.json));
      assert.equal(a.json.error.code, 'APPROVAL_NOT_FOUND');
      assert.deepEqual(a.json.error.details, { state: k.state, decision: k.decision });
      assert.match(a.json.error.message, new RegExp(`no pending approval ${r.card.id}: it was`));
    }
  });

  it('pairing attempts are rate-limited per address', async () => {
    let limited: Answer | undefined;
    for (let i = 0; i < 12 && limited === undefined; i++) {
      const r = await call('POST', '/api/pair', { body: new NodeDevice().pairing(`NOPE${i}`, origin, run, view) });
      if (r.status === 429) limited = r;
    }
    assert.equal(limited?.json.error.code, 'PAGE_RATE_LIMITED');
    clock.advance(60_000);
    assert.equal((await call('POST', '/api/pair', { body: new NodeDevice().pairing('NOPE', origin, run, view) })).json.error.code, 'PAIRING_REFUSED');
  });
});
