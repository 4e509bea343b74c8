/**
 * The HTTP listener's answer to a body over the size rule (THREATS 14; README
 * "The HTTP listener"), over loopback with real HTTP clients (undici and
 * node:http), for bodies of 7 and 60 MiB sent with a Content-Length and
 * chunked: the client always receives the answer — 413 with the listener's
 * error envelope (REQUEST_TOO_LARGE), or, for a `tools/call` whose id is seen,
 * the REQUEST_TOO_LARGE tool result — never a reset connection; the
 * connection is then closed, and the listener serves the next request.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { request as nodeRequest } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { request as undiciRequest } from 'undici';
import { stringify } from 'yaml';
import { parseCatalog } from '../../../src/contracts/index.js';
import { createVault, openVault, withVaultWriter } from '../../../src/vault/index.js';
import { openJournals, type Journals } from '../../../src/journal/index.js';
import { parseConfig } from '../../../src/daemon/services/config.js';
import { inProcessServices } from '../../../src/daemon/in-process.js';
import { startHttpListener, type HttpEndpoint } from '../../../src/daemon/http/listener.js';
import { startFakeHttp, type FakeHttpServer } from '../../helpers/fake-http.js';
import { CHEAP } from '../vault/helpers.js';
import { ManualClock } from '../../helpers/clock.js';

const TOKEN = 'listener-token-oversized-0123456789';
const MiB = 1024 * 1024;

/** A body of `size` bytes that starts like `head` and is padded with spaces inside a string, written in 64 KiB chunks. */
function* bodyChunks(head: string, size: number): Generator<Buffer> {
  const first = Buffer.from(head);
  yield first;
  const pad = Buffer.alloc(64 * 1024, 0x78);
  let left = size - first.length;
  while (left > 0) {
    const n = Math.min(left, pad.length);
    yield n === pad.length ? pad : pad.subarray(0, n);
    left -= n;
  }
}

interface Answer {
  readonly status: number;
  readonly connection: string | undefined;
  readonly body: Record<string, unknown>;
}

const headers = (port: number): Record<string, string> => ({ Host: `127.0.0.1:${port}`, Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' });

async function withUndici(port: number, head: string, size: number, framing: 'length' | 'chunked'): Promise<Answer> {
  const r = await undiciRequest(`http://127.0.0.1:${port}/mcp`, {
    method: 'POST',
    headers: { ...headers(port), ...(framing === 'length' ? { 'Content-Length': String(size) } : {}) },
    body: Readable.from(bodyChunks(head, size)),
  });
  const text = await r.body.text();
  const connection = r.headers['connection'];
  return { status: r.statusCode, connection: typeof connection === 'string' ? connection : undefined, body: JSON.parse(text) as Record<string, unknown> };
}

function withNodeHttp(port: number, head: string, size: number, framing: 'length' | 'chunked'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = nodeRequest({ host: '127.0.0.1', port, method: 'POST', path: '/mcp', agent: false, headers: { ...headers(port), ...(framing === 'length' ? { 'Content-Length': String(size) } : {}) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers['connection'], body: JSON.parse(text) as Record<string, unknown> }));
      res.on('error', reject);
    });
    req.on('error', reject);
    Readable.from(bodyChunks(head, size)).pipe(req);
  });
}

/**
 * A client that reads nothing until it has sent its whole body (as simple
 * clients do): it sees the answer only if the listener reads the rest of the
 * body instead of resetting the connection under it.
 */
async function sendThenRead(port: number, head: string, size: number, framing: 'length' | 'chunked'): Promise<Answer> {
  const s = connect(port, '127.0.0.1');
  s.pause();
  await new Promise<void>((resolve, reject) => s.once('connect', resolve).once('error', reject));
  const failed = new Promise<never>((_, reject) => s.once('error', reject));
  const write = (b: Buffer | string): Promise<void> => Promise.race([new Promise<void>((resolve) => (s.write(b) ? resolve() : s.once('drain', resolve))), failed]);
  const h = headers(port);
  const lines = [`POST /mcp HTTP/1.1`, ...Object.entries(h).map(([k, v]) => `${k}: ${v}`), framing === 'length' ? `Content-Length: ${size}` : 'Transfer-Encoding: chunked'];
  await write(`${lines.join('\r\n')}\r\n\r\n`);
  for (const c of bodyChunks(head, size)) await write(framing === 'length' ? c : Buffer.concat([Buffer.from(`${c.length.toString(16)}\r\n`), c, Buffer.from('\r\n')]));
  if (framing === 'chunked') await write('0\r\n\r\n');
  const chunks: Buffer[] = [];
  s.on('data', (c: Buffer) => chunks.push(c));
  s.resume();
  await Promise.race([new Promise<void>((resolve) => s.once('end', resolve)), failed]);
  s.destroy();
  const text = Buffer.concat(chunks).toString('utf8');
  const [top = '', body = ''] = text.split('\r\n\r\n');
  const [statusLine = '', ...headerLines] = top.split('\r\n');
  const connection = headerLines.find((l) => l.toLowerCase().startsWith('connection:'))?.slice('connection:'.length).trim();
  return { status: Number(statusLine.split(' ')[1]), connection, body: JSON.parse(body) as Record<string, unknown> };
}

