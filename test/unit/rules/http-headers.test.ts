// One reserved-header rule (THREATS row 5): whatever header name a catalog
// declares, `catalog check` (parseCatalog), the resolved request the operator
// approves and the HTTP executor reach the same verdict — a name the catalog
// accepts is sent, a name it refuses is refused by the executor too. Names
// are compared in any case and with `_` read as `-` (CGI folds both).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseCatalog, resolveAction, type Catalog } from '../../../src/contracts/index.ts';
import { httpSpec } from '../../../src/daemon/pipeline/stages/execution/execute.ts';
import { prepareRequest } from '../../../src/executors/http/prepare-request.ts';
import type { HttpCredential, HttpRequestSpec } from '../../../src/executors/http/index.ts';
import { isPosternError } from '../../../src/rules/errors.ts';
import { credentialHeaderProblem, headerKey, isRequestMeaningHeader, RESERVED_HEADERS, reservedHeader } from '../../../src/rules/http-headers.ts';
import { catalogText, tool, TARGETS } from '../contracts/helpers.ts';

const CREDENTIAL: HttpCredential = { meta: { name: 'tracker-key', kind: 'http_header', fields: { header: 'X-Api-Key' } }, secret: { value: Buffer.from('secret-value') } };
const ORIGIN = 'https://tracker.example';

function catalogWith(name: string, withBody: boolean): Catalog | undefined {
  const http = { target: 'tracker', method: 'POST', path: '/x', headers: { [name]: 'v' }, ...(withBody ? { body: { a: 1 } } : {}) };
  try {
    return parseCatalog(catalogText({ t: tool([{ revision: 1, input: { type: 'object', properties: {} }, http }]) }, TARGETS), 'catalog.yaml');
  } catch (e) {
    assert.ok(isPosternError(e, 'CATALOG_INVALID'), String(e));
    return undefined;
  }
}

function executorAccepts(s: HttpRequestSpec): boolean {
  try {
    prepareRequest(s, { credential: CREDENTIAL, idempotencyKey: { header: 'Idempotency-Key', value: 'key-0001' } }, ORIGIN);
    return true;
  } catch (e) {
    assert.ok(isPosternError(e, 'INPUT_INVALID') || isPosternError(e, 'SECRET_INVALID'), String(e));
    return false;
  }
}

/** The verdicts of the catalog and of the executor for one declared header name. */
function verdicts(name: string, withBody: boolean): { catalog: boolean; executor: boolean } {
  const c = catalogWith(name, withBody);
  if (c === undefined) {
    const raw: HttpRequestSpec = { origin: ORIGIN, method: 'POST', path: '/x', query: [], headers: [[name, 'v']], ...(withBody ? { body: { contentType: 'application/json', bytes: Buffer.from('{}') } } : {}) };
    return { catalog: false, executor: executorAccepts(raw) };
  }
  const r = resolveAction(c.tools.get('t')!.current, {});
  assert.ok(r.kind === 'resolved' && r.action.kind === 'http', JSON.stringify(r));
  return { catalog: true, executor: executorAccepts(httpSpec(r.action)) };
}

const spellings = (n: string): string[] => [n, n.toUpperCase(), n.replace(/(^|-)([a-z])/g, (_, d: string, c: string) => d + c.toUpperCase()), n.replaceAll('-', '_'), n.toUpperCase().replaceAll('-', '_')];

const CORPUS: string[] = [
  ...[...RESERVED_HEADERS].flatMap(spellings),
  'proxy-anything', 'Proxy_Foo', 'PROXY-X',
  'x-api-key', 'X_API_KEY', 'x_Api-key',
  'Accept', 'X-Trace', 'User-Agent', 'user_agent', 'Content-Type', 'content_type', 'If-Match', 'X-Request-Id',
  'X-HTTP-Method-Override', 'X-Original-URL', 'X-Forwarded-Host', 'Forwarded', 'X_Forwarded_For',
];

