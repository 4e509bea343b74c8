import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { EnvHttpProxyAgent, getGlobalDispatcher, request, setGlobalDispatcher } from 'undici';
import { executeHttp } from '../../../../src/executors/http/index.js';
import type { FakeHttpServer, TestPki } from '../../../helpers/fake-http.js';
import { makeTestPki, startFakeHttp } from '../../../helpers/fake-http.js';
import { credentials, refusal, spec } from './support.js';

/** THREATS row 5: credentials never go anywhere but the fixed origin. */
describe('redirects are returned, never followed', () => {
  let a: FakeHttpServer;
  let b: FakeHttpServer;
  before(async () => {
    [a, b] = await Promise.all([startFakeHttp(), startFakeHttp()]);
  });
  after(() => Promise.all([a.close(), b.close()]));

  for (const status of [301, 302, 303, 307, 308]) {
    it(`returns a ${status} with its location; the other origin receives nothing`, async () => {
      const to = `${b.origin}/echo`;
      const res = await executeHttp(spec(a.origin, { path: '/redirect', query: [['to', to], ['status', String(status)]] }), {
        credential: credentials.bearer,
        allowPrivate: true,
      });
      assert.equal(res.status, status);
      assert.equal(res.headers['location'], to);
      assert.equal(b.requests.length, 0);
      assert.equal(b.connections, 0);
    });
  }
});

describe('proxy settings are ignored', () => {
  let target: FakeHttpServer;
  let proxy: FakeHttpServer;
  const names = ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'all_proxy', 'NO_PROXY', 'no_proxy'];
  const saved = new Map<string, string | undefined>();
  const dispatcher = getGlobalDispatcher();
  let envAgent: EnvHttpProxyAgent;
  before(async () => {
    [target, proxy] = await Promise.all([startFakeHttp(), startFakeHttp()]);
    for (const n of names) saved.set(n, process.env[n]);
    for (const n of names) delete process.env[n];
    for (const n of names.slice(0, 6)) process.env[n] = proxy.origin;
    envAgent = new EnvHttpProxyAgent(); // reads the proxy variables now
    setGlobalDispatcher(envAgent);
  });
  after(async () => {
    setGlobalDispatcher(dispatcher);
    await envAgent.destroy();
    for (const [n, v] of saved) {
      if (v === undefined) delete process.env[n];
      else process.env[n] = v;
    }
    await Promise.all([target.close(), proxy.close()]);
  });

  it('goes straight to the target while the environment and the global dispatcher point at a proxy', async () => {
    const res = await executeHttp(spec(target.origin), { credential: credentials.bearer, allowPrivate: true });
    assert.equal(res.status, 200);
    assert.equal(target.requests.length, 1);
    assert.equal(proxy.requests.length, 0);
    assert.equal(proxy.connections, 0);
  });

  it('(control) the global dispatcher really would have used the proxy', async () => {
    // The fake proxy refuses tunnels, so this request fails: what matters is that it reached the proxy.
    await request(`${target.origin}/json`, { headersTimeout: 2000 }).then(
      (res) => res.body.dump(),
      () => undefined,
    );
    assert.ok(proxy.requests.length > 0);
    assert.equal(target.requests.length, 1);
  });
});

describe('TLS verification', () => {
  let pki: TestPki;
  let trusted: FakeHttpServer;
  let selfSigned: FakeHttpServer;
  before(async () => {
    pki = makeTestPki(['postern-test.example', '127.0.0.1']);
    [trusted, selfSigned] = await Promise.all([startFakeHttp({ tls: { key: pki.key, cert: pki.cert } }), startFakeHttp({ tls: pki.selfSigned })]);
  });
  after(async () => {
    await Promise.all([trusted.close(), selfSigned.close()]);
    pki.cleanup();
  });

  it('refuses a certificate nobody trusts; nothing is sent', async () => {
    const e = await refusal(executeHttp(spec(selfSigned.origin), { credential: credentials.bearer, allowPrivate: true }), 'TARGET_ERROR');
    assert.equal(e.details['phase'], 'tls');
    assert.equal(e.sideEffectStarted, false);
    assert.equal(selfSigned.requests.length, 0);
  });

  it('still refuses it when NODE_TLS_REJECT_UNAUTHORIZED=0', async () => {
    const before = process.env['NODE_TLS_REJECT_UNAUTHORIZED'];
    process.env['NODE_TLS_REJECT_UNAUTHORIZED'] = '0';
    try {
      await refusal(executeHttp(spec(selfSigned.origin), { credential: credentials.bearer, allowPrivate: true }), 'TARGET_ERROR');
      assert.equal(selfSigned.requests.length, 0);
    } finally {
      if (before === undefined) delete process.env['NODE_TLS_REJECT_UNAUTHORIZED'];
      else process.env['NODE_TLS_REJECT_UNAUTHORIZED'] = before;
    }
  });

  it('verifies the host name against the certificate while connecting to the pinned IP (child process trusting a test CA)', async () => {
    const port = trusted.port;
    const origins = [`https://postern-test.example:${port}`, `https://127.0.0.1:${port}`, `https://wrong-name.example:${port}`];
    const child = join(import.meta.dirname, 'fixtures', 'tls-client.ts');
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', child], {
      env: { ...process.env, NODE_EXTRA_CA_CERTS: pki.caFile, TARGET_ORIGINS: JSON.stringify(origins) },
    });
    const rows = stdout.trim().split('\n').map((l) => JSON.parse(l) as { origin: string; status?: number; code?: string; details?: Record<string, unknown> });
    assert.deepEqual(rows.map((r) => r.status ?? r.code), [200, 200, 'TARGET_ERROR']);
    assert.equal(rows[2]?.details?.['error'], 'ERR_TLS_CERT_ALTNAME_INVALID');
    assert.equal(trusted.requests.length, 2);
    assert.equal(trusted.header(0, 'host'), `postern-test.example:${port}`);
  });
});
