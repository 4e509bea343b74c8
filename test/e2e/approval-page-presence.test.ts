/**
 * Presence for destructive tools on the approval page, in a real Chromium
 * with the DevTools protocol's WebAuthn virtual authenticator (CTAP2, an
 * internal platform authenticator with user verification), against the real
 * daemon and a fake HTTP target whose request log says what ran.
 *
 * - A passkey cannot be made on http://127.0.0.1:PORT (an IP address is not a
 *   relying-party id: SecurityError) and can on http://localhost:PORT.
 * - The device registers a passkey from the page ("Add a passkey").
 * - A destructive tool that needs approval needs presence by default: approved
 *   on the page with the passkey it runs, and the journal records the
 *   credential and its flags.
 * - Refused, with nothing at the target: an approval without an assertion
 *   (PRESENCE_REQUIRED), an assertion sent again (the one an earlier approval
 *   carried, or one made for an earlier decision of the same card), and an
 *   assertion made for another card (PRESENCE_INVALID).
 * - On http://127.0.0.1 (another paired device) the page says passkeys need
 *   localhost; such a card can only be denied there (PRESENCE_UNAVAILABLE).
 * - A destructive tool declared `approval: { mode: per-call, presence: none }`
 *   is approved on the page without a passkey.
 *
 * Skips with a reason when /usr/bin/chromium is absent, unless
 * POSTERN_REQUIRE_CHROMIUM=1.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { CDPSession, Page } from 'playwright-core';
import { chromiumSkip, type Browser } from '../helpers/chromium.js';
import type { Installation } from '../helpers/daemon.js';
import type { FakeHttpServer, RouteHandler } from '../helpers/fake-http.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { startPageDaemon, type PageDaemon } from '../helpers/page-daemon.js';
import { pairFromLink, sendSigned } from '../helpers/page-device.js';

type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };
interface StateCard { id: string; digest: string; nonce: string; presence: string; presence_challenge: string | null }
interface State { cards: StateCard[]; presence: { available: boolean; passkeys: { id: string }[] } }

const skip = chromiumSkip();
const key = (): string => `k-${randomBytes(6).toString('hex')}`;

/** Makes a passkey on this page's origin with the raw API (as a page would), and says how it ended. */
const CREATE_SCRIPT = `navigator.credentials.create({ publicKey: {
  rp: { name: 'probe' }, user: { id: new Uint8Array(16), name: 'probe', displayName: 'probe' },
  challenge: crypto.getRandomValues(new Uint8Array(32)), pubKeyCredParams: [{ type: 'public-key', alg: -7 }],
  authenticatorSelection: { authenticatorAttachment: 'platform', userVerification: 'required' } } })
  .then(() => 'created', (e) => e.name + ': ' + e.message)`;

async function virtualAuthenticator(page: Page, browser: Browser): Promise<{ cdp: CDPSession; id: string }> {
  const cdp = await browser.context.newCDPSession(page);
  await cdp.send('WebAuthn.enable', { enableUI: false });
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  return { cdp, id: authenticatorId };
}

