/**
 * The HTTP listener's gate (src/daemon/http/gate.ts), pure: what may reach
 * MCP code at all — THREATS 12 (a browser page reaching an HTTP listener).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isJsonContentType, judgeRequest, refusalBody, type GateInput } from '../../../src/daemon/http/gate.js';
import { bearerMatches } from '../../../src/daemon/http/token.js';

const PORT = 7469;
const TOKEN = 'A'.repeat(43);
const ok: GateInput = { method: 'POST', url: '/mcp', host: `127.0.0.1:${PORT}`, origin: undefined, authorization: `Bearer ${TOKEN}`, contentType: 'application/json' };
const status = (over: Partial<GateInput>): number | 'pass' => {
  const v = judgeRequest({ ...ok, ...over }, PORT, TOKEN);
  return v.kind === 'pass' ? 'pass' : v.status;
};

describe('the HTTP gate', () => {
  it('lets a well-formed request through, with either loopback name', () => {
    assert.equal(status({}), 'pass');
    assert.equal(status({ host: `localhost:${PORT}` }), 'pass');
    assert.equal(status({ host: `LOCALHOST:${PORT}`, origin: `http://localhost:${PORT}` }), 'pass');
    assert.equal(status({ method: 'GET', contentType: undefined }), 'pass');
    assert.equal(status({ method: 'DELETE', contentType: undefined }), 'pass');
    assert.equal(status({ url: '/mcp?x=1' }), 'pass');
  });

  it('refuses a Host that does not name the listener (DNS rebinding) with 421', () => {
    for (const host of [undefined, '', 'evil.example', `evil.example:${PORT}`, '127.0.0.1', `127.0.0.1:${PORT + 1}`, `[::1]:${PORT}`, `0.0.0.0:${PORT}`, `127.1:${PORT}`, `localhost.:${PORT}`, `127.0.0.1:${PORT}@evil`, `127.0.0.1:0${PORT}`]) {
      assert.equal(status({ host }), 421, String(host));
    }
  });

  it('refuses an Origin other than its own with 403', () => {
    for (const origin of ['http://evil.example', 'null', '', `https://127.0.0.1:${PORT}`, `http://127.0.0.1:${PORT}/`, `http://127.0.0.1:${PORT + 1}`, `http://localhost.evil:${PORT}`]) {
      assert.equal(status({ origin }), 403, origin);
    }
  });

  it('serves only /mcp', () => {
    for (const url of ['/', '/mcp/', '/MCP', '/mcp/../x', '/.well-known/oauth-protected-resource', '//mcp']) assert.equal(status({ url }), 404, url);
  });

  it('needs the exact bearer token (401 with a Bearer challenge)', () => {
    for (const authorization of [undefined, '', 'Bearer', 'Bearer ', `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(1)}`, `Basic ${TOKEN}`, TOKEN, `Bearer ${TOKEN} extra`, `Bearer\t${TOKEN}`]) {
      const v = judgeRequest({ ...ok, authorization }, PORT, TOKEN);
      assert.equal(v.kind === 'refuse' && v.status, 401, String(authorization));
      assert.equal(v.kind === 'refuse' && v.code, 'HTTP_AUTH_REQUIRED');
      assert.match((v.kind === 'refuse' && v.headers?.['WWW-Authenticate']) || '', /^Bearer /);
    }
    assert.equal(bearerMatches(`bearer ${TOKEN}`, TOKEN), true);
    assert.equal(bearerMatches(`Bearer ${TOKEN}  `, TOKEN), true);
  });

  it('checks the token before the method, so an unauthenticated preflight learns nothing', () => {
    assert.equal(status({ method: 'OPTIONS', authorization: undefined }), 401);
    assert.equal(status({ method: 'OPTIONS' }), 405);
    assert.equal(status({ method: 'PUT' }), 405);
  });

  it('reads a POST only when it says application/json (no browser simple request)', () => {
    for (const contentType of [undefined, 'text/plain', 'text/plain; charset=utf-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx', 'application/json-seq', 'text/json']) {
      assert.equal(status({ contentType }), 415, String(contentType));
    }
    assert.equal(isJsonContentType('Application/JSON; charset=utf-8'), true);
  });

  it('shapes refusals as JSON-RPC errors carrying the Postern code and action', () => {
    assert.deepEqual(refusalBody('HTTP_REFUSED', 'no'), { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'HTTP_REFUSED: no', data: { error_code: 'HTTP_REFUSED', message: 'no', required_action: 'fix_request' } } });
  });
});
