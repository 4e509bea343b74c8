/**
 * The optional Streamable HTTP listener (issue 11 §2; DESIGN §3; THREATS 12,
 * 14), against the built daemon with a real HTTP target on loopback that logs
 * every request:
 *   (a) the SDK 2.x and (b) the SDK 1.x Streamable HTTP clients list and call
 *       a tool through it; each session is journaled with transport "http" and
 *       ends on DELETE;
 *   (c) no token / a wrong token → 401, and nothing reaches the target;
 *   (d) a foreign Host → refused (DNS rebinding); (e) a foreign Origin →
 *       refused; (f) a text/plain POST (a browser "simple request") and a CORS
 *       preflight → refused, and no response carries CORS headers;
 *   (g) an oversized body → refused, the daemon serves the next request;
 *   the session limit → 503; bad bodies → JSON-RPC errors, never a crash;
 *   (h) off by default — and enabled in config.yaml without the operator's
 *       authorization it stays closed: no TCP port is bound;
 *   (i) it binds 127.0.0.1 only (the daemon's listening sockets, read from /proc);
 *   a catalog adopted while a session is open reaches it as tools/list_changed.
 * Raw requests use node:http (fetch cannot set Host); nothing sleeps.
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client } from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as StreamableHttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { httpFixture } from '../helpers/fixture.js';

const TOKEN_SECRET = 'CANARY-http-listener-target-token-5d1f';

/** The daemon's listening TCP sockets (address and port), from /proc: its socket fds matched with the LISTEN rows. */
function listeningSockets(pid: number): { addr: string; port: number }[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m?.[1] !== undefined) inodes.add(m[1]);
    } catch {
      // an fd closed while reading
    }
  }
  const out: { addr: string; port: number }[] = [];
  for (const [file, v6] of [['/proc/net/tcp', false], ['/proc/net/tcp6', true]] as const) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== '0A' || !inodes.has(f[9] ?? '')) continue; // 0A = LISTEN
      const [hex = '', portHex = '0'] = (f[1] ?? '').split(':');
      const addr = v6 ? `v6:${hex}` : [3, 2, 1, 0].map((i) => parseInt(hex.slice(i * 2, i * 2 + 2), 16)).join('.');
      out.push({ addr, port: parseInt(portHex, 16) });
    }
  }
  return out;
}

interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** Sessions opened by raw requests, ended after each test (the listener allows only so many). */
const opened = new Set<string>();

function raw(port: number, o: { method?: string; path?: string; headers?: Record<string, string>; body?: string | Buffer }): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method: o.method ?? 'POST', path: o.path ?? '/mcp', headers: o.headers ?? {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      const sid = res.headers['mcp-session-id'];
      if (typeof sid === 'string') opened.add(sid);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(o.body);
  });
}

/** A GET SSE stream held open; resolves once its response headers arrived. */
function openStream(sid: string): Promise<{ status: number; close(): void }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: streamPort, method: 'GET', path: '/mcp', headers: { ...streamAuth, Accept: 'text/event-stream', 'Mcp-Session-Id': sid, 'Mcp-Protocol-Version': '2025-11-25' } }, (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}
let streamPort = 0;
let streamAuth: Record<string, string> = {};

const initBody = (id = 1): string => JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw-http', version: '1' } } });
const callBody = (id: number, q: string): string => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo_read', arguments: { q } } });
const errorCode = (r: RawResponse): unknown => (JSON.parse(r.body) as { error?: { data?: { error_code?: unknown } } }).error?.data?.error_code;

const TOOLS = {
  echo_read: {
    description: 'Echo a short query.',
    effect: 'read',
    approval: 'none',
    revisions: [{ revision: 1, input: { type: 'object', properties: { q: { type: 'string', maxLength: 5000 } }, required: ['q'] }, http: { target: 'local', method: 'GET', path: '/echo', query: { q: '{q}' } } }],
  },
};

function journalRows(home: string): { type: string; session: string | null; body: Record<string, unknown> }[] {
  const db = new Database(join(home, 'journal', 'sessions.db'), { readonly: true, fileMustExist: true });
  try {
    return (db.prepare(`SELECT type, session_id, body FROM entries WHERE type IN ('session_started', 'session_closed', 'http_listener') ORDER BY seq`).all() as { type: string; session_id: string | null; body: string }[]).map((r) => ({ type: r.type, session: r.session_id, body: JSON.parse(r.body) as Record<string, unknown> }));
  } finally {
    db.close();
  }
}