describe('catalog and executor agree on every declared header name', () => {
  for (const name of CORPUS) {
    for (const withBody of [false, true]) {
      it(`${name}${withBody ? ' (with a body)' : ''}`, () => {
        const v = verdicts(name, withBody);
        assert.equal(v.executor, v.catalog, `catalog ${v.catalog ? 'accepts' : 'refuses'} ${name}, the executor ${v.executor ? 'accepts' : 'refuses'} it`);
      });
    }
  }
  it('reserved names, the credential header and proxy-* are refused in every spelling', () => {
    for (const n of [...[...RESERVED_HEADERS].flatMap(spellings), 'proxy-anything', 'X_API_KEY']) assert.equal(verdicts(n, false).catalog, false, n);
  });
  it('ordinary and request-meaning headers are accepted', () => {
    for (const n of ['Accept', 'X-Trace', 'User-Agent', 'Content-Type', 'X-HTTP-Method-Override', 'Forwarded']) assert.equal(verdicts(n, true).catalog, true, n);
  });

  it('property: random spellings of reserved and ordinary names', () => {
    const base = fc.constantFrom(...RESERVED_HEADERS, 'x-api-key', 'proxy-x', 'accept', 'x-trace', 'content-type', 'user-agent', 'x-forwarded-host');
    const name = fc
      .tuple(base, fc.array(fc.boolean(), { minLength: 32, maxLength: 32 }), fc.array(fc.boolean(), { minLength: 32, maxLength: 32 }), fc.constantFrom('', '-x', 'x'))
      .map(([b, upper, under, suffix]) => [...b + suffix].map((ch, i) => (ch === '-' && under[i] ? '_' : upper[i] ? ch.toUpperCase() : ch)).join(''));
    fc.assert(
      fc.property(name, fc.boolean(), (n, withBody) => {
        const v = verdicts(n, withBody);
        assert.equal(v.executor, v.catalog, n);
      }),
      { numRuns: 300 },
    );
  });
});

describe('the rule itself', () => {
  it('keys fold case and underscores', () => {
    assert.equal(headerKey('X_Api_Key'), 'x-api-key');
    assert.equal(reservedHeader('Transfer_Encoding'), 'transfer-encoding');
    assert.equal(reservedHeader('Proxy-Anything'), 'proxy-anything');
    assert.equal(reservedHeader('X-Trace'), undefined);
  });
  it('request-meaning headers: the named ones and their families', () => {
    for (const n of ['X-HTTP-Method-Override', 'X-HTTP-Method', 'X-Method-Override', 'X-Original-URL', 'X-Rewrite-URL', 'X-Forwarded-Host', 'X-Forwarded-Prefix', 'X-Host', 'X-Forwarded-Proto', 'Forwarded', 'X_Forwarded_Host', 'x-forwarded-anything', 'X-Original-Whatever', 'X-Real-IP', 'True-Client-IP']) {
      assert.ok(isRequestMeaningHeader(n), n);
    }
    for (const n of ['Accept', 'X-Trace', 'Content-Type', 'X-Hostname-Hint']) assert.ok(!isRequestMeaningHeader(n), n);
  });
  it('a credential header may be Authorization or Cookie, never another reserved or a request-meaning name', () => {
    assert.equal(credentialHeaderProblem('Authorization'), undefined);
    assert.equal(credentialHeaderProblem('X-Api-Key'), undefined);
    for (const n of ['Host', 'Content_Length', 'Proxy-Authorization', 'X-Forwarded-Host', 'Accept-Encoding']) assert.notEqual(credentialHeaderProblem(n), undefined, n);
  });
});

describe('docs/catalog.md', () => {
  it('lists exactly the reserved headers the rule reserves', () => {
    const doc = readFileSync(new URL('../../../docs/catalog.md', import.meta.url), 'utf8');
    const bullet = /Reserved names cannot be set: ([\s\S]*?) and the target's credential header/.exec(doc)?.[1] ?? '';
    const listed = [...bullet.matchAll(/`([a-z-]+)`/g)].map((m) => m[1]);
    assert.deepEqual([...new Set(listed)].sort(), [...RESERVED_HEADERS].sort());
  });
});
