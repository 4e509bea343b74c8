// Credential kinds have one check (src/rules/credential-fit.ts): the
// catalog loaded or accepted against the vault's metadata, the daemon's
// execution step and both executors all reach the same verdict, and a
// credential of the wrong kind — or sent under another header or parameter
// name than the target's `auth` declares — is CREDENTIAL_KIND_MISMATCH, never
// CREDENTIAL_MISSING.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { checkCatalogCredentials, credentialMisfits, parseCatalog } from '../../../src/contracts/index.ts';
import { checkCredential } from '../../../src/daemon/pipeline/stages/credential.ts';
import { credentialInjection } from '../../../src/executors/http/credential-injection.ts';
import { sshAuth } from '../../../src/executors/ssh/auth.ts';
import { credentialFit, type AuthPlacement, type CredentialFacts } from '../../../src/rules/credential-fit.ts';
import { isPosternError, type ErrorCode } from '../../../src/rules/errors.ts';
import type { Credential, CredentialKind } from '../../../src/vault/types.ts';
import { catalogText, TARGETS } from '../contracts/helpers.ts';

const FIELDS: Record<CredentialKind, Record<string, string>> = {
  http_bearer: {},
  http_basic: { username: 'alice' },
  http_header: { header: 'X-Api-Key' },
  http_query: { param: 'api_key' },
  aws_sigv4: { access_key_id: 'AKIDEXAMPLE' },
  oauth_client_credentials: { client_id: 'client-1' },
  oauth_refresh_token: { client_id: 'client-1' },
  github_app: { app_id: '1', installation_id: '2' },
  ssh_key: {},
  ssh_password: {},
  tls_key: { certificate: 'MIIB' },
  postgres_url: {},
};
const KINDS = Object.keys(FIELDS) as CredentialKind[];

function credential(name: string, kind: CredentialKind, fields: Record<string, string> = FIELDS[kind]): Credential {
  return { meta: { name, kind, created_at: '2026-01-01T00:00:00.000Z', rotated_at: null, last_used_at: null, fields }, secret: {} };
}

function codeOf(f: () => unknown): ErrorCode | 'ok' {
  try {
    f();
    return 'ok';
  } catch (e) {
    assert.ok(isPosternError(e), String(e));
    return e.code;
  }
}

const PLACEMENTS: AuthPlacement[] = [{ kind: 'bearer' }, { kind: 'basic' }, { kind: 'header', name: 'x-api-key' }, { kind: 'query', name: 'api_key' }, { kind: 'aws_sigv4', region: 'us-east-1', service: 's3' }, { kind: 'oauth_client_credentials', tokenUrl: 'https://auth.example.com/token', scopes: [] }, { kind: 'oauth_refresh_token', tokenUrl: 'https://auth.example.com/token', scopes: [] }, { kind: 'github_app', api: 'https://api.github.com' }];
const EXPECTED = { bearer: 'http_bearer', basic: 'http_basic', header: 'http_header', query: 'http_query', aws_sigv4: 'aws_sigv4', oauth_client_credentials: 'oauth_client_credentials', oauth_refresh_token: 'oauth_refresh_token', github_app: 'github_app' } as const;

describe('the rule: kind × target', () => {
  for (const auth of PLACEMENTS) {
    for (const kind of KINDS) {
      it(`auth ${auth.kind} with ${kind}`, () => {
        assert.equal(credentialFit({ kind: 'http', auth }, { name: 'c', kind, fields: FIELDS[kind] }).fits, kind === EXPECTED[auth.kind]);
      });
    }
  }
  for (const kind of KINDS) {
    it(`ssh with ${kind}`, () => assert.equal(credentialFit({ kind: 'ssh' }, { name: 'c', kind, fields: {} }).fits, kind.startsWith('ssh_')));
  }
  it('a header credential sent under another header does not fit; case and _ do not matter', () => {
    const auth: AuthPlacement = { kind: 'header', name: 'x-api-key' };
    assert.equal(credentialFit({ kind: 'http', auth }, { name: 'c', kind: 'http_header', fields: { header: 'X-Token' } }).fits, false);
    assert.equal(credentialFit({ kind: 'http', auth }, { name: 'c', kind: 'http_header', fields: { header: 'X_API_KEY' } }).fits, true);
  });
  it('a query credential sent as another parameter does not fit', () => {
    assert.equal(credentialFit({ kind: 'http', auth: { kind: 'query', name: 'api_key' } }, { name: 'c', kind: 'http_query', fields: { param: 'token' } }).fits, false);
  });
});

