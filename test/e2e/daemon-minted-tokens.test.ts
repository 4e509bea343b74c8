// @subject time: token lifetimes (run again a year ahead by .ci/run)
/**
 * Credentials exchanged for short-lived tokens, through the daemon: an agent
 * calls a loopback API protected by OAuth 2.0 client credentials (a local
 * token endpoint with an append-only request log), a GitHub App
 * installation API (a fake that verifies the app's RS256 JWT with the public
 * key) and an API behind a rotating OAuth refresh token. The token is
 * fetched once and reused; a client secret the endpoint refuses fails fast
 * with CREDENTIAL_REJECTED and no second token request; an API that echoes
 * the Authorization header never shows the token to the agent; `secret list`
 * shows each token's state from the daemon; a rotated refresh token is saved
 * to the vault (a restarted daemon sends the newest one). The client secret,
 * refresh tokens, the private key, the JWTs and every minted token never
 * reach the agent, the CLI output, the daemon log or the journals.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createVerify, generateKeyPairSync, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Client } from '@modelcontextprotocol/client';
import { startFakeHttp, type FakeHttpServer } from '../helpers/fake-http.js';
import { install, type Installation } from '../helpers/daemon.js';
import { encodingsOf } from '../helpers/cli.js';

const CLIENT_SECRET = `CANARY-cs-${randomBytes(15).toString('base64url')}`;
const WRONG_SECRET = `CANARY-wrong-${randomBytes(15).toString('base64url')}`;
const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const PEM = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
const RT1 = `CANARY-rt1-${randomBytes(15).toString('base64url')}`;
const APP_ID = '123456';
const INSTALLATION = '777';

type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };

const bearer = (req: IncomingMessage): string => /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';

/** Checks a GitHub App JWT as GitHub does: RS256 with the app's public key, iss = app id, at most 10 minutes. */
function jwtProblem(jwt: string): string | null {
  const [h, p, s] = jwt.split('.');
  if (h === undefined || p === undefined || s === undefined) return 'not a JWT';
  if (JSON.parse(Buffer.from(h, 'base64url').toString()).alg !== 'RS256') return 'not RS256';
  if (!createVerify('RSA-SHA256').update(`${h}.${p}`).verify(publicKey, Buffer.from(s, 'base64url'))) return 'bad signature';
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as { iat: number; exp: number; iss: string };
  if (claims.iss !== APP_ID) return 'wrong issuer';
  if (claims.exp - claims.iat > 600) return 'lives too long';
  const now = Date.now() / 1000;
  if (claims.iat > now || claims.exp < now) return 'not valid now';
  return null;
}

function catalogFor(origin: string) {
  const oauth = (credential: string) => ({ http: { origin, credential, auth: { oauth_client_credentials: { token_url: `${origin}/oauth/token`, scopes: ['things:read'] } }, allow_private: true } });
  const read = (target: string, path: string) => ({
    description: 'Read things.',
    effect: 'read',
    approval: 'none',
    revisions: [{ revision: 1, input: { type: 'object', properties: {} }, http: { target, method: 'GET', path } }],
  });
  return {
    targets: {
      api: oauth('api-oauth'),
      api_wrong: oauth('api-wrong'),
      rt: { http: { origin, credential: 'rt-oauth', auth: { oauth_refresh_token: { token_url: `${origin}/oauth/refresh` } }, allow_private: true } },
      gh: { http: { origin, credential: 'gh-app', auth: { github_app: { api: origin } }, allow_private: true } },
    },
    tools: {
      list_things: read('api', '/api/things'),
      echo_auth: read('api', '/api/echo'),
      list_things_wrong: read('api_wrong', '/api/things'),
      list_repos: read('gh', '/installation/repositories'),
      list_things_rt: read('rt', '/api/things'),
    },
  };
}