describe('the approval page: presence (a passkey) for destructive tools', { skip }, () => {
  let inst: Installation;
  let target: FakeHttpServer;
  let pd: PageDaemon;
  let port = 0;
  let credential = '';
  let approvedAssertion: unknown = null;
  const waiting = (name: string): Promise<Result> =>
    pd.agent.callTool({ name, arguments: { idempotency_key: key() } }, { onprogress: () => undefined, resetTimeoutOnProgress: true, timeout: 120_000 }) as Promise<Result>;
  const onPage = (id: string): string => `[data-card-id="${id}"]`;
  const deletes = (): number => target.requests.filter((r) => r.method === 'DELETE').length;
  const state = async (): Promise<State> => (await sendSigned(pd.page, 'GET', '/api/state')).json as unknown as State;
  /** The page's own presence module asks the virtual authenticator to sign `challenge`. */
  const assertion = (challenge: string, keys: { id: string }[]): Promise<unknown> =>
    pd.page.evaluate(async ([c, k]) => {
      const m = (await import(['', 'presence.js'].join('/'))) as { assertPresence(c: string, k: { id: string }[]): Promise<unknown> };
      return m.assertPresence(c, k);
    }, [challenge, keys] as const);
  const decide = (c: StateCard, presence?: unknown): Promise<{ status: number; json: { error?: { code: string }; [k: string]: unknown } }> =>
    sendSigned(pd.page, 'POST', '/api/decide', { card_id: c.id, digest: c.digest, nonce: c.nonce, verdict: 'approve', scope: 'once', ...(presence === undefined ? {} : { presence }) });
  const cardIn = async (id: string): Promise<{ s: State; c: StateCard }> => {
    const s = await state();
    const c = s.cards.find((x) => x.id === id);
    assert.ok(c !== undefined, `card ${id} on the page`);
    return { s, c };
  };
  const deny = async (id: string): Promise<void> => {
    const r = await inst.sb.run(['approvals', 'deny', id.slice(0, 8), '--passphrase-file', inst.passFile]);
    assert.equal(r.code, 0, r.stderr);
  };

  before(async () => {
    const deleted: RouteHandler = (_req, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end('{"deleted":true}');
    const del = (path: string) => [{ revision: 1, input: { type: 'object', properties: {} }, http: { target: 'target', method: 'DELETE', path } }];
    ({ http: target, inst } = await httpFixture({
      token: canary('tok'),
      credential: 'tok',
      config: { approval_timeout_seconds: 300 },
      routes: { '/srv/app': deleted, '/cache': deleted },
      catalog: ({ local }) => ({
        targets: { target: local },
        tools: {
          delete_app: { description: 'Delete the app.', effect: 'destructive', approval: 'per-call', revisions: del('/srv/app') },
          purge_cache: { description: 'Purge the cache.', effect: 'destructive', approval: { mode: 'per-call', presence: 'none' }, revisions: del('/cache') },
        },
      }),
      start: false,
    }));
    pd = await startPageDaemon(inst, { agent: 'presence-agent', device: 'laptop' });
    // A passkey needs a name: the same page, opened as localhost.
    port = Number((await pairFromLink(pd.page, pd.pairing, 'localhost')).port);
  });
  after(async () => {
    await pd?.browser.close();
    pd?.events.close();
    await Promise.all([inst?.cleanup(), target?.close()]);
  });

  it('a passkey cannot be made on http://127.0.0.1 (not a relying-party id) and can on http://localhost', async () => {
    const ip = await pd.browser.context.newPage();
    try {
      await ip.goto(`http://127.0.0.1:${port}/`);
      await virtualAuthenticator(ip, pd.browser);
      assert.match(await ip.evaluate<string>(CREATE_SCRIPT), /^SecurityError: .*invalid domain/i);
    } finally {
      await ip.close();
    }
    const probe = await pd.browser.context.newPage();
    try {
      await probe.goto(`http://localhost:${port}/`);
      await virtualAuthenticator(probe, pd.browser);
      assert.equal(await probe.evaluate<string>(CREATE_SCRIPT), 'created');
    } finally {
      await probe.close();
    }
  });

  it('"Add a passkey" registers one for this device with the daemon', async () => {
    const { cdp, id } = await virtualAuthenticator(pd.page, pd.browser);
    assert.deepEqual((await state()).presence, { available: true, why: null, passkeys: [] });
    await pd.page.click('[data-action="add-passkey"]');
    await pd.page.waitForSelector('#status:text("passkey added for this device")');
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId: id });
    assert.equal(credentials.length, 1);
    credential = Buffer.from(credentials[0]?.credentialId ?? '', 'base64').toString('base64url');
    assert.deepEqual((await state()).presence.passkeys.map((k) => k.id), [credential]);
    await pd.page.waitForSelector(`[data-device-id] .passkeys:text("1 passkey")`);
  });

  it('approve with presence: the DELETE runs, and the journal records the credential and its flags', async () => {
    const call = waiting('delete_app');
    const { card } = await pd.events.next('approval.added', (e) => e.card.tool === 'delete_app');
    assert.equal(card.presence, 'required', 'a destructive tool that needs approval needs presence by default');
    await pd.page.waitForSelector(`${onPage(card.id)} .badge.presence`);
    const sent = pd.page.waitForRequest('**/api/decide');
    await pd.page.click(`${onPage(card.id)} [data-action="approve-once"]`);
    approvedAssertion = (JSON.parse((await sent).postData() ?? '{}') as { presence?: unknown }).presence;
    assert.ok(approvedAssertion !== undefined, 'the page sent an assertion');
    const resolved = await pd.events.next('approval.resolved', (e) => e.id === card.id);
    assert.deepEqual(resolved.decision.kind === 'approved' ? resolved.decision.presence : null, { credential, user_present: true, user_verified: true });
    const r = await call;
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(deletes(), 1, 'the target received the DELETE');
    const { record } = await pd.events.next('activity', (e) => e.record.tool === 'delete_app' && e.record.status === 'success');
    const shown = await inst.sb.run(['audit', 'show', record.id]);
    assert.match(shown.stdout, new RegExp(`presence\\s+passkey ${credential} \\(user present: yes, user verified: yes\\)`), shown.stdout);
  });

  it('without an assertion: PRESENCE_REQUIRED, nothing at the target; an assertion sent again: PRESENCE_INVALID', async () => {
    const before = deletes();
    const call = waiting('delete_app');
    const { card } = await pd.events.next('approval.added', (e) => e.card.tool === 'delete_app');
    const first = await cardIn(card.id);
    const bare = await decide(first.c);
    assert.deepEqual([bare.status, bare.json.error?.code], [409, 'PRESENCE_REQUIRED']);
    // The very assertion the earlier approval carried.
    const again = await decide((await cardIn(card.id)).c, approvedAssertion);
    assert.deepEqual([again.status, again.json.error?.code], [409, 'PRESENCE_INVALID']);
    // One made for this card's earlier decision (its nonce is used), sent with the next one.
    const earlier = await cardIn(card.id);
    const made = await assertion(earlier.c.presence_challenge ?? '', earlier.s.presence.passkeys);
    const later = await cardIn(card.id);
    const moved = await decide(later.c, made);
    assert.deepEqual([moved.status, moved.json.error?.code], [409, 'PRESENCE_INVALID']);
    assert.ok((await pd.events.client.request('approvals.list', {})).some((c) => c.id === card.id), 'the DELETE still waits');
    assert.equal(deletes(), before, 'nothing reached the target');
    await deny(card.id);
    assert.equal((await call).isError, true);
    assert.equal(deletes(), before);
  });

  it('an assertion made for another card: PRESENCE_INVALID, nothing at the target', async () => {
    const before = deletes();
    const callA = waiting('delete_app');
    const a = (await pd.events.next('approval.added', (e) => e.card.tool === 'delete_app')).card;
    const callB = waiting('delete_app');
    const b = (await pd.events.next('approval.added', (e) => e.card.tool === 'delete_app' && e.card.id !== a.id)).card;
    const { s, c: ca } = await cardIn(a.id);
    const forA = await assertion(ca.presence_challenge ?? '', s.presence.passkeys);
    const cb = (await cardIn(b.id)).c;
    const crossed = await decide(cb, forA);
    assert.deepEqual([crossed.status, crossed.json.error?.code], [409, 'PRESENCE_INVALID']);
    assert.equal(deletes(), before, 'nothing reached the target');
    await deny(a.id);
    await deny(b.id);
    assert.deepEqual([(await callA).isError, (await callB).isError], [true, true]);
    assert.equal(deletes(), before);
  });

  it('on http://127.0.0.1 the page says passkeys need localhost: Approve is disabled, forced it is PRESENCE_UNAVAILABLE, Deny works', async () => {
    const before = deletes();
    const r = await inst.sb.run(['approvals', 'pair', '--name', 'by-ip', '--passphrase-file', inst.passFile]);
    assert.equal(r.code, 0, r.stderr);
    const ip = await pd.browser.context.newPage();
    try {
      await pairFromLink(ip, r.stdout);
      const call = waiting('delete_app');
      const { card } = await pd.events.next('approval.added', (e) => e.card.tool === 'delete_app');
      await ip.waitForSelector(onPage(card.id));
      assert.match((await ip.textContent(`${onPage(card.id)} .presence-why`)) ?? '', /localhost/);
      assert.equal(await ip.isDisabled(`${onPage(card.id)} [data-action="approve-once"]`), true);
      const s = (await sendSigned(ip, 'GET', '/api/state')).json as unknown as State;
      assert.equal(s.presence.available, false);
      const c = s.cards.find((x) => x.id === card.id)!;
      const forced = await sendSigned(ip, 'POST', '/api/decide', { card_id: c.id, digest: c.digest, nonce: c.nonce, verdict: 'approve', scope: 'once' });
      assert.deepEqual([forced.status, forced.json.error?.code], [409, 'PRESENCE_UNAVAILABLE']);
      await ip.click(`${onPage(card.id)} [data-action="deny"]`);
      assert.equal((await call).isError, true);
      assert.equal(deletes(), before, 'nothing reached the target');
    } finally {
      await ip.close();
    }
  });

  it('a destructive tool declared presence: none is approved on the page without a passkey', async () => {
    const call = waiting('purge_cache');
    const { card } = await pd.events.next('approval.added', (e) => e.card.tool === 'purge_cache');
    assert.equal(card.presence, 'none');
    const ok = await decide((await cardIn(card.id)).c);
    assert.equal(ok.status, 200, JSON.stringify(ok.json));
    const resolved = await pd.events.next('approval.resolved', (e) => e.id === card.id);
    assert.deepEqual(resolved.decision.kind === 'approved' ? [resolved.decision.presence] : null, [undefined]);
    assert.equal((await call).isError, undefined);
    assert.ok(target.requests.some((r) => r.method === 'DELETE' && r.url === '/cache'));
  });
});
