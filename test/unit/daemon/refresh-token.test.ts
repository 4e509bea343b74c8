// @subject time: token expiry (run again a year ahead by .ci/run)
/**
 * The OAuth refresh-token kind against a local token endpoint that rotates
 * refresh tokens (append-only request log): the refresh grant is sent with
 * the stored refresh token; a rotated one is written back to the vault
 * atomically with the held key (src/daemon/services/refresh-token-store.ts) and is
 * the one sent next; an answer without one keeps the old; an operator's
 * rotate meanwhile is never overwritten.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createVault, openVault, withVaultWriter } from '../../../src/vault/index.js';
import { keepRotatedRefreshToken } from '../../../src/daemon/services/refresh-token-store.js';
import { mintToken, type MintingAuth } from '../../../src/executors/http/token-endpoint.js';
import { startFakeHttp, type FakeHttpServer } from '../../helpers/fake-http.js';
import { ManualClock } from '../../helpers/clock.js';
import { CHEAP, tempHome, utf8 } from '../vault/helpers.js';

const PASS = utf8('correct horse battery staple');
const RT1 = `CANARY-rt1-${randomBytes(12).toString('base64url')}`;

describe('oauth_refresh_token: refresh grant, rotation written back to the vault', () => {
  let http: FakeHttpServer;
  let auth: MintingAuth;
  /** The refresh token the endpoint returns next (null: none). */
  let rotateTo: string | null = null;
  const clock = new ManualClock('2026-12-01T10:00:00Z');
  const opts = { ...CHEAP, clock };

  before(async () => {
    http = await startFakeHttp();
    http.route('/token', (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ access_token: `CANARY-at-${randomBytes(9).toString('hex')}`, token_type: 'Bearer', expires_in: 600, ...(rotateTo === null ? {} : { refresh_token: rotateTo }) }));
    });
    auth = { kind: 'oauth_refresh_token', tokenUrl: `${http.origin}/token`, scopes: [] };
  });
  after(async () => http.close());

  it('rotates, keeps the newest, keeps the old when none is returned, and never overwrites an operator rotate', async (t) => {
    const home = tempHome(t);
    await createVault(home.vault, PASS, CHEAP);
    await withVaultWriter(home.vault, PASS, (v) => v.add({ name: 'rt', kind: 'oauth_refresh_token', fields: { client_id: 'public-app' }, secret: { refresh_token: utf8(RT1) } }), CHEAP);
    const held = await openVault(home.vault, PASS, CHEAP);
    const refreshOnce = async (): Promise<string | undefined> => {
      const cur = await openVault(home.vault, PASS, CHEAP);
      const cred = cur.get('rt')!;
      const minted = await mintToken(cred, auth, { allowPrivate: true, now: () => clock.now(), learn: () => Promise.resolve() });
      if (minted.refreshToken !== undefined) await keepRotatedRefreshToken(home.vault, held, 'rt', cred.secret['refresh_token']!, minted.refreshToken, opts);
      const after = await openVault(home.vault, PASS, CHEAP);
      const stored = Buffer.from(after.get('rt')!.secret['refresh_token']!).toString();
      cur.lock();
      after.lock();
      return stored;
    };

    const rt2 = `CANARY-rt2-${randomBytes(12).toString('base64url')}`;
    rotateTo = rt2;
    assert.equal(await refreshOnce(), rt2, 'the rotated refresh token is saved');
    assert.equal(http.requests.at(-1)!.body.toString(), `grant_type=refresh_token&refresh_token=${RT1}&client_id=public-app`, 'a public client: client_id in the body, no Basic');
    assert.equal(http.header(http.requests.length - 1, 'authorization'), undefined);

    rotateTo = null;
    assert.equal(await refreshOnce(), rt2, 'no refresh token returned: the old one stays');
    assert.equal(http.requests.at(-1)!.body.toString(), `grant_type=refresh_token&refresh_token=${rt2}&client_id=public-app`, 'the newest one is the one sent');

    // The operator rotated meanwhile: the daemon's write is skipped.
    const operators = `CANARY-op-${randomBytes(12).toString('base64url')}`;
    await withVaultWriter(home.vault, PASS, (v) => v.rotate('rt', { refresh_token: utf8(operators) }), CHEAP);
    assert.equal(await keepRotatedRefreshToken(home.vault, held, 'rt', utf8(rt2), utf8('CANARY-late'), opts), 'changed_meanwhile');
    const final = await openVault(home.vault, PASS, CHEAP);
    assert.equal(Buffer.from(final.get('rt')!.secret['refresh_token']!).toString(), operators);
    final.lock();
    held.lock();
  });

  it('a confidential client authenticates with HTTP Basic', async () => {
    rotateTo = null;
    const cred = { meta: { name: 'rt', kind: 'oauth_refresh_token' as const, fields: { client_id: 'app' } }, secret: { refresh_token: utf8(RT1), client_secret: utf8('CANARY-cs') } };
    await mintToken(cred, auth, { allowPrivate: true, now: () => clock.now(), learn: () => Promise.resolve() });
    assert.equal(http.header(http.requests.length - 1, 'authorization'), `Basic ${Buffer.from('app:CANARY-cs').toString('base64')}`);
    assert.equal(http.requests.at(-1)!.body.toString(), `grant_type=refresh_token&refresh_token=${RT1}`);
  });
});
