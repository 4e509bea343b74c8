import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Server, Socket } from 'node:net';
import { createServer } from 'node:net';
import { executeHttp } from '../../../../src/executors/http/index.js';
import type { FakeHttpServer } from '../../../helpers/fake-http.js';
import { startFakeHttp } from '../../../helpers/fake-http.js';
import { credentials, NEVER_MS, refusal, spec } from './support.js';
import { waitFor } from '../../../helpers/wait.js';

describe('timeouts', () => {
  let srv: FakeHttpServer;
  let silent: Server;
  const held: Socket[] = [];
  before(async () => {
    srv = await startFakeHttp();
    // Accepts TCP and never speaks: a TLS handshake to it never completes.
    silent = createServer((s) => void held.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  });
  after(async () => {
    for (const s of held) s.destroy();
    await new Promise((r) => silent.close(r));
    await srv.close();
  });

  it('connect (TCP + TLS handshake): TARGET_TIMEOUT, no side effect, onRequestSent not called', async () => {
    let sent = 0;
    const port = (silent.address() as { port: number }).port;
    const e = await refusal(
      executeHttp(spec(`https://127.0.0.1:${port}`), {
        credential: credentials.bearer,
        allowPrivate: true,
        timeouts: { connectMs: 150 },
        onRequestSent: () => sent++,
      }),
      'TARGET_TIMEOUT',
    );
    assert.equal(e.details['phase'], 'connect');
    assert.equal(e.sideEffectStarted, false);
    assert.equal(sent, 0);
  });

  it('response headers: TARGET_TIMEOUT with side_effect_started, the request did arrive', async () => {
    let sent = 0;
    const before = srv.requests.length;
    const e = await refusal(
      executeHttp(spec(srv.origin, { path: '/slow-headers', query: [['ms', NEVER_MS]] }), {
        credential: credentials.bearer,
        allowPrivate: true,
        timeouts: { headersMs: 150 },
        onRequestSent: () => sent++,
      }),
      'TARGET_TIMEOUT',
    );
    assert.equal(e.details['phase'], 'headers');
    assert.equal(e.sideEffectStarted, true);
    assert.equal(sent, 1);
    assert.equal(srv.requests.length, before + 1);
  });

  it('response body: TARGET_TIMEOUT with side_effect_started', async () => {
    const e = await refusal(
      executeHttp(spec(srv.origin, { path: '/slow-body', query: [['ms', NEVER_MS]] }), {
        credential: credentials.bearer,
        allowPrivate: true,
        timeouts: { bodyMs: 150 },
      }),
      'TARGET_TIMEOUT',
    );
    assert.equal(e.details['phase'], 'body');
    assert.equal(e.sideEffectStarted, true);
  });

  it('abort before sending: no connection, no side effect', async () => {
    const connections = srv.connections;
    const e = await refusal(executeHttp(spec(srv.origin), { credential: null, allowPrivate: true, signal: AbortSignal.abort() }), 'TARGET_ERROR');
    assert.equal(e.details['reason'], 'aborted');
    assert.equal(e.sideEffectStarted, false);
    assert.equal(srv.connections, connections);
  });

  it('abort while waiting for the response: side_effect_started', async () => {
    const e = await refusal(
      executeHttp(spec(srv.origin, { path: '/slow-headers', query: [['ms', NEVER_MS]] }), {
        credential: null,
        allowPrivate: true,
        signal: AbortSignal.timeout(150),
      }),
      'TARGET_ERROR',
    );
    assert.equal(e.details['reason'], 'aborted');
    assert.equal(e.sideEffectStarted, true);
  });

  it('connection refused: TARGET_ERROR with the error code only, no side effect', async () => {
    const e = await refusal(executeHttp(spec('http://127.0.0.1:1'), { credential: credentials.bearer, allowPrivate: true }), 'TARGET_ERROR');
    assert.equal(e.details['error'], 'ECONNREFUSED');
    assert.equal(e.sideEffectStarted, false);
    assert.equal(e.message, 'the request to 127.0.0.1:1 failed (ECONNREFUSED)');
  });
});

describe('response cap and body shapes', () => {
  let srv: FakeHttpServer;
  before(async () => {
    srv = await startFakeHttp();
  });
  after(() => srv.close());

  it('truncates at the cap and aborts the download instead of buffering the rest', async () => {
    const total = 64 * 1024 * 1024;
    const res = await executeHttp(spec(srv.origin, { path: '/huge', query: [['bytes', String(total)]] }), {
      credential: null,
      allowPrivate: true,
      maxResponseBytes: 100_000,
    });
    assert.equal(res.truncated, true);
    assert.equal(res.body.kind, 'text');
    assert.equal(res.body.kind === 'text' ? res.body.value.length : 0, 100_000);
    assert.equal(res.headers['content-length'], String(total));
    // The server's response emits 'close' once the client has gone (hugeStats records it).
    await waitFor(() => srv.hugeStats.abortedByClient, () => `the server to see the client abort the download (${srv.hugeStats.bytesWritten} bytes written)`, { timeoutMs: 10_000 });
    assert.equal(srv.hugeStats.abortedByClient, true);
    assert.ok(srv.hugeStats.bytesWritten < total / 4, `server wrote ${srv.hugeStats.bytesWritten} bytes`);
  });

  it('applies a 1 MiB cap by default', async () => {
    const res = await executeHttp(spec(srv.origin, { path: '/huge', query: [['bytes', String(1024 * 1024 + 10)]] }), { credential: null, allowPrivate: true });
    assert.equal(res.truncated, true);
    assert.equal(res.body.kind === 'text' ? res.body.value.length : 0, 1024 * 1024);
  });

  it('does not flag a body exactly at the cap', async () => {
    const res = await executeHttp(spec(srv.origin, { path: '/raw', query: [['hex', '6869'], ['type', 'text/plain']] }), {
      credential: null,
      allowPrivate: true,
      maxResponseBytes: 2,
    });
    assert.deepEqual([res.truncated, res.body], [false, { kind: 'text', value: 'hi' }]);
  });

  const hex = (s: string): string => Buffer.from(s).toString('hex');
  const shapes: [string, string, string, unknown, number?][] = [
    ['JSON', hex('{"a":[1,"x"]}'), 'application/json; charset=utf-8', { kind: 'json', value: { a: [1, 'x'] } }],
    ['problem+json', hex('{"title":"t"}'), 'application/problem+json', { kind: 'json', value: { title: 't' } }],
    ['invalid JSON as text', hex('{"a":'), 'application/json', { kind: 'text', value: '{"a":' }],
    ['JSON numbers a double cannot hold, as text', hex('{"id":12345678901234567890}'), 'application/json', { kind: 'text', value: '{"id":12345678901234567890}' }],
    ['JSON numbers a double cannot hold, split by their point, as text', hex('{"x":12345678.12345678}'), 'application/json', { kind: 'text', value: '{"x":12345678.12345678}' }],
    ['JSON numbers a double holds, as JSON', hex('{"x":1234567.1234567,"y":123456789012345}'), 'application/json', { kind: 'json', value: { x: 1234567.1234567, y: 123456789012345 } }],
    ['JSON content that is not labelled JSON, as text', hex('{"a":1}'), 'text/plain', { kind: 'text', value: '{"a":1}' }],
    ['binary as base64', 'ff00fe', 'application/octet-stream', { kind: 'base64', value: '/wD+' }],
    ['UTF-8 cut inside a character, as text', hex('ééé'), 'text/plain', { kind: 'text', value: 'éé' }, 5],
    ['truncated JSON, as text', hex('{"a":"bcdef"}'), 'application/json', { kind: 'text', value: '{"a":"b' }, 7],
  ];
  for (const [name, body, type, expected, cap] of shapes) {
    it(`returns ${name}`, async () => {
      const res = await executeHttp(spec(srv.origin, { path: '/raw', query: [['hex', body], ['type', type]] }), {
        credential: null,
        allowPrivate: true,
        ...(cap === undefined ? {} : { maxResponseBytes: cap }),
      });
      assert.deepEqual(res.body, expected);
    });
  }

  it('passes on only the safe response headers', async () => {
    const res = await executeHttp(
      spec(srv.origin, {
        path: '/headers',
        query: [['x-request-id', 'r-1'], ['etag', '"v1"'], ['retry-after', '5'], ['set-cookie', 'sid=1'], ['www-authenticate', 'Basic'], ['x-secret-debug', 'y']],
      }),
      { credential: null, allowPrivate: true },
    );
    assert.equal(res.headers['x-request-id'], 'r-1');
    assert.equal(res.headers['etag'], '"v1"');
    assert.equal(res.headers['retry-after'], '5');
    for (const name of ['set-cookie', 'www-authenticate', 'x-secret-debug']) assert.equal(res.headers[name], undefined, name);
  });

  it('returns status codes as they are', async () => {
    for (const status of [201, 204, 400, 404, 500, 503]) {
      const res = await executeHttp(spec(srv.origin, { path: `/status/${status}`, method: 'POST' }), { credential: null, allowPrivate: true });
      assert.equal(res.status, status);
    }
  });
});