describe('the HTTP listener: a body over the size rule', () => {
  let dir: string;
  let target: FakeHttpServer;
  let journals: Journals;
  let endpoint: HttpEndpoint;
  const clock = new ManualClock('2031-07-15T12:00:00Z');

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'postern-http-oversized-'));
    target = await startFakeHttp();
    const pass = Buffer.from('oversized-passphrase');
    await createVault(join(dir, 'vault.pvlt'), pass, CHEAP);
    await withVaultWriter(join(dir, 'vault.pvlt'), pass, (v) => v.add({ name: 'api-token', kind: 'http_bearer', fields: {}, secret: { token: Buffer.from('oversized-canary-token-0123') } }), CHEAP);
    const vault = await openVault(join(dir, 'vault.pvlt'), pass, CHEAP);
    const text = stringify({
      targets: { local: { http: { origin: target.origin, credential: 'api-token', auth: 'bearer', allow_private: true } } },
      tools: { echo_read: { description: 'Echo.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: { type: 'object', properties: { q: { type: 'string', maxLength: 50 } }, required: ['q'] }, http: { target: 'local', method: 'GET', path: '/echo', query: { q: '{q}' } } }] } },
    });
    journals = openJournals(join(dir, 'journal'), { clock });
    const svc = inProcessServices({ vault, catalog: parseCatalog(text, 'catalog.yaml'), digest: 'e'.repeat(64), journals, config: parseConfig('max_request_bytes: 1024', 'config.yaml'), clock }, { http: null });
    endpoint = await startHttpListener(svc, { port: 0, maxSessions: 4, token: TOKEN, clock, hooks: { sessionStarted: () => undefined, sessionEnded: () => undefined } });
  });
  after(async () => {
    await endpoint.close();
    journals.close();
    await target.close();
    await rm(dir, { recursive: true, force: true });
  });

  const initializeHead = '{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"pad":"';
  const callHead = '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo_read","arguments":{"q":"';
  const noIdHead = '{"params":{"pad":"';

  const cases = [
    { client: 'undici', send: withUndici },
    { client: 'node:http', send: withNodeHttp },
    { client: 'a client that reads after sending', send: sendThenRead },
  ] as const;

  for (const { client, send } of cases) {
    for (const framing of ['length', 'chunked'] as const) {
      for (const size of [7 * MiB, 60 * MiB]) {
        it(`${client}, ${framing === 'length' ? 'Content-Length' : 'chunked'}, ${size / MiB} MiB: 413 with the error envelope, not a reset`, async () => {
          const a = await send(endpoint.port, initializeHead, size, framing);
          assert.equal(a.status, 413, JSON.stringify(a.body));
          assert.equal(a.connection, 'close');
          const error = a.body['error'] as { code: number; message: string; data: { error_code: string; required_action: string } };
          assert.equal(a.body['id'], 3);
          assert.equal(error.data.error_code, 'REQUEST_TOO_LARGE');
          assert.equal(error.data.required_action, 'reduce_request');
          assert.match(error.message, /^REQUEST_TOO_LARGE: /);
        });
      }
    }
    it(`${client}: a body with no id seen is answered 413 with the envelope (id null)`, async () => {
      const a = await send(endpoint.port, noIdHead, 7 * MiB, 'chunked');
      assert.equal(a.status, 413);
      assert.equal(a.body['id'], null);
      assert.equal((a.body['error'] as { data: { error_code: string } }).data.error_code, 'REQUEST_TOO_LARGE');
    });
    it(`${client}: an oversized tools/call gets its REQUEST_TOO_LARGE tool result, nothing reaches the target`, async () => {
      const before = target.requests.length;
      const a = await send(endpoint.port, callHead, 7 * MiB, 'length');
      assert.equal(a.status, 200);
      assert.equal(a.body['id'], 9);
      const result = a.body['result'] as { isError: boolean; structuredContent: { error_code: string; side_effect_started: boolean } };
      assert.equal(result.isError, true);
      assert.equal(result.structuredContent.error_code, 'REQUEST_TOO_LARGE');
      assert.equal(result.structuredContent.side_effect_started, false);
      assert.equal(target.requests.length, before);
    });
  }

  it('serves the next request after all of them', async () => {
    const r = await undiciRequest(`http://127.0.0.1:${endpoint.port}/mcp`, {
      method: 'POST',
      headers: headers(endpoint.port),
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'after', version: '1' } } }),
    });
    await r.body.text();
    assert.equal(r.statusCode, 200);
  });
});
