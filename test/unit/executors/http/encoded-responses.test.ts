/**
 * Class 4 through the real HTTP executor and the daemon's result shaping,
 * against a real loopback server: a target that echoes the credential
 * compressed although Postern asked for identity (gzip, deflate — wrapped
 * and raw —, br, stacked, as a transfer coding), a decompression bomb, a
 * coding that cannot be inspected, base64 wrapped in lines, and a secret
 * placed at the response cap at every offset.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import zlib from 'node:zlib';
import { stringify } from 'yaml';
import { parseCatalog, type Revision } from '../../../../src/contracts/index.js';
import { shapeResult } from '../../../../src/daemon/pipeline/stages/outcome/result.js';
import type { Trail } from '../../../../src/daemon/pipeline/trail.js';
import { executeHttp, type HttpCredential, type HttpRequestSpec } from '../../../../src/executors/http/index.js';
import { createRedactor, injectedForms, type Redactor } from '../../../../src/redaction/index.js';
import type { FakeHttpServer } from '../../../helpers/fake-http.js';
import { startFakeHttp } from '../../../helpers/fake-http.js';
import { credentials, spec } from './support.js';

const CODERS: Readonly<Record<string, (b: Buffer) => Buffer>> = {
  gzip: (b) => zlib.gzipSync(b),
  'x-gzip': (b) => zlib.gzipSync(b),
  deflate: (b) => zlib.deflateSync(b),
  br: (b) => zlib.brotliCompressSync(b),
};
/** The raw-deflate flavour some servers send as `deflate`. */
const rawDeflate = (b: Buffer): Buffer => zlib.deflateRawSync(b);

const trail = { callId: 'call-1', currentRevision: 1 } as unknown as Trail;