describe('daemon: OAuth client credentials and GitHub App tokens', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agent: Client;
  const issued: string[] = [];
  const jwts: string[] = [];
  /** Refresh tokens the endpoint accepts: each use rotates it (a used one is refused, as a rotating server does). */
  let validRefresh = RT1;
  const refreshSeen: string[] = [];
  const jwtVerdicts: (string | null)[] = [];
  const results: string[] = [];

  before(async () => {
    http = await startFakeHttp();
    http.route('/oauth/token', (req, res) => {
      const [id, secret] = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString().split(':');
      if (id !== 'client-1' || secret !== CLIENT_SECRET) {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'invalid_client' }));
        return;
      }
      const token = `CANARY-at-${randomBytes(18).toString('base64url')}`;
      issued.push(token);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ access_token: token, token_type: 'Bearer', expires_in: 3600 }));
    });
    http.route('/oauth/refresh', (_req, res, body) => {
      const form = new URLSearchParams(body.toString());
      const sent = form.get('refresh_token') ?? '';
      refreshSeen.push(sent === validRefresh ? 'current' : sent === RT1 ? 'first (already used)' : 'unknown');
      if (form.get('grant_type') !== 'refresh_token' || sent !== validRefresh) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'invalid_grant' }));
        return;
      }
      validRefresh = `CANARY-rt-next-${randomBytes(15).toString('base64url')}`;
      issued.push(validRefresh);
      const token = `CANARY-at-${randomBytes(18).toString('base64url')}`;
      issued.push(token);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ access_token: token, token_type: 'Bearer', expires_in: 3600, refresh_token: validRefresh }));
    });
    http.route(`/app/installations/${INSTALLATION}/access_tokens`, (req, res) => {
      const jwt = bearer(req);
      jwts.push(jwt);
      const problem = jwtProblem(jwt);
      jwtVerdicts.push(problem);
      if (problem !== null) {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ message: 'A JSON web token could not be decoded' }));
        return;
      }
      const token = `ghs_CANARY${randomBytes(18).toString('hex')}`;
      issued.push(token);
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ token, expires_at: new Date(Date.now() + 3600_000).toISOString() }));
    });
    const api = (reply: (req: IncomingMessage) => unknown) => (req: IncomingMessage, res: ServerResponse) => {
      const ok = issued.includes(bearer(req));
      res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
      res.end(JSON.stringify(ok ? reply(req) : { message: 'Bad credentials' }));
    };
    http.route('/api/things', api(() => ({ things: ['a', 'b'] })));
    http.route('/api/echo', api((req) => ({ you_sent: req.headers.authorization })));
    http.route('/installation/repositories', api(() => ({ total_count: 1, repositories: [{ full_name: 'octo/hello' }] })));
    inst = await install({
      secrets: [
        { name: 'api-oauth', kind: 'oauth_client_credentials', value: CLIENT_SECRET, flags: ['--client-id', 'client-1'] },
        { name: 'api-wrong', kind: 'oauth_client_credentials', value: WRONG_SECRET, flags: ['--client-id', 'client-1'] },
        { name: 'rt-oauth', kind: 'oauth_refresh_token', value: RT1, flags: ['--client-id', 'public-app'] },
        { name: 'gh-app', kind: 'github_app', value: PEM, flags: ['--app-id', APP_ID, '--installation-id', INSTALLATION] },
      ],
    });
    await inst.acceptCatalog(catalogFor(http.origin));
    await inst.startDaemon();
    agent = await inst.client();
  });

  after(async () => {
    try {
      const exported = await inst.sb.run(['audit', 'export']);
      assert.equal(exported.code, 0, exported.stderr);
      const pemLines = PEM.split('\n').filter((l) => l.length >= 16 && !l.startsWith('-----'));
      for (const v of [CLIENT_SECRET, WRONG_SECRET, RT1, ...issued, ...jwts, ...pemLines]) {
        inst.sb.assertNeverPrinted(v, 'a client secret, key, JWT or minted token (CLI output, daemon log, journals)');
        for (const form of encodingsOf(v)) assert.ok(!results.join('\n').includes(form), 'a secret reached the agent');
      }
    } finally {
      await inst.cleanup();
      await http.close();
    }
  });

  const call = async (name: string): Promise<Result> => {
    const r = (await agent.callTool({ name, arguments: {} })) as Result;
    results.push(JSON.stringify(r));
    return r;
  };
  const tokenRequests = (path: string): number => http.requests.filter((r) => r.url === path).length;

  it('the first call fetches a token; later calls reuse it', async () => {
    const r = await call('list_things');
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(tokenRequests('/oauth/token'), 1);
    const sent = http.requests.find((q) => q.url === '/oauth/token')!;
    assert.equal(sent.body.toString(), 'grant_type=client_credentials&scope=things%3Aread');
    for (let i = 0; i < 3; i++) assert.equal((await call('list_things')).isError, undefined);
    assert.equal(tokenRequests('/oauth/token'), 1, 'reused: one token request in all');
  });

  it('an API that echoes the Authorization header: the agent sees a redaction marker, never the token', async () => {
    const r = await call('echo_auth');
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.ok(issued.length > 0 && !issued.some((t) => results.at(-1)!.includes(t)));
  });

  it('a client secret the token endpoint refuses: CREDENTIAL_REJECTED, then fails fast without another token request', async () => {
    const before = tokenRequests('/oauth/token');
    const r = await call('list_things_wrong');
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent?.['error_code'], 'CREDENTIAL_REJECTED', JSON.stringify(r));
    assert.equal(r.structuredContent?.['side_effect_started'], false);
    assert.equal(tokenRequests('/oauth/token'), before + 1);
    const again = await call('list_things_wrong');
    assert.equal(again.structuredContent?.['error_code'], 'CREDENTIAL_REJECTED');
    assert.equal(tokenRequests('/oauth/token'), before + 1, 'no second token request');
    assert.equal(http.requests.filter((q) => q.url === '/api/things').length, 4, 'the API itself was never called with the refused credential');
  });

  it('a GitHub App: the JWT verifies with the public key; the installation token is cached', async () => {
    const r = await call('list_repos');
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.deepEqual(jwtVerdicts, [null]);
    assert.equal((await call('list_repos')).isError, undefined);
    assert.equal(tokenRequests(`/app/installations/${INSTALLATION}/access_tokens`), 1);
  });

  it('secret list shows each token credential\'s state from the daemon: valid until, last refresh, last error — never a value', async () => {
    const list = await inst.sb.run(['secret', 'list', '--passphrase-file', inst.passFile]);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^api-oauth: valid until \d{4}-\d\d-\d\dT[^;]+; last refresh \d{4}-[^;]+; last error -$/m);
    assert.match(list.stdout, /^api-wrong: valid until -; last refresh -; last error CREDENTIAL_REJECTED at [^:]+:\d\d:\d\d\.\d+Z: credential api-wrong: the token endpoint refused it: HTTP 401 \(invalid_client\)/m);
    assert.match(list.stdout, /^gh-app: valid until \d{4}-/m);
    const json = await inst.sb.run(['secret', 'list', '--json', '--passphrase-file', inst.passFile]);
    const rows = JSON.parse(json.stdout) as { name: string; token_state?: { daemon: string; valid_until?: string | null } }[];
    assert.equal(rows.find((r) => r.name === 'api-oauth')?.token_state?.daemon, 'running');
    assert.ok(rows.find((r) => r.name === 'api-oauth')?.token_state?.valid_until);
  });

  it('a refresh token the server rotates is saved to the vault: after a restart the daemon sends the newest one', async () => {
    const r = await call('list_things_rt');
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.deepEqual(refreshSeen, ['current']);
    assert.equal((await call('list_things_rt')).isError, undefined);
    assert.equal(refreshSeen.length, 1, 'the access token is reused');
    assert.match(inst.daemonLog, /credential rt-oauth: the rotated refresh token was saved to the vault/);
    await inst.stopDaemon();
    await inst.startDaemon();
    agent = await inst.client();
    const again = await call('list_things_rt');
    assert.equal(again.isError, undefined, JSON.stringify(again));
    assert.deepEqual(refreshSeen, ['current', 'current'], 'the rotated token, not the used one, was sent');
  });
});
