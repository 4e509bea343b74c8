import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { executeHttp } from '../../../../src/executors/http/index.js';
import { HttpPool } from '../../../../src/executors/http/pool.js';
import type { HttpCredential } from '../../../../src/executors/http/index.js';
import type { FakeHttpServer } from '../../../helpers/fake-http.js';
import { startFakeHttp } from '../../../helpers/fake-http.js';
import { credentials, refusal, spec } from './support.js';

describe('HttpPool: kept-alive connections', () => {
  let srv: FakeHttpServer;
  before(async () => {
    srv = await startFakeHttp();
  });
  after(async () => {
    await srv.close();
  });

  const call = (pool: HttpPool, over: { credential?: HttpCredential | null; resolve?: (h: string) => Promise<readonly string[]>; origin?: string } = {}) => {
    let sent = 0;
    const p = executeHttp(spec(over.origin ?? srv.origin, { method: 'POST', body: { contentType: 'application/json', bytes: Buffer.from('{}') } }), {
      credential: over.credential === undefined ? credentials.bearer : over.credential,
      allowPrivate: true,
      pool,
      onRequestSent: () => sent++,
      ...(over.resolve === undefined ? {} : { resolve: over.resolve }),
    });
    return p.then((res) => ({ res, sent: () => sent }));
  };

  it('calls to the same origin with the same credential share kept-alive connections; each request is announced once', async () => {
    const pool = new HttpPool();
    const conns = srv.connections;
    const reqs = srv.requests.length;
    for (let i = 0; i < 10; i++) {
      const { res, sent } = await call(pool);
      assert.equal(res.status, 200);
      assert.equal(sent(), 1);
    }
    assert.equal(srv.requests.length, reqs + 10);
    // A call that follows at once may find the previous connection not yet marked free (undici
    // settles it a tick after the body ends) and open a second one; never more, one is always free.
    assert.ok(srv.connections - conns <= 2, `opened ${srv.connections - conns} connections for 10 calls`);
    await pool.close();
  });

  it('without a pool every call opens and closes its own connection', async () => {
    const conns = srv.connections;
    for (let i = 0; i < 2; i++) {
      const res = await executeHttp(spec(srv.origin), { credential: credentials.bearer, allowPrivate: true });
      assert.equal(res.status, 200);
    }
    assert.equal(srv.connections, conns + 2);
  });

  it('a rotated secret under the same name, another credential, or none: a connection of its own', async () => {
    const pool = new HttpPool();
    const conns = srv.connections;
    await call(pool);
    const rotated: HttpCredential = { meta: credentials.bearer.meta, secret: { token: Buffer.from('tok_CANARY_rotated') } };
    await call(pool, { credential: rotated });
    await call(pool, { credential: credentials.header });
    await call(pool, { credential: null });
    assert.equal(srv.connections, conns + 4);
    assert.equal(pool.size, 4);
    await pool.close();
  });

  it('a new DNS answer is never served by a connection to the old address', async () => {
    const pool = new HttpPool();
    const origin = `http://pooled.test:${srv.port}`;
    let answer = '127.0.0.1';
    const resolve = (): Promise<readonly string[]> => Promise.resolve([answer]);
    const reqs = srv.requests.length;
    await call(pool, { origin, resolve });
    // The server listens on 127.0.0.1 only: 127.0.0.2 refuses, so a success here would mean reuse.
    answer = '127.0.0.2';
    const e = await refusal(call(pool, { origin, resolve }));
    assert.equal(e.sideEffectStarted, false);
    assert.equal(srv.requests.length, reqs + 1);
    // A blocked address is refused before any connection, pooled or not.
    answer = '169.254.169.254';
    const blocked = await refusal(
      executeHttp(spec(origin), { credential: credentials.bearer, allowPrivate: false, pool, resolve }),
      'EGRESS_BLOCKED',
    );
    assert.equal(blocked.sideEffectStarted, false);
    assert.equal(srv.requests.length, reqs + 1);
    await pool.close();
  });

  it('retire(name) and close() end the kept connections; later calls open new ones', async () => {
    const pool = new HttpPool();
    const conns = srv.connections;
    await call(pool);
    await call(pool, { credential: credentials.header });
    assert.equal(pool.retire(credentials.bearer.meta.name), 1);
    assert.equal(pool.size, 1);
    await call(pool);
    assert.equal(srv.connections, conns + 3);
    await pool.close();
    assert.equal(pool.size, 0);
    await call(pool, { credential: credentials.header });
    assert.equal(srv.connections, conns + 4);
    await pool.close();
  });

  it('concurrent calls get connections of their own up to the limit, and every request arrives once', async () => {
    const pool = new HttpPool({ connectionsPerOrigin: 2 });
    const conns = srv.connections;
    const reqs = srv.requests.length;
    const results = await Promise.all(Array.from({ length: 6 }, () => call(pool)));
    assert.ok(results.every((r) => r.res.status === 200 && r.sent() === 1));
    assert.equal(srv.requests.length, reqs + 6);
    assert.ok(srv.connections - conns <= 2, `opened ${srv.connections - conns} connections`);
    await pool.close();
  });

  it('beyond maxOrigins the least recently used key is closed', async () => {
    const pool = new HttpPool({ maxOrigins: 2 });
    await call(pool);
    await call(pool, { credential: credentials.header });
    await call(pool, { credential: credentials.basic });
    assert.equal(pool.size, 2);
    await pool.close();
  });
});