const CATALOG = parseCatalog(
  catalogText({}, { api: TARGETS.api, tracker: TARGETS.tracker, qapi: TARGETS.qapi, preview: TARGETS.preview }),
  'catalog.yaml',
);
const GOOD = [credential('api-token', 'http_bearer'), credential('tracker-key', 'http_header'), credential('q-key', 'http_query'), credential('deploy-key', 'ssh_key')];

describe('the catalog against the vault metadata', () => {
  it('fitting credentials pass', () => assert.doesNotThrow(() => checkCatalogCredentials(CATALOG, GOOD.map((c) => c.meta))));
  it('a wrong kind is CREDENTIAL_KIND_MISMATCH naming the target', () => {
    const creds = GOOD.map((c) => (c.meta.name === 'deploy-key' ? credential('deploy-key', 'http_bearer') : c).meta);
    assert.throws(() => checkCatalogCredentials(CATALOG, creds), (e: unknown) => isPosternError(e, 'CREDENTIAL_KIND_MISMATCH') && /deploy-key/.test(e.message) && e.details.target === 'preview');
  });
  it('several misfits are all named', () => {
    const creds = [credential('api-token', 'ssh_password'), credential('tracker-key', 'http_header', { header: 'X-Other' }), credential('q-key', 'http_query', { param: 'key' }), credential('deploy-key', 'ssh_key')].map((c) => c.meta);
    assert.deepEqual(credentialMisfits(CATALOG, creds).map((m) => m.target), ['api', 'qapi', 'tracker']);
    assert.throws(() => checkCatalogCredentials(CATALOG, creds), (e: unknown) => isPosternError(e, 'CREDENTIAL_KIND_MISMATCH') && /3 targets/.test(e.message));
  });
  it('a missing credential is not a misfit (parseCatalog reports unknown names)', () => {
    assert.deepEqual(credentialMisfits(CATALOG, []), []);
  });

});

describe('one verdict: catalog load, daemon execution step and executors agree', () => {
  const facts = (c: Credential): CredentialFacts => c.meta;
  it('property: any target × any credential', () => {
    const targetName = fc.constantFrom(...CATALOG.targets.keys());
    const kind = fc.constantFrom(...KINDS);
    const header = fc.constantFrom('X-Api-Key', 'x_api_key', 'X-Other');
    const param = fc.constantFrom('api_key', 'API_KEY', 'key');
    fc.assert(
      fc.property(targetName, kind, header, param, (tn, k, h, p) => {
        const target = CATALOG.targets.get(tn)!;
        const fields = k === 'http_header' ? { header: h } : k === 'http_query' ? { param: p } : FIELDS[k];
        const cred = credential(target.credential, k, fields);
        const atLoad = codeOf(() => checkCatalogCredentials(CATALOG, [facts(cred)]));
        const action = target.kind === 'http'
          ? ({ kind: 'http', credential: target.credential, target: tn, auth: target.auth } as const)
          : ({ kind: 'ssh', credential: target.credential, target: tn } as const);
        const atExecution = codeOf(() => checkCredential(action as Parameters<typeof checkCredential>[0], cred));
        assert.equal(atExecution, atLoad, `${tn} with ${k}`);
        assert.ok(atLoad === 'ok' || atLoad === 'CREDENTIAL_KIND_MISMATCH');
        // The executors know only their protocol: a credential of the other protocol is the same misfit there.
        const protocolMismatch = (target.kind === 'ssh') !== k.startsWith('ssh_');
        if (protocolMismatch) {
          const inExecutor = target.kind === 'ssh' ? codeOf(() => sshAuth(cred, cred.meta.name)) : codeOf(() => credentialInjection(cred));
          assert.equal(inExecutor, 'CREDENTIAL_KIND_MISMATCH');
        }
      }),
      { numRuns: 300 },
    );
  });
  it('a missing credential is CREDENTIAL_MISSING, not a misfit', () => {
    assert.equal(codeOf(() => checkCredential({ kind: 'ssh', credential: 'deploy-key', target: 'preview' } as Parameters<typeof checkCredential>[0], undefined)), 'CREDENTIAL_MISSING');
  });
});