describe('the HTTP listener', () => {
  let inst: Installation;
  let target: FakeHttpServer;
  let targets: Record<string, Record<string, unknown>>;
  let port = 0;
  let url = '';
  let token = '';
  const auth = (): Record<string, string> => ({ Authorization: `Bearer ${token}` });
  const json = (): Record<string, string> => ({ ...auth(), 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' });

  /** A raw session: initialize, then the initialized notification; returns its id. */
  async function rawSession(): Promise<string> {
    const r = await raw(port, { headers: json(), body: initBody() });
    assert.equal(r.status, 200, r.body);
    const id = r.headers['mcp-session-id'];
    assert.equal(typeof id, 'string');
    const sid = id as string;
    const n = await raw(port, { headers: { ...json(), 'Mcp-Session-Id': sid, 'Mcp-Protocol-Version': '2025-11-25' }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    assert.equal(n.status, 202, n.body);
    return sid;
  }
  const inSession = (sid: string): Record<string, string> => ({ ...json(), 'Mcp-Session-Id': sid, 'Mcp-Protocol-Version': '2025-11-25' });

  before(async () => {
    ({ http: target, inst, targets } = await httpFixture({ token: TOKEN_SECRET, tools: TOOLS, config: { max_request_bytes: 1024 }, shared: true, start: false }));
  });
  afterEach(async () => {
    if (port === 0 || inst.daemon === null) return;
    for (const sid of opened) await raw(port, { method: 'DELETE', headers: { ...auth(), 'Mcp-Session-Id': sid } }).catch(() => undefined);
    opened.clear();
  });
  after(async () => {
    await inst.cleanup();
    await target.close();
  });

  it('(h) is off by default: no TCP port is bound, no URL is published', async () => {
    await inst.startDaemon();
    const pid = inst.daemon?.pid ?? 0;
    assert.deepEqual(listeningSockets(pid), []);
    const status = await inst.sb.run(['http', 'status', '--json']);
    assert.equal(status.code, 0, status.stderr);
    assert.deepEqual(JSON.parse(status.stdout), { enabled: false, port: 7469, max_sessions: 16, authorization: 'none', running: null });
    const snippet = await inst.sb.run(['setup', 'json', '--http']);
    assert.equal(snippet.code, 1);
    assert.match(snippet.stderr, /^postern: DAEMON_UNAVAILABLE: no HTTP listener is running/m);
    await inst.stopDaemon();
  });

  it('(h) enabled in config.yaml by someone without the passphrase, it stays closed and says why', async () => {
    const cfg = join(inst.sb.home, 'config.yaml');
    const before = await readFile(cfg, 'utf8');
    await writeFile(cfg, `${before}mcp_http: { enabled: true, port: 0 }\n`);
    await inst.startDaemon();
    assert.deepEqual(listeningSockets(inst.daemon?.pid ?? 0), []);
    assert.match(inst.daemonLog, /HTTP listener NOT started: config\.yaml enables it, but it was never authorized with the passphrase/);
    // A forged authorization (any MAC) is no better.
    await writeFile(join(inst.sb.home, 'mcp-http.authorized.json'), JSON.stringify({ record: { format: 'postern.mcp-http-authorization/1', port: 0, authorized_at: '2026-01-01T00:00:00.000Z' }, mac: 'ab'.repeat(32) }));
    await inst.stopDaemon();
    await inst.startDaemon();
    assert.deepEqual(listeningSockets(inst.daemon?.pid ?? 0), []);
    assert.match(inst.daemonLog, /HTTP listener NOT started: its authorization does not verify with this vault/);
    await inst.stopDaemon();
    const refused = journalRows(inst.sb.home).filter((r) => r.type === 'http_listener');
    assert.deepEqual(refused.map((r) => r.body['state']), ['refused', 'refused']);
    await writeFile(cfg, before);
  });

  it('(i) `postern http enable` authorizes it; the daemon binds 127.0.0.1 only and publishes the URL and token file', async () => {
    const r = await inst.sb.run(['http', 'enable', '--port', '0', '--max-sessions', '4', '--passphrase-file', inst.passFile]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /HTTP listener authorized on a free port of 127\.0\.0\.1/);
    await inst.startDaemon();
    const status = await inst.sb.run(['http', 'status', '--json']);
    const s = JSON.parse(status.stdout) as { enabled: boolean; authorization: string; running: { url: string; token_file: string } | null };
    assert.equal(s.enabled, true);
    assert.equal(s.authorization, 'present');
    assert.ok(s.running !== null);
    url = s.running.url;
    port = Number(new URL(url).port);
    assert.equal(new URL(url).hostname, '127.0.0.1');
    assert.equal(s.running.token_file, join(inst.sb.home, 'run', 'mcp-http.token'));
    token = (await readFile(s.running.token_file, 'utf8')).trim();
    streamPort = port;
    streamAuth = auth();
    assert.match(token, /^[A-Za-z0-9_-]{43}$/); // 32 random bytes
    const { statSync } = await import('node:fs');
    assert.equal(statSync(s.running.token_file).mode & 0o777, 0o600);
    assert.deepEqual(listeningSockets(inst.daemon?.pid ?? 0), [{ addr: '127.0.0.1', port }]);
    assert.match(inst.daemonLog, new RegExp(`HTTP listener on ${url.replace(/[.]/g, '\\.')}`));
    const snippet = await inst.sb.run(['setup', 'json', '--http']);
    assert.equal(snippet.code, 0, snippet.stderr);
    assert.deepEqual(JSON.parse(snippet.stdout), { mcpServers: { postern: { type: 'http', url, headers: { Authorization: `Bearer ${token}` } } } });
    assert.match(snippet.stderr, /holds the listener's bearer token/);
  });

  it('(a) the SDK 2.x client lists and calls a tool through it', async () => {
    const client = new Client({ name: 'sdk2-http', version: '2.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: auth() } }));
    const tools = await client.listTools();
    assert.ok(tools.tools.some((t) => t.name === 'echo_read'));
    const before = target.requests.length;
    const res = (await client.callTool({ name: 'echo_read', arguments: { q: 'from-sdk2' } })) as { isError?: boolean; structuredContent?: Record<string, unknown> };
    assert.notEqual(res.isError, true, JSON.stringify(res));
    assert.equal(target.requests.length, before + 1);
    assert.match(target.requests.at(-1)?.url ?? '', /q=from-sdk2/);
    await client.close();
  });

  it('(b) the SDK 1.x client lists and calls a tool through it; the session ends on DELETE and is journaled as http', async () => {
    const transport = new StreamableHttpV1(new URL(url), { requestInit: { headers: auth() } });
    const client = new ClientV1({ name: 'sdk1-http', version: '1.0.0' });
    await client.connect(transport);
    const tools = await client.listTools();
    assert.ok(tools.tools.some((t) => t.name === 'echo_read'));
    const before = target.requests.length;
    const res = await client.callTool({ name: 'echo_read', arguments: { q: 'from-sdk1' } });
    assert.notEqual(res.isError, true, JSON.stringify(res));
    assert.equal(target.requests.length, before + 1);
    const sid = transport.sessionId;
    assert.equal(typeof sid, 'string');
    await transport.terminateSession(); // DELETE
    await client.close();
    const after = await raw(port, { headers: inSession(sid ?? ''), body: callBody(9, 'after-delete') });
    assert.equal(after.status, 404, after.body);
    assert.equal(target.requests.length, before + 1);
    const rows = journalRows(inst.sb.home);
    const started = rows.filter((r) => r.type === 'session_started' && r.body['transport'] === 'http');
    assert.ok(started.some((r) => r.body['client_name'] === 'sdk1-http'), JSON.stringify(started));
    assert.ok(started.some((r) => r.body['client_name'] === 'sdk2-http'));
  });

  it('(c) no token or a wrong token → 401, and nothing reaches the target', async () => {
    const before = target.requests.length;
    const sid = await rawSession();
    const wrong: Record<string, string>[] = [{}, { Authorization: 'Bearer wrong' }, { Authorization: `Bearer ${token}x` }, { Authorization: `Basic ${token}` }, { Authorization: token }];
    for (const headers of wrong) {
      const init = await raw(port, { headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers }, body: initBody() });
      assert.equal(init.status, 401, init.body);
      assert.equal(errorCode(init), 'HTTP_AUTH_REQUIRED');
      assert.match(String(init.headers['www-authenticate']), /^Bearer/);
      const call = await raw(port, { headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': sid, ...headers }, body: callBody(2, 'no-token') });
      assert.equal(call.status, 401);
      assert.ok(!call.body.includes(token), 'the token is never echoed');
    }
    assert.equal(target.requests.length, before);
    // With the token the same session works (so the 401s were the token's doing).
    const ok = await raw(port, { headers: inSession(sid), body: callBody(3, 'with-token') });
    assert.equal(ok.status, 200, ok.body);
    assert.equal(target.requests.length, before + 1);
  });

  it('(d) a foreign Host is refused (DNS rebinding), even with the token', async () => {
    const before = target.requests.length;
    for (const host of ['evil.example', `evil.example:${port}`, `127.0.0.1:${port + 1}`, `127.0.0.2:${port}`, `[::1]:${port}`, `localhost.evil.example:${port}`]) {
      const r = await raw(port, { headers: { ...json(), Host: host }, body: initBody() });
      assert.equal(r.status, 421, `${host}: ${r.body}`);
      assert.equal(errorCode(r), 'HTTP_REFUSED');
    }
    const ok = await raw(port, { headers: { ...json(), Host: `localhost:${port}` }, body: initBody() });
    assert.equal(ok.status, 200, ok.body);
    assert.equal(target.requests.length, before);
  });

  it('(e) a foreign Origin is refused; the listener\'s own origin and no Origin are fine', async () => {
    for (const origin of ['http://evil.example', `http://evil.example:${port}`, 'null', `https://127.0.0.1:${port}`, `http://127.0.0.1:${port + 1}`]) {
      const r = await raw(port, { headers: { ...json(), Origin: origin }, body: initBody() });
      assert.equal(r.status, 403, `${origin}: ${r.body}`);
      assert.equal(errorCode(r), 'HTTP_REFUSED');
    }
    for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`]) {
      const r = await raw(port, { headers: { ...json(), Origin: origin }, body: initBody() });
      assert.equal(r.status, 200, `${origin}: ${r.body}`);
    }
  });

  it('(f) a browser simple request (text/plain, form) and a CORS preflight are refused; no response has CORS headers', async () => {
    const before = target.requests.length;
    const sid = await rawSession();
    const seen: RawResponse[] = [];
    for (const type of ['text/plain', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const r = await raw(port, { headers: { ...auth(), 'Content-Type': type, 'Mcp-Session-Id': sid, Accept: 'application/json, text/event-stream' }, body: callBody(4, 'simple') });
      assert.equal(r.status, 415, `${type}: ${r.body}`);
      seen.push(r);
    }
    const noType = await raw(port, { headers: { ...auth(), 'Mcp-Session-Id': sid }, body: callBody(5, 'untyped') });
    assert.equal(noType.status, 415);
    const preflight = await raw(port, { method: 'OPTIONS', headers: { Origin: `http://127.0.0.1:${port}`, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization, content-type' } });
    assert.equal(preflight.status, 401); // no token on a preflight: refused before the method
    const withToken = await raw(port, { method: 'OPTIONS', headers: auth() });
    assert.equal(withToken.status, 405);
    seen.push(noType, preflight, withToken, await raw(port, { headers: { ...json(), Origin: 'http://evil.example' }, body: initBody() }));
    for (const r of seen) assert.deepEqual(Object.keys(r.headers).filter((h) => h.startsWith('access-control-')), []);
    assert.equal(target.requests.length, before);
  });

  it('(g) an oversized body is refused and the daemon serves the next request; malformed bodies get JSON-RPC errors', async () => {
    const before = target.requests.length;
    const sid = await rawSession();
    // max_request_bytes 1024 → the body limit is 1024 × 6 + 64 KiB.
    const big = callBody(6, 'x'.repeat(80 * 1024));
    const r = await raw(port, { headers: inSession(sid), body: big });
    assert.equal(r.status, 200, r.body.slice(0, 300));
    const result = (JSON.parse(r.body) as { id: number; result: { isError: boolean; structuredContent: { error_code: string } } });
    assert.equal(result.id, 6);
    assert.equal(result.result.structuredContent.error_code, 'REQUEST_TOO_LARGE');
    const notCall = await raw(port, { headers: inSession(sid), body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list', params: { pad: 'y'.repeat(80 * 1024) } }) });
    assert.equal(notCall.status, 413);
    // A declared length over the limit is answered from the first bytes, without waiting for the rest.
    const huge = await raw(port, { headers: { ...inSession(sid), 'Content-Length': String(64 * 1024 * 1024) }, body: Buffer.from('{"jsonrpc":"2.0","id":77,"method":"tools/call"') });
    assert.equal(huge.status, 200, huge.body);
    assert.equal((JSON.parse(huge.body) as { id: number; result: { structuredContent: { error_code: string } } }).result.structuredContent.error_code, 'REQUEST_TOO_LARGE');
    for (const [body, code] of [['{not json', -32700], [Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), -32700], ['[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]', -32600], ['{"jsonrpc":"2.0","id":8,"method":"tools/list","params":[]}', -32602]] as const) {
      const m = await raw(port, { headers: inSession(sid), body });
      assert.equal(m.status, 200, m.body);
      assert.equal((JSON.parse(m.body) as { error: { code: number } }).error.code, code);
    }
    const proto = await raw(port, { headers: inSession(sid), body: '{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo_read","arguments":{"q":"p","__proto__":{"x":1}}}}' });
    assert.equal((JSON.parse(proto.body) as { error: { code: number; data: { error_code: string } } }).error.data.error_code, 'VALIDATION_FAILED');
    // Still alive, same session.
    const ok = await raw(port, { headers: inSession(sid), body: callBody(10, 'alive') });
    assert.equal(ok.status, 200, ok.body);
    assert.equal(target.requests.length, before + 1);
    assert.equal(inst.daemon?.exitCode, null);
  });

  it('at max_sessions a new session replaces the one idle the longest; when every session is busy, 503', async () => {
    const first: string[] = [];
    for (let i = 0; i < 4; i++) first.push(await rawSession()); // --max-sessions 4: older idle sessions make room
    const fifth = await rawSession();
    const [oldest = '', ...rest] = first;
    assert.equal((await raw(port, { headers: inSession(oldest), body: callBody(20, 'evicted') })).status, 404);
    // Busy: each remaining session holds its SSE stream (GET) open.
    const streams = await Promise.all([...rest, fifth].map((sid) => openStream(sid)));
    for (const st of streams) assert.equal(st.status, 200);
    const refused = await raw(port, { headers: json(), body: initBody() });
    assert.equal(refused.status, 503, refused.body);
    assert.equal(errorCode(refused), 'HTTP_SESSION_LIMIT');
    assert.equal((await raw(port, { method: 'DELETE', headers: { ...auth(), 'Mcp-Session-Id': fifth } })).status, 200);
    const again = await raw(port, { headers: json(), body: initBody() });
    assert.equal(again.status, 200, again.body);
    for (const st of streams) st.close();
  });

  it('tells an HTTP session tools/list_changed when a new catalog is adopted (over its SSE stream)', async () => {
    const changed = new Promise<unknown>((resolve, reject) => {
      (async () => {
        const client = new Client({ name: 'sdk2-listchanged', version: '2.0.0' }, { listChanged: { tools: { debounceMs: 0, onChanged: (_e, tools) => resolve(tools) } } });
        await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: auth() } }));
        await client.listTools();
        await inst.acceptCatalog({ targets, tools: { ...TOOLS, echo_again: { ...TOOLS.echo_read, description: 'Echo again.' } } });
      })().catch(reject);
    });
    const tools = (await changed) as { name: string }[] | null;
    assert.ok(tools?.some((t) => t.name === 'echo_again'), JSON.stringify(tools));
  });

  it('ends every session at daemon stop and never prints the target credential', async () => {
    const sid = await rawSession();
    assert.equal((await raw(port, { headers: inSession(sid), body: callBody(12, 'last') })).status, 200);
    assert.equal(await inst.stopDaemon(), 0);
    const rows = journalRows(inst.sb.home);
    const httpStarted = rows.filter((r) => r.type === 'session_started' && r.body['transport'] === 'http');
    assert.ok(httpStarted.length >= 3);
    const closed = new Set(rows.filter((r) => r.type === 'session_closed').map((r) => r.session));
    assert.deepEqual(httpStarted.filter((r) => !closed.has(r.session)), [], 'every HTTP session is journaled closed');
    await assert.rejects(raw(port, { headers: json(), body: initBody() }));
    const status = await inst.sb.run(['http', 'status', '--json']);
    assert.equal((JSON.parse(status.stdout) as { running: unknown }).running, null);
    inst.sb.assertNeverPrinted(TOKEN_SECRET, 'target credential');
    assert.ok(!inst.daemonLog.includes(token), 'the listener token is not logged');
  });
});

