/**
 * What the redactor knew survives a daemon restart (docs/threat-model.md,
 * "Values that outlive a daemon"): a target that echoes every credential
 * value it ever saw or issued — an OAuth access token still valid at the
 * provider, the stored refresh token and the ones the server rotated, a
 * GitHub App's JWT and installation token, a bearer value retired by
 * `postern secret rotate` — never hands one to the agent, before or after
 * the daemon restarts. The echo comes from the same loopback server as the
 * token endpoints (their request log and what they issued), raw and in the
 * usual encodings. No value reaches the agent, the CLI output, the daemon
 * log or the journals.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Client } from '@modelcontextprotocol/client';
import { startFakeHttp, type FakeHttpServer } from '../helpers/fake-http.js';
import { install, type Installation } from '../helpers/daemon.js';
import { encodingsOf } from '../helpers/cli.js';

const canary = (what: string): string => `CANARY-${what}-${randomBytes(15).toString('base64url')}`;
const CLIENT_SECRET = canary('cs');
const RT1 = canary('rt1');
const BEARER1 = canary('bearer1');
const BEARER2 = canary('bearer2');
const ECHO_TOKEN = canary('echo');
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const PEM = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
const INSTALLATION = '4242';

type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };
const bearer = (req: IncomingMessage): string => /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';

function catalogFor(origin: string) {
  const read = (target: string, path: string) => ({
    description: 'Read.',
    effect: 'read',
    approval: 'none',
    revisions: [{ revision: 1, input: { type: 'object', properties: {} }, http: { target, method: 'GET', path } }],
  });
  return {
    targets: {
      oauth: { http: { origin, credential: 'api-oauth', auth: { oauth_client_credentials: { token_url: `${origin}/oauth/token` } }, allow_private: true } },
      rt: { http: { origin, credential: 'rt-oauth', auth: { oauth_refresh_token: { token_url: `${origin}/oauth/refresh` } }, allow_private: true } },
      gh: { http: { origin, credential: 'gh-app', auth: { github_app: { api: origin } }, allow_private: true } },
      plain: { http: { origin, credential: 'plain', auth: 'bearer', allow_private: true } },
      echo: { http: { origin, credential: 'echo', auth: 'bearer', allow_private: true } },
    },
    tools: {
      with_oauth: read('oauth', '/api/ok'),
      with_rt: read('rt', '/api/ok'),
      with_gh: read('gh', '/api/ok'),
      with_plain: read('plain', '/api/ok'),
      echo_everything: read('echo', '/api/echo-everything'),
    },
  };
}

describe('daemon: values the redactor knew stay redacted across a restart', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agent: Client;
  /** Every value the fake issued (access tokens, rotated refresh tokens, installation tokens). */
  const issued: string[] = [];
  const jwts: string[] = [];
  let validRefresh = RT1;
  const results: string[] = [];

  /** Everything the server ever saw or issued, raw and encoded: what a target that logs and echoes hands back. */
  const everything = (): string[] => {
    const seen = http.requests.flatMap((r) => [...r.headers.map(([, v]) => v), r.body.toString('utf8')]);
    return [...seen, ...issued].flatMap((v) => (v === '' ? [] : [v, Buffer.from(v).toString('base64'), Buffer.from(v).toString('hex'), encodeURIComponent(v)]));
  };

  before(async () => {
    http = await startFakeHttp();
    const json = (res: ServerResponse, status: number, body: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    http.route('/oauth/token', (_req, res) => {
      const token = canary('at');
      issued.push(token);
      json(res, 200, { access_token: token, token_type: 'Bearer', expires_in: 3600 });
    });
    http.route('/oauth/refresh', (_req, res, body) => {
      if (new URLSearchParams(body.toString()).get('refresh_token') !== validRefresh) return json(res, 400, { error: 'invalid_grant' });
      validRefresh = canary('rt-next');
      const token = canary('at-rt');
      issued.push(validRefresh, token);
      json(res, 200, { access_token: token, token_type: 'Bearer', expires_in: 3600, refresh_token: validRefresh });
    });
    http.route(`/app/installations/${INSTALLATION}/access_tokens`, (req, res) => {
      jwts.push(bearer(req));
      const token = `ghs_CANARY${randomBytes(18).toString('hex')}`;
      issued.push(token);
      json(res, 201, { token, expires_at: new Date(Date.now() + 3600_000).toISOString() });
    });
    http.route('/api/ok', (_req, res) => json(res, 200, { ok: true }));
    http.route('/api/echo-everything', (_req, res) => json(res, 200, { everything: everything() }));
    inst = await install({
      secrets: [
        { name: 'api-oauth', kind: 'oauth_client_credentials', value: CLIENT_SECRET, flags: ['--client-id', 'client-1'] },
        { name: 'rt-oauth', kind: 'oauth_refresh_token', value: RT1, flags: ['--client-id', 'public-app'] },
        { name: 'gh-app', kind: 'github_app', value: PEM, flags: ['--app-id', '99', '--installation-id', INSTALLATION] },
        { name: 'plain', kind: 'http_bearer', value: BEARER1 },
        { name: 'echo', kind: 'http_bearer', value: ECHO_TOKEN },
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
      for (const v of [CLIENT_SECRET, RT1, BEARER1, BEARER2, ECHO_TOKEN, ...issued, ...jwts, ...pemLines]) {
        inst.sb.assertNeverPrinted(v, 'a credential value, minted token or JWT (CLI output, daemon log, journals)');
        assert.ok(!inst.daemonLog.includes(v), 'a secret in the daemon log');
      }
    } finally {
      await inst.cleanup();
      await http.close();
    }
  });

  const call = async (name: string): Promise<Result> => {
    const r = (await agent.callTool({ name, arguments: {} })) as Result;
    results.push(JSON.stringify(r));
    assert.equal(r.isError, undefined, JSON.stringify(r));
    return r;
  };

  /** No canary reaches the agent in any encoding. */
  const assertNothingLeaked = (text: string, values: readonly string[]): void => {
    for (const v of values) for (const form of encodingsOf(v)) assert.ok(!text.includes(form), `a secret reached the agent (${v.slice(0, 14)}…)`);
  };

  it('before the restart: every value the target echoes — the GitHub App JWT included — comes back redacted', async () => {
    await call('with_oauth');
    await call('with_rt');
    await call('with_gh');
    await call('with_plain');
    const rotated = await inst.sb.run(['secret', 'rotate', 'plain', '--stdin', '--passphrase-file', inst.passFile], { input: BEARER2 });
    assert.equal(rotated.code, 0, rotated.stderr);
    await call('with_plain');
    assert.equal(jwts.length, 1);
    assert.ok(http.requests.some((r) => r.headers.some(([, v]) => v === `Bearer ${BEARER2}`)), 'the rotated value was sent');
    const echo = JSON.stringify(await call('echo_everything'));
    assertNothingLeaked(echo, [CLIENT_SECRET, RT1, BEARER1, BEARER2, ...issued, ...jwts]);
    assert.match(echo, /\[REDACTED:gh-app\]/, 'the JWT is redacted under its credential');
  });

  it('secret list and secret retention show what is remembered and for how long (names and times, never values)', async () => {
    const list = await inst.sb.run(['secret', 'list', '--passphrase-file', inst.passFile]);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /redaction also recognizes [2-9] retired values \(kept 30 days after retirement; change with `postern secret retention DAYS`\) and [3-9] minted tokens \(until they expire\)/);
    const shown = await inst.sb.run(['secret', 'retention', '--json', '--passphrase-file', inst.passFile]);
    assert.equal(shown.code, 0, shown.stderr);
    const r = JSON.parse(shown.stdout) as { retention_days: number; remembered: { name: string; source: string; until: string | null }[] };
    assert.equal(r.retention_days, 30);
    assert.ok(r.remembered.some((m) => m.name === 'plain' && m.source === 'retired' && m.until === null));
    assert.ok(r.remembered.some((m) => m.name === 'rt-oauth' && m.source === 'retired'), 'the refresh token the server rotated away');
    assert.ok(r.remembered.some((m) => m.name === 'gh-app' && m.source === 'minted' && m.until !== null), 'the JWT, until its exp');
    assert.ok(r.remembered.some((m) => m.name === 'api-oauth' && m.source === 'minted' && m.until !== null));
  });

  it('after a restart: the echo of every earlier value — minted tokens still valid, the old refresh tokens, the JWT, the retired bearer — is still redacted', async () => {
    await inst.stopDaemon();
    await inst.startDaemon();
    agent = await inst.client();
    const echo = JSON.stringify(await call('echo_everything'));
    assertNothingLeaked(echo, [CLIENT_SECRET, RT1, BEARER1, BEARER2, ...issued, ...jwts]);
    for (const name of ['api-oauth', 'rt-oauth', 'gh-app', 'plain']) assert.match(echo, new RegExp(`\\[REDACTED:${name}\\]`), name);
    assertNothingLeaked(results.join('\n'), [CLIENT_SECRET, RT1, BEARER1, BEARER2, ECHO_TOKEN, ...issued, ...jwts]);
  });
});
