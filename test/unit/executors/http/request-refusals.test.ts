import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { executeHttp, RESERVED_HEADERS } from '../../../../src/executors/http/index.js';
import type { HttpExecOptions, HttpRequestSpec } from '../../../../src/executors/http/index.js';
import type { FakeHttpServer } from '../../../helpers/fake-http.js';
import { startFakeHttp } from '../../../helpers/fake-http.js';
import { credentials, errorText, refusal, spec } from './support.js';

/** Each row must be refused with INPUT_INVALID and leave no request and no connection behind. */
describe('requests refused before anything is sent', () => {
  let srv: FakeHttpServer;
  before(async () => {
    srv = await startFakeHttp();
  });
  after(async () => {
    await srv.close();
    assert.equal(srv.requests.length, 0, 'a refused request reached the server');
    assert.equal(srv.connections, 0, 'a refused request opened a connection');
  });

  type Row = [string, (origin: string) => HttpRequestSpec, Partial<HttpExecOptions>?];
  const h = (headers: [string, string][]) => (o: string) => spec(o, { headers });
  const rows: Row[] = [
    ['CRLF in a header value', h([['X-A', 'ok\r\nX-Injected: 1']])],
    ['LF in a header value', h([['X-A', 'ok\nX-Injected: 1']])],
    ['CR in a header value', h([['X-A', 'ok\rX']])],
    ['NUL in a header value', h([['X-A', 'ok\u0000x']])],
    ['another control byte in a header value', h([['X-A', 'ok\u001bx']])],
    ['a non-Latin-1 header value', h([['X-A', 'ok €']])],
    ['CRLF in a header name', h([['X-A\r\nX-Injected', '1']])],
    ['a space in a header name', h([['X A', '1']])],
    ['a colon in a header name', h([['X-A:', '1']])],
    ['an empty header name', h([['', '1']])],
    ...[...RESERVED_HEADERS].flatMap((name): Row[] => [
      [`reserved header ${name}`, h([[name, 'v']])],
      [`reserved header ${name.toUpperCase()}`, h([[name.toUpperCase(), 'v']])],
    ]),
    ['a duplicate Authorization (mixed case) next to a bearer credential', h([['aUtHoRiZaTiOn', 'Bearer mine']]), { credential: credentials.bearer }],
    ['the credential header of an http_header credential', h([['X-Api-Key', 'mine']]), { credential: credentials.header }],
    ['the credential header in another case', h([['x-api-key', 'mine']]), { credential: credentials.header }],
    ['the credential query parameter', (o) => spec(o, { query: [['api_key', 'mine']] }), { credential: credentials.query }],
    ['the credential query parameter in another case', (o) => spec(o, { query: [['API_KEY', 'mine']] }), { credential: credentials.query }],
    ['a custom idempotency header', h([['X-Idem', 'mine']]), { idempotencyKey: { header: 'X-Idem', value: 'k' } }],
    ['content-type next to a body', (o) => spec(o, { method: 'POST', headers: [['Content-Type', 'text/x']], body: { contentType: 'application/json', bytes: Buffer.from('{}') } })],
    ['CRLF in the body content type', (o) => spec(o, { method: 'POST', body: { contentType: 'text/plain\r\nX-Injected: 1', bytes: Buffer.from('x') } })],
    ['CRLF in the idempotency key', h([]), { idempotencyKey: { header: 'Idempotency-Key', value: 'k\r\nX-Injected: 1' } }],
    ['a reserved idempotency header name', h([]), { idempotencyKey: { header: 'Host', value: 'k' } }],
    ['CRLF in the method', (o) => spec(o, { method: 'GET /x HTTP/1.1\r\nX' })],
    ['TRACE (reflects the credential)', (o) => spec(o, { method: 'TRACE' })],
    ['CONNECT', (o) => spec(o, { method: 'connect' })],
    ['a path without leading slash', (o) => spec(o, { path: 'echo' })],
    ['a path with a space', (o) => spec(o, { path: '/a b' })],
    ['a path with CRLF', (o) => spec(o, { path: '/a\r\nX-Injected: 1' })],
    ['a path with a query', (o) => spec(o, { path: '/echo?x=1' })],
    ['a path with a fragment', (o) => spec(o, { path: '/echo#x' })],
    ['a path with ..', (o) => spec(o, { path: '/a/../b' })],
    ['a path with encoded ..', (o) => spec(o, { path: '/a/%2E%2e/b' })],
    ['a protocol-relative path', (o) => spec(o, { path: '//evil.example/x' })],
    ['a malformed percent escape', (o) => spec(o, { path: '/a%zz' })],
    ['a lone surrogate in the query', (o) => spec(o, { query: [['q', '\ud800']] })],
    ['an origin with a path', (o) => spec(`${o}/x`)],
    ['an origin with userinfo', (o) => spec(o.replace('//', '//user:pw@'))],
    ['an origin spelled as a decimal IPv4 (not normalized)', (o) => spec(o.replace('127.0.0.1', '2130706433'))],
    ['an origin with an explicit default port (not normalized)', () => spec('http://127.0.0.1:80')],
    ['an origin with a trailing slash (not normalized)', (o) => spec(`${o}/`)],
    ['an origin with a tab in the host', (o) => spec(o.replace('127.0', '127\t.0'))],
    ['a non-http origin', () => spec('ftp://127.0.0.1')],
    ['a zero response cap', h([]), { maxResponseBytes: 0 }],
    ['a negative timeout', h([]), { timeouts: { headersMs: -1 } }],
  ];

  for (const [name, build, extra] of rows) {
    it(`refuses ${name}`, async () => {
      const e = await refusal(executeHttp(build(srv.origin), { credential: null, allowPrivate: true, ...extra }), 'INPUT_INVALID');
      assert.equal(e.sideEffectStarted, false);
      assert.ok(!/Injected|mine/.test(errorText(e)), errorText(e));
    });
  }
});

describe('requests that are allowed', () => {
  let srv: FakeHttpServer;
  before(async () => {
    srv = await startFakeHttp();
  });
  after(() => srv.close());

  it('sends agent headers, duplicates of ordinary headers and the body unchanged', async () => {
    const res = await executeHttp(
      spec(srv.origin, {
        method: 'PUT',
        path: '/echo/a%7Eb',
        headers: [['Accept', 'application/json'], ['X-Tag', 'one'], ['x-tag', 'two']],
        body: { contentType: 'application/json', bytes: Buffer.from('{"a":1}') },
      }),
      { credential: null, allowPrivate: true },
    );
    assert.equal(res.status, 404); // no route for /echo/a%7Eb: the path went out verbatim (not re-encoded to ~)
    const got = srv.requests[0];
    assert.equal(got?.method, 'PUT');
    assert.equal(got?.url, '/echo/a%7Eb');
    assert.equal(got?.body.toString(), '{"a":1}');
    assert.deepEqual(got?.headers.filter(([k]) => k.toLowerCase() === 'x-tag').map(([, v]) => v), ['one', 'two']);
    assert.equal(srv.header(0, 'content-type'), 'application/json');
    assert.equal(srv.header(0, 'accept-encoding'), 'identity');
    assert.match(srv.header(0, 'user-agent') ?? '', /^postern\//);
  });
});
