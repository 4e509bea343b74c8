import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { executeHttp } from '../../../../src/executors/http/index.js';
import type { HttpCredential } from '../../../../src/executors/http/index.js';
import { createRedactor, injectedForms } from '../../../../src/redaction/index.js';
import type { FakeHttpServer } from '../../../helpers/fake-http.js';
import { startFakeHttp } from '../../../helpers/fake-http.js';
import { CANARY, credentials, errorText, NEVER_MS, refusal, spec } from './support.js';

describe('credential injection', () => {
  let srv: FakeHttpServer;
  before(async () => {
    srv = await startFakeHttp();
  });
  after(() => srv.close());

  const wire: [keyof typeof credentials, (s: FakeHttpServer, i: number) => void][] = [
    ['bearer', (s, i) => assert.equal(s.header(i, 'authorization'), `Bearer ${CANARY.token}`)],
    ['basic', (s, i) => assert.equal(s.header(i, 'authorization'), `Basic ${Buffer.from(`alice:${CANARY.password}`).toString('base64')}`)],
    ['header', (s, i) => assert.equal(s.header(i, 'x-api-key'), CANARY.header)],
    [
      'query',
      (s, i) => {
        const url = new URL(s.requests[i]?.url ?? '', 'http://x');
        assert.deepEqual(url.searchParams.getAll('api_key'), [CANARY.query]);
        assert.equal(url.searchParams.get('q'), 'a b');
      },
    ],
  ];

  for (const [kind, check] of wire) {
    it(`${kind}: the server receives the credential; the result's url does not carry it`, async () => {
      const cred = credentials[kind];
      const before = srv.requests.length;
      const res = await executeHttp(spec(srv.origin, { query: [['q', 'a b']] }), { credential: cred, allowPrivate: true });
      assert.equal(srv.requests.length, before + 1);
      check(srv, before);
      assert.equal(res.status, 200);
      assert.equal(res.side_effect_started, true);
      assert.equal(res.connected_ip, '127.0.0.1');
      const redactor = createRedactor(injectedForms(cred));
      assert.equal(redactor.findSecret(res.url), false, res.url);
      if (kind === 'query') assert.equal(res.url, `${srv.origin}/echo?q=a%20b&api_key=[REDACTED:api-query]`);
      else assert.equal(res.url, `${srv.origin}/echo?q=a%20b`);
    });

    it(`${kind}: an echoing target's reply is fully redactable with injectedForms`, async () => {
      const cred = credentials[kind];
      const res = await executeHttp(spec(srv.origin, { method: 'POST' }), { credential: cred, allowPrivate: true });
      assert.equal(res.body.kind, 'json');
      const redactor = createRedactor(injectedForms(cred));
      assert.equal(redactor.findSecret(res), true, 'the echo should contain the credential');
      const clean = redactor.redactValue(res);
      assert.equal(redactor.findSecret(clean), false);
      assert.ok(!JSON.stringify(clean).includes('CANARY'), JSON.stringify(clean));
    });

    it(`${kind}: errors never carry the credential`, async () => {
      const cred = credentials[kind];
      const redactor = createRedactor(injectedForms(cred));
      const timeout = await refusal(
        executeHttp(spec(srv.origin, { path: '/slow-headers', query: [['ms', NEVER_MS]] }), {
          credential: cred,
          allowPrivate: true,
          timeouts: { headersMs: 100 },
        }),
        'TARGET_TIMEOUT',
      );
      const refused = await refusal(executeHttp(spec('http://127.0.0.1:1'), { credential: cred, allowPrivate: true }), 'TARGET_ERROR');
      for (const e of [timeout, refused]) {
        assert.equal(redactor.findSecret(errorText(e)), false, errorText(e));
        assert.ok(!errorText(e).includes('CANARY'));
        assert.equal(e.cause, undefined);
      }
    });
  }

  it('sends the idempotency key under the configured header', async () => {
    const before = srv.requests.length;
    await executeHttp(spec(srv.origin, { method: 'POST' }), {
      credential: credentials.bearer,
      allowPrivate: true,
      idempotencyKey: { header: 'Idempotency-Key', value: 'k-123' },
    });
    assert.equal(srv.header(before, 'idempotency-key'), 'k-123');
  });

  it('refuses credentials that cannot go on the wire, before anything is sent', async () => {
    const bad: HttpCredential[] = [
      { meta: { name: 'x', kind: 'http_bearer' as const, fields: {} }, secret: { token: Buffer.from('a\r\nInjected: 1') } },
      { meta: { name: 'x', kind: 'http_basic' as const, fields: { username: 'a:b' } }, secret: { password: Buffer.from('pw') } },
      { meta: { name: 'x', kind: 'http_header' as const, fields: { header: 'Host' } }, secret: { value: Buffer.from('v') } },
      { meta: { name: 'x', kind: 'http_header' as const, fields: { header: 'X Bad' } }, secret: { value: Buffer.from('v') } },
      { meta: { name: 'x', kind: 'http_query' as const, fields: {} }, secret: { value: Buffer.from('v') } },
      { meta: { name: 'x', kind: 'http_header' as const, fields: { header: 'X-Forwarded-Host' } }, secret: { value: Buffer.from('v') } },
      { meta: { name: 'x', kind: 'http_header' as const, fields: { header: 'Content_Length' } }, secret: { value: Buffer.from('v') } },
    ];
    const before = srv.requests.length;
    const connections = srv.connections;
    for (const credential of bad) {
      const e = await refusal(executeHttp(spec(srv.origin), { credential, allowPrivate: true }), 'SECRET_INVALID');
      assert.equal(e.sideEffectStarted, false);
      assert.ok(!errorText(e).includes('Injected'));
    }
    // An SSH credential is not of the wrong value but of the wrong kind.
    const ssh: HttpCredential = { meta: { name: 'x', kind: 'ssh_password' as const, fields: {} }, secret: { password: Buffer.from('v') } };
    const e = await refusal(executeHttp(spec(srv.origin), { credential: ssh, allowPrivate: true }), 'CREDENTIAL_KIND_MISMATCH');
    assert.equal(e.sideEffectStarted, false);
    assert.equal(srv.requests.length, before);
    assert.equal(srv.connections, connections);
  });
});
