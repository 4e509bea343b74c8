// @subject time: token lifetimes and refresh times (run again a year ahead by .ci/run)
/**
 * The minted-token cache (src/daemon/services/minted-tokens.ts) in front of a real
 * local OAuth token endpoint (test/helpers/fake-http.ts, append-only request
 * log) and the real token request (src/executors/http/token-endpoint.ts):
 * the first call fetches, later calls reuse, a call near expiry refreshes
 * (the clock is advanced, nothing sleeps), concurrent calls share one token
 * request, a 4xx is permanent until the credential changes, a 5xx is
 * transient, the redactor is taught each token before it is returned, and
 * no error carries a secret.
 */
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { MintedTokens } from '../../../src/daemon/services/minted-tokens.js';
import { mintToken, type MintingAuth } from '../../../src/executors/http/token-endpoint.js';
import type { HttpCredential } from '../../../src/executors/http/index.js';
import { isPosternError, type PosternError } from '../../../src/rules/errors.js';
import { startFakeHttp, type FakeHttpServer } from '../../helpers/fake-http.js';
import { ManualClock } from '../../helpers/clock.js';

const SECRET = `CANARY-client-secret-${randomBytes(12).toString('base64url')}`;
const utf8 = (s: string): Uint8Array => Buffer.from(s, 'utf8');
const text = (b: Uint8Array): string => Buffer.from(b).toString('utf8');

function credential(secret = SECRET): HttpCredential {
  return { meta: { name: 'api-oauth', kind: 'oauth_client_credentials', fields: { client_id: 'client one' } }, secret: { client_secret: utf8(secret) } };
}

