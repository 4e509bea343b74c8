// @subject time: the GitHub App JWT's expiry (run again a year ahead by .ci/run)
/**
 * The GitHub App JWT is a secret (it acts as the whole App for nine minutes):
 * mintToken hands it to `learn` with its `exp` before the token request is
 * sent, so the redactor covers it in every form it covers any secret in; a
 * `learn` that fails sends nothing (CREDENTIAL_UNAVAILABLE, no request in
 * the endpoint's log).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mintToken, type MintingAuth } from '../../../../src/executors/http/token-endpoint.js';
import { createRedactor, injectedForms } from '../../../../src/redaction/index.js';
import { isPosternError } from '../../../../src/rules/errors.js';
import { startFakeHttp, type FakeHttpServer } from '../../../helpers/fake-http.js';
import { ManualClock } from '../../../helpers/clock.js';
import { encodingsOf } from '../../../helpers/cli.js';

const PEM = Buffer.from(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs1', format: 'pem' }).toString());
const cred = { meta: { name: 'gh-app', kind: 'github_app' as const, fields: { app_id: '7', installation_id: '9' } }, secret: { private_key: PEM } };

describe('the GitHub App JWT is learnt before it is sent', () => {
  let http: FakeHttpServer;
  let auth: MintingAuth;
  const clock = new ManualClock('2026-12-01T12:00:00Z');
  before(async () => {
    http = await startFakeHttp();
    http.route('/app/installations/9/access_tokens', (_req, res) => {
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ token: 'ghs_CANARYinstallation0001', expires_at: '2026-12-01T13:00:00Z' }));
    });
    auth = { kind: 'github_app', api: http.origin };
  });
  after(() => http.close());

  it('learn sees the exact JWT sent, with its exp, before the request; the redactor then covers it raw and encoded', async () => {
    const learnt: { jwt: string; until: string | null; requestsBefore: number }[] = [];
    const minted = await mintToken(cred, auth, {
      allowPrivate: true,
      now: () => clock.now(),
      learn: (value, until) => {
        learnt.push({ jwt: Buffer.from(value).toString(), until: until?.toISOString() ?? null, requestsBefore: http.requests.length });
        return Promise.resolve();
      },
    });
    assert.equal(Buffer.from(minted.token).toString(), 'ghs_CANARYinstallation0001');
    const sent = /^Bearer (.+)$/.exec(http.header(0, 'authorization') ?? '')?.[1];
    assert.deepEqual(learnt, [{ jwt: sent, until: '2026-12-01T12:09:00.000Z', requestsBefore: 0 }]);
    const jwt = learnt[0]!.jwt;
    const redactor = createRedactor(injectedForms({ meta: cred.meta, secret: { access_token: Buffer.from(jwt) } }));
    for (const form of [...encodingsOf(jwt), `Bearer ${jwt}`, jwt.replace(/(.{40})/g, '$1\r\n')]) {
      const out = redactor.redactText(`echo: ${form} .`);
      assert.ok(!out.includes(jwt) && !encodingsOf(jwt).some((f) => out.includes(f)), `a form of the JWT survived: ${out.slice(0, 60)}`);
      assert.match(out, /\[REDACTED:gh-app\]/);
    }
  });

  it('a learn that fails sends nothing', async () => {
    const before = http.requests.length;
    await assert.rejects(
      mintToken(cred, auth, { allowPrivate: true, now: () => clock.now(), learn: () => Promise.reject(new Error('disk full')) }),
      (e: unknown) => isPosternError(e, 'CREDENTIAL_UNAVAILABLE') && e.sideEffectStarted === false,
    );
    assert.equal(http.requests.length, before, 'no token request left');
  });
});
