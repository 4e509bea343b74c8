/**
 * The catalog side of credentials exchanged for tokens: the token endpoint
 * (`token_url`) and the GitHub API base are fixed in the target, normalized
 * like origins, and a private or plain-http endpoint needs the target's
 * `allow_private` — so no call argument, and no catalog that did not opt in,
 * can point the token request at an internal address. The GitHub App JWT is
 * RS256 over the claims GitHub asks for.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createVerify, generateKeyPairSync } from 'node:crypto';
import { parseCatalog } from '../../../../src/contracts/index.js';
import { githubAppJwt } from '../../../../src/executors/http/github-app-jwt.js';
import { catalogText, tool } from '../../contracts/helpers.js';

const read = { get: tool([{ revision: 1, http: { target: 'api', method: 'GET', path: '/' } }]) };
const withAuth = (auth: unknown, extra: Record<string, unknown> = {}) => catalogText(read, { api: { http: { origin: 'https://api.example.com', credential: 'c', auth, ...extra } } });
const authOf = (text: string) => {
  const t = parseCatalog(text, 'catalog.yaml').targets.get('api');
  return t?.kind === 'http' ? t.auth : undefined;
};

describe('auth: oauth_client_credentials and github_app in the catalog', () => {
  it('the token endpoint is normalized and kept with the scopes', () => {
    assert.deepEqual(authOf(withAuth({ oauth_client_credentials: { token_url: 'https://Auth.Example.com:443/oauth2/token/', scopes: ['a:read', 'b'] } })), {
      kind: 'oauth_client_credentials',
      tokenUrl: 'https://auth.example.com/oauth2/token',
      scopes: ['a:read', 'b'],
    });
    assert.deepEqual(authOf(withAuth({ github_app: { api: 'https://ghe.example.com/api/v3' } })), { kind: 'github_app', api: 'https://ghe.example.com/api/v3' });
  });

  it('a private, loopback or plain-http endpoint needs allow_private; a query, fragment or dot segment is refused', () => {
    for (const url of ['https://127.0.0.1/token', 'http://auth.example.com/token', 'https://169.254.169.254/latest', 'https://localhost/token']) {
      assert.throws(() => parseCatalog(withAuth({ oauth_client_credentials: { token_url: url } }), 'catalog.yaml'), /allow_private|plain http/, url);
    }
    assert.equal(authOf(withAuth({ oauth_client_credentials: { token_url: 'http://127.0.0.1:8080/token' } }, { origin: 'http://127.0.0.1:9000', allow_private: true }))?.kind, 'oauth_client_credentials');
    for (const url of ['https://auth.example.com/token?x=1', 'https://auth.example.com/token#f', 'https://auth.example.com/a/../token', 'https://user@auth.example.com/token']) {
      assert.throws(() => parseCatalog(withAuth({ oauth_client_credentials: { token_url: url } }), 'catalog.yaml'), /token_url/, url);
    }
    assert.throws(() => parseCatalog(withAuth({ oauth_client_credentials: { token_url: 'https://a.example.com/t', scopes: ['has space'] } }), 'catalog.yaml'), /OAuth scope/);
  });

  it('the GitHub App JWT: RS256, iss = app id, issued 60 s back, expiring within 10 minutes', () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = Buffer.from(privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
    const now = new Date('2026-12-01T12:00:00Z');
    const signed = githubAppJwt('42', pem, now);
    assert.equal(signed.expiresAt.toISOString(), '2026-12-01T12:09:00.000Z', 'it expires with its exp claim');
    const [h, p, s] = signed.jwt.split('.') as [string, string, string];
    assert.deepEqual(JSON.parse(Buffer.from(h, 'base64url').toString()), { alg: 'RS256', typ: 'JWT' });
    const t = now.getTime() / 1000;
    assert.deepEqual(JSON.parse(Buffer.from(p, 'base64url').toString()), { iat: t - 60, exp: t + 540, iss: '42' });
    assert.ok(createVerify('RSA-SHA256').update(`${h}.${p}`).verify(publicKey, Buffer.from(s, 'base64url')));
  });
});

describe('authority: the token endpoint is part of what a tool reaches', () => {
  it('a tool on an OAuth target reaches its origin and its token endpoint; moving the endpoint widens', async () => {
    const { authorityOf, widensAuthority } = await import('../../../../src/contracts/authority/authority.js');
    const at = (tokenUrl: string) => {
      const c = parseCatalog(withAuth({ oauth_client_credentials: { token_url: tokenUrl } }), 'catalog.yaml');
      const t = c.tools.get('get')!;
      return authorityOf(t, t.current);
    };
    const a = at('https://auth.example.com/token');
    assert.deepEqual(a.origins, ['https://api.example.com:443', 'https://auth.example.com:443']);
    assert.equal(widensAuthority(a, at('https://auth.example.com/other-path')).widens, false);
    assert.equal(widensAuthority(a, at('https://evil.example.net/token')).widens, true);
  });
});