function revision(origin: string): Revision {
  const text = stringify({
    targets: { api: { http: { origin, credential: 'c', auth: 'bearer', allow_private: true } } },
    tools: { get: { description: 'Get.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: { type: 'object', properties: {} }, http: { target: 'api', method: 'GET', path: '/x' } }] } },
  });
  return parseCatalog(text, 'catalog.yaml').tools.get('get')!.current;
}

/** What the agent would receive for one call: executor, then the daemon's redaction and shaping. */
async function agentSees(srv: FakeHttpServer, cred: HttpCredential, s: HttpRequestSpec, maxResponseBytes?: number): Promise<{ facts: Record<string, unknown>; text: string; redactor: Redactor }> {
  const redactor = createRedactor(injectedForms(cred));
  const res = await executeHttp(s, { credential: cred, allowPrivate: true, readPastCapBytes: redactor.readPastCapBytes, ...(maxResponseBytes === undefined ? {} : { maxResponseBytes }) });
  const shaped = shapeResult({ kind: 'http', result: res }, revision(srv.origin), redactor, trail);
  const facts = shaped.result.structuredContent as Record<string, unknown>;
  return { facts, text: JSON.stringify(shaped.result), redactor };
}

/** The request as the target saw it: every header and the URL (so query credentials are echoed too). */
function echoOf(req: { rawHeaders: string[]; url?: string | undefined }): Buffer {
  return Buffer.from(JSON.stringify({ url: req.url, headers: req.rawHeaders }));
}

function send(res: ServerResponse, headers: Record<string, string>, body: Buffer): void {
  res.writeHead(200, { 'content-type': 'application/json', ...headers }).end(body);
}

describe('HTTP responses in codings Postern did not ask for', () => {
  let srv: FakeHttpServer;
  before(async () => {
    srv = await startFakeHttp();
    srv.route('/coded', (req, res) => {
      const q = new URL(req.url ?? '/', 'http://x').searchParams;
      const names = (q.get('coding') ?? '').split(',');
      let body = echoOf(req);
      for (const name of names) body = name === 'raw-deflate' ? rawDeflate(body) : CODERS[name]!(body);
      const header = names.map((n) => (n === 'raw-deflate' ? 'deflate' : n)).join(', ');
      send(res, q.get('via') === 'transfer' ? { 'transfer-encoding': `${header}, chunked` } : { 'content-encoding': header }, body);
    });
    srv.route('/bomb', (_req, res) => {
      // 64 MiB of zeros, then the token: 64 KiB on the wire.
      res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
      const gz = zlib.createGzip();
      gz.pipe(res);
      const zeros = Buffer.alloc(1024 * 1024);
      const write = (left: number): void => {
        if (left === 0) {
          gz.end('tok_CANARY_bearer_9f8e7d');
          return;
        }
        if (gz.write(zeros)) write(left - 1);
        else gz.once('drain', () => write(left - 1));
      };
      res.on('close', () => gz.destroy());
      write(64);
    });
    srv.route('/gzfile', (req, res) => {
      const what = new URL(req.url ?? '/', 'http://x').searchParams.get('what');
      const inner = what === 'echo' ? echoOf(req) : what === 'big' ? Buffer.alloc(4 * 1024 * 1024) : Buffer.from('just a file');
      res.writeHead(200, { 'content-type': what === 'echo' ? 'application/octet-stream' : 'application/gzip' }).end(zlib.gzipSync(inner));
    });
    srv.route('/opaque', (req, res) => {
      const q = new URL(req.url ?? '/', 'http://x').searchParams;
      const coding = q.get('coding') ?? 'zstd';
      const body = coding === 'corrupt' ? Buffer.concat([zlib.gzipSync(echoOf(req)).subarray(0, 12), Buffer.alloc(40, 0xa5)]) : echoOf(req);
      send(res, { 'content-encoding': coding === 'corrupt' ? 'gzip' : coding, 'x-request-id': 'r-1' }, body);
    });
  });
  after(() => srv.close());

  const codings = ['gzip', 'x-gzip', 'deflate', 'raw-deflate', 'br', 'gzip,br', 'br,deflate,gzip'];
  for (const kind of ['bearer', 'basic', 'header', 'query'] as const) {
    for (const coding of codings) {
      for (const via of ['content', 'transfer']) {
        it(`${kind}: a ${coding} ${via}-coded echo is decoded, then redacted`, async () => {
          const { facts, text, redactor } = await agentSees(srv, credentials[kind], spec(srv.origin, { path: '/coded', query: [['coding', coding], ['via', via]] }));
          assert.equal(facts['status'], 200);
          assert.notEqual(facts['body_encoding'], 'base64', 'no compressed bytes come back');
          assert.equal(facts['decoded_from'], coding.split(',').reverse().join(', ').replace('raw-deflate', 'deflate').replace('x-gzip', 'gzip'));
          assert.ok(text.includes(`[REDACTED:${credentials[kind].meta.name}]`), text);
          assert.ok(!text.includes('CANARY'), text);
          assert.equal(redactor.findSecret(facts), false);
        });
      }
    }
  }

  it('a decompression bomb is cut at the cap, says so, and its tail is never reached', async () => {
    const cap = 256 * 1024;
    const { facts, text } = await agentSees(srv, credentials.bearer, spec(srv.origin, { path: '/bomb' }), cap);
    assert.equal(facts['truncated'], true);
    assert.equal(facts['decoded_from'], 'gzip');
    assert.equal(facts['body_encoding'], 'text');
    assert.ok(String(facts['body']).length <= cap);
    assert.ok(!text.includes('CANARY'));
  });

  for (const kind of ['bearer', 'header', 'query'] as const) {
    it(`${kind}: a gzip file (no content-encoding) holding the echo is withheld`, async () => {
      const { facts, text } = await agentSees(srv, credentials[kind], spec(srv.origin, { path: '/gzfile', query: [['what', 'echo']] }));
      assert.equal(facts['status'], 200);
      assert.equal(facts['body_encoding'], 'withheld');
      assert.match(String(facts['body']), /contains a secret/);
      assert.ok(!text.includes('H4sI'), 'no gzip bytes in base64');
    });
  }

  it('a gzip file without secrets comes back as it is; one too large to inspect is withheld', async () => {
    const clean = await agentSees(srv, credentials.bearer, spec(srv.origin, { path: '/gzfile', query: [['what', 'clean']] }));
    assert.equal(clean.facts['body_encoding'], 'base64');
    assert.equal(zlib.gunzipSync(Buffer.from(String(clean.facts['body']), 'base64')).toString(), 'just a file');
    const big = await agentSees(srv, credentials.bearer, spec(srv.origin, { path: '/gzfile', query: [['what', 'big']] }));
    assert.equal(big.facts['body_encoding'], 'withheld');
    assert.match(String(big.facts['body']), /could not be inspected/);
  });

  for (const [coding, why] of [
    ['zstd', /cannot be decoded/],
    ['compress', /cannot be decoded/],
    ['gzip, gzip, gzip, gzip', /stacked/],
    ['corrupt', /corrupt/],
  ] as const) {
    it(`a body in "${coding}" is withheld; status and headers are kept`, async () => {
      const { facts, text } = await agentSees(srv, credentials.header, spec(srv.origin, { path: '/opaque', query: [['coding', coding]] }));
      assert.equal(facts['status'], 200);
      assert.equal((facts['headers'] as Record<string, string>)['x-request-id'], 'r-1');
      assert.equal(facts['body_encoding'], 'withheld');
      assert.match(String(facts['body']), /^\[WITHHELD: /);
      assert.match(String(facts['body']), why);
      assert.ok(!text.includes('CANARY') && !text.includes(zlib.gzipSync(Buffer.from('x')).subarray(0, 3).toString('base64')));
    });
  }
});

describe('HTTP responses: wrapped base64 and the cap', () => {
  let srv: FakeHttpServer;
  const wrap = (s: string, width: number, eol: string): string => (s.match(new RegExp(`.{1,${width}}`, 'gs')) ?? []).join(eol);
  before(async () => {
    srv = await startFakeHttp();
    srv.route('/wrapped', (req, res) => {
      const q = new URL(req.url ?? '/', 'http://x').searchParams;
      const b64 = echoOf(req).toString('base64');
      res.writeHead(200, { 'content-type': 'text/plain' }).end(wrap(b64, Number(q.get('width')), q.get('eol') === 'crlf' ? '\r\n' : '\n'));
    });
    srv.route('/dribble', async (req, res) => {
      // The echo one byte per chunk of chunked transfer encoding, gzip-compressed or not.
      const gzip = new URL(req.url ?? '/', 'http://x').searchParams.get('gzip') === '1';
      const body = gzip ? zlib.gzipSync(echoOf(req)) : echoOf(req);
      res.writeHead(200, { 'content-type': 'text/plain', ...(gzip ? { 'content-encoding': 'gzip' } : {}) });
      for (const byte of body) if (!res.write(Buffer.from([byte]))) await new Promise((r) => res.once('drain', r));
      res.end();
    });
    srv.route('/at-cap', (req, res) => {
      const q = new URL(req.url ?? '/', 'http://x').searchParams;
      const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
      const body = Buffer.from(`${'.'.repeat(Number(q.get('pad')))}${token}${'.'.repeat(100_000)}`);
      const coding = q.get('coding');
      if (coding === 'gzip') res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' }).end(zlib.gzipSync(body));
      else res.writeHead(200, { 'content-type': 'text/plain' }).end(body);
    });
  });
  after(() => srv.close());

  for (const [width, eol] of [
    [76, 'crlf'],
    [64, 'lf'],
    [60, 'lf'],
    [33, 'crlf'],
  ] as const) {
    for (const kind of ['bearer', 'header', 'query'] as const) {
      it(`${kind}: base64 of the echo wrapped at ${width} + ${eol} is redacted`, async () => {
        const { facts, text, redactor } = await agentSees(srv, credentials[kind], spec(srv.origin, { path: '/wrapped', query: [['width', String(width)], ['eol', eol]] }));
        const unwrapped = Buffer.from(String(facts['body']).replace(/\[REDACTED:[a-z-]+\]|\s/g, ''), 'base64').toString('latin1');
        assert.ok(text.includes('[REDACTED:'), text);
        assert.ok(!unwrapped.includes('CANARY'), unwrapped);
        assert.equal(redactor.findSecret(facts), false);
      });
    }
  }

  for (const gzip of ['0', '1']) {
    it(`a body sent one byte per chunk${gzip === '1' ? ', gzip-compressed,' : ''} is redacted as a whole`, async () => {
      const { facts, text } = await agentSees(srv, credentials.query, spec(srv.origin, { path: '/dribble', query: [['gzip', gzip]] }));
      assert.ok(String(facts['body']).includes('[REDACTED:api-query]'), text);
      assert.ok(!text.includes('CANARY'), text);
    });
  }

  for (const coding of ['identity', 'gzip']) {
    it(`a token moved byte by byte across the cap (${coding}) leaks nothing`, async () => {
      const cap = 4096;
      const token = 'tok_CANARY_bearer_9f8e7d';
      const leaked = new Set<string>();
      for (let pad = cap - token.length - 1; pad <= cap + 1; pad++) {
        const { facts } = await agentSees(srv, credentials.bearer, spec(srv.origin, { path: '/at-cap', query: [['pad', String(pad)], ['coding', coding]] }), cap);
        assert.equal(facts['truncated'], true);
        const body = String(facts['body']);
        assert.ok(body.length <= cap, `${pad}: ${body.length}`);
        const tail = body.replace(/^\.*/, '').replace(/\.*$/, '');
        if (tail !== '' && tail !== '[REDACTED:api-bearer]') leaked.add(tail);
      }
      assert.deepEqual([...leaked], []);
    });
  }
});

describe('HTTP responses: JSON nested 5,000 deep', () => {
  let srv: FakeHttpServer;
  before(async () => {
    srv = await startFakeHttp();
    srv.route('/deep', (req, res) => {
      const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
      res.writeHead(201, { 'content-type': 'application/json' }).end(`${'{"a":['.repeat(5000)}"${token}"${']}'.repeat(5000)}`);
    });
  });
  after(() => srv.close());

  it('is kept as text: the call answers with its facts, the token redacted', async () => {
    const { facts, text } = await agentSees(srv, credentials.bearer, spec(srv.origin, { method: 'POST', path: '/deep' }));
    assert.equal(facts['status'], 201);
    assert.equal(facts['body_encoding'], 'text');
    assert.ok(String(facts['body']).includes('[REDACTED:api-bearer]'));
    assert.ok(!text.includes('CANARY'));
  });
});