describe('minted tokens: OAuth client credentials against a local token endpoint', () => {
  let http: FakeHttpServer;
  let auth: MintingAuth;
  let clock: ManualClock;
  let cache: MintedTokens;
  let learnt: string[];
  /** What the endpoint answers next: status, body. */
  let answer: { status: number; body: Record<string, unknown> };
  let issued = 0;
  let hold: Promise<void> | null = null;
  let received: (() => void) | null = null;

  before(async () => {
    http = await startFakeHttp();
    http.route('/oauth/token', async (_req, res) => {
      received?.();
      if (hold !== null) await hold;
      const body = answer.status === 200 ? { ...answer.body, access_token: `CANARY-minted-${++issued}-${randomBytes(9).toString('base64url')}` } : answer.body;
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    });
    auth = { kind: 'oauth_client_credentials', tokenUrl: `${http.origin}/oauth/token`, scopes: ['read:things', 'write:things'] };
  });
  after(async () => http.close());

  beforeEach(() => {
    clock = new ManualClock('2026-12-01T10:00:00Z');
    learnt = [];
    cache = new MintedTokens({ clock, learn: (name, token) => void learnt.push(`${name}=${text(token)}`) });
    answer = { status: 200, body: { token_type: 'Bearer', expires_in: 3600 } };
    hold = null;
    received = null;
  });

  const get = (cred = credential()): Promise<Uint8Array> =>
    cache.token({ name: cred.meta.name, version: cache.versionOf(cred, auth), mint: (learn) => mintToken(cred, auth, { allowPrivate: true, now: () => clock.now(), learn }) });
  const failure = async (cred = credential()): Promise<PosternError> => {
    try {
      await get(cred);
    } catch (e) {
      assert.ok(isPosternError(e));
      return e;
    }
    assert.fail('expected a failure');
  };

  it('the first call fetches with HTTP Basic client authentication and the scopes; the redactor learns the token first', async () => {
    const before = http.requests.length;
    const token = text(await get());
    assert.equal(http.requests.length, before + 1);
    const sent = http.requests.at(-1)!;
    assert.equal(sent.method, 'POST');
    assert.equal(sent.body.toString(), 'grant_type=client_credentials&scope=read%3Athings+write%3Athings');
    assert.equal(http.header(http.requests.length - 1, 'authorization'), `Basic ${Buffer.from(`client+one:${SECRET}`).toString('base64')}`);
    assert.deepEqual(learnt, [`api-oauth=${token}`]);
    const [state] = cache.states();
    assert.equal(state?.valid_until, '2026-12-01T11:00:00.000Z');
    assert.equal(state?.last_refresh, '2026-12-01T10:00:00.000Z');
    assert.equal(state?.last_error, null);
    assert.ok(!JSON.stringify(cache.states()).includes(token), 'the state never holds the value');
  });

  it('later calls reuse the token until the refresh margin; then one refresh', async () => {
    const first = text(await get());
    const before = http.requests.length;
    clock.advance(3600_000 - 60_001);
    assert.equal(text(await get()), first);
    assert.equal(http.requests.length, before, 'reused: no token request');
    clock.advance(2);
    const second = text(await get());
    assert.notEqual(second, first);
    assert.equal(http.requests.length, before + 1);
  });

  it('a short-lived token is reused for half its life', async () => {
    answer = { status: 200, body: { token_type: 'bearer', expires_in: 60 } };
    const first = text(await get());
    clock.advance(29_000);
    assert.equal(text(await get()), first);
    clock.advance(1_000);
    assert.notEqual(text(await get()), first);
  });

  it('single-flight: sixteen concurrent calls make exactly one token request and get the same token', async () => {
    const before = http.requests.length;
    let release!: () => void;
    hold = new Promise((r) => (release = r));
    const arrived = new Promise<void>((r) => (received = r));
    const calls = Array.from({ length: 16 }, () => get());
    await arrived;
    release();
    const tokens = (await Promise.all(calls)).map(text);
    assert.equal(new Set(tokens).size, 1);
    assert.equal(http.requests.length, before + 1);
    assert.equal(learnt.length, 1);
  });

  it('a 4xx is permanent: later calls fail fast without a request until the credential changes', async () => {
    answer = { status: 401, body: { error: 'invalid_client', error_description: `bad secret ${SECRET}` } };
    const before = http.requests.length;
    const e = await failure();
    assert.equal(e.code, 'CREDENTIAL_REJECTED');
    assert.equal(e.sideEffectStarted, false);
    assert.equal(e.requiredAction, 'operator_must_fix_credential');
    assert.match(e.message, /^credential api-oauth: the token endpoint refused it: HTTP 401 \(invalid_client\); rotate it/);
    answer = { status: 200, body: { token_type: 'Bearer', expires_in: 3600 } };
    const again = await failure();
    assert.equal(again.code, 'CREDENTIAL_REJECTED');
    assert.equal(http.requests.length, before + 1, 'no second request while the credential is unchanged');
    assert.equal(cache.states()[0]?.last_error?.code, 'CREDENTIAL_REJECTED');
    // Rotated: the new version is tried.
    const rotated = credential(`${SECRET}-rotated`);
    assert.ok((await get(rotated)).length > 0);
    assert.equal(http.requests.length, before + 2);
    for (const err of [e, again]) assert.ok(!JSON.stringify({ m: err.message, d: err.details }).includes(SECRET));
  });

  it('a 5xx or a 429 is transient: the next call tries again', async () => {
    for (const status of [503, 429]) {
      answer = { status, body: { error: 'temporarily_unavailable' } };
      const e = await failure();
      assert.equal(e.code, 'CREDENTIAL_UNAVAILABLE');
      assert.equal(e.sideEffectStarted, false);
      assert.equal(e.requiredAction, 'retry_later');
    }
    answer = { status: 200, body: { token_type: 'Bearer', expires_in: 3600 } };
    const before = http.requests.length;
    assert.ok((await get()).length > 0);
    assert.equal(http.requests.length, before + 1);
    assert.equal(cache.states()[0]?.last_error, null);
  });

  it('an answer without a usable token, or not a bearer token, is a rejection', async () => {
    answer = { status: 200, body: { token_type: 'mac', expires_in: 10 } };
    assert.equal((await failure()).code, 'CREDENTIAL_REJECTED');
  });

  it('an unreachable endpoint is transient; no secret in the error', async () => {
    const down = await startFakeHttp();
    const origin = down.origin;
    await down.close();
    const cred = credential();
    const gone: MintingAuth = { kind: 'oauth_client_credentials', tokenUrl: `${origin}/oauth/token`, scopes: [] };
    await assert.rejects(
      cache.token({ name: 'api-oauth', version: 'v', mint: (learn) => mintToken(cred, gone, { allowPrivate: true, now: () => clock.now(), learn }) }),
      (e: unknown) => isPosternError(e, 'CREDENTIAL_UNAVAILABLE') && !e.message.includes(SECRET),
    );
  });

  it('a loopback token endpoint is refused unless the target allows private addresses', async () => {
    const cred = credential();
    await assert.rejects(
      cache.token({ name: 'api-oauth', version: 'v', mint: (learn) => mintToken(cred, auth, { allowPrivate: false, now: () => clock.now(), learn }) }),
      (e: unknown) => isPosternError(e, 'EGRESS_BLOCKED') && e.sideEffectStarted === false,
    );
  });

  it('drop and clear forget the token: the next call fetches a new one', async () => {
    const first = text(await get());
    cache.drop('api-oauth');
    const second = text(await get());
    assert.notEqual(second, first);
    cache.clear();
    assert.deepEqual(cache.states(), []);
    assert.notEqual(text(await get()), second);
  });
});
