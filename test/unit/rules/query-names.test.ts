// Query names that a server reads as the credential's parameter (THREATS row
// 5): on a broad tool the agent chooses query names, and `api.key`, `api key`,
// ` api_key`, `api_key[]`, `api%5Fkey` or a fullwidth `ｋ` would travel beside
// the real `api_key` credential parameter, where PHP-style parsers, decoders
// and case-insensitive lookups read them as `api_key`. Every such name is
// refused by the resolver, by a catalog's own query, and by the executor.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseCatalog, resolveAction } from '../../../src/contracts/index.ts';
import { encodeComponent } from '../../../src/contracts/templates/path-template.js';
import { prepareRequest } from '../../../src/executors/http/prepare-request.ts';
import type { HttpCredential } from '../../../src/executors/http/index.ts';
import { isPosternError } from '../../../src/rules/errors.ts';
import { methodOverrideParam, queryNameCollides, queryNameProblem } from '../../../src/rules/query-names.ts';
import { catalog, catalogText, tool, toolOf, TARGETS } from '../contracts/helpers.ts';

const broad = catalog({ q: tool([{ revision: 1, http_request: { target: 'qapi', methods: ['GET', 'POST'], paths: ['/x'] } }]) });
const CREDENTIAL: HttpCredential = { meta: { name: 'q-key', kind: 'http_query', fields: { param: 'api_key' } }, secret: { value: Buffer.from('secret-value') } };

function agentQuery(name: string): 'resolved' | 'refused' {
  return resolveAction(toolOf(broad, 'q').current, { method: 'GET', path: '/x', query: { [name]: 'v' } }).kind;
}

function executorRefuses(name: string): boolean {
  try {
    prepareRequest({ origin: 'https://q.example.com', method: 'GET', path: '/x', query: [[name, 'v']], headers: [] }, { credential: CREDENTIAL }, 'https://q.example.com');
    return false;
  } catch (e) {
    assert.ok(isPosternError(e, 'INPUT_INVALID'), String(e));
    return true;
  }
}

function catalogRefuses(name: string): boolean {
  const http = { target: 'qapi', method: 'GET', path: '/x', query: { [name]: 'v' } };
  try {
    parseCatalog(catalogText({ t: tool([{ revision: 1, input: { type: 'object', properties: {} }, http }]) }, TARGETS), 'catalog.yaml');
    return false;
  } catch (e) {
    assert.ok(isPosternError(e, 'CATALOG_INVALID'), String(e));
    return true;
  }
}

const COLLIDING: string[] = [
  'api_key', 'API_KEY', 'Api_Key', 'api.key', 'api key', 'api+key', 'api-key', 'api[key',
  ' api_key', 'api_key ', '\tapi_key', 'api_key\u00a0', '\u3000api_key',
  'api_key[]', 'api_key[0]', 'api_key[x]', 'api_key.x', 'api_key[][]',
  'api%5Fkey', 'api%5fkey', 'api%255Fkey', '%61pi_key', 'api%2Ekey', 'api%20key', 'api_key%00', 'api_key%00junk',
  'api_key\u0000', 'api_key\u0000x', 'api_key\u200b', 'api_key\ufe0f', 'api\u034f_key', 'api_key\u{e0001}', '\ufeffapi_key', 'api\u200b_key', 'api_\u202ekey',
  'ａｐｉ＿ｋｅｙ', 'api_ｋey', 'API＿KEY', 'ａｐｉ．ｋｅｙ', 'apı_key', 'APİ_KEY', 'api_\u212aey', 'x&api_key', 'x;api_key', 'x=y&api_key', 'x%26api_key', 'x%3Bapi_key',
];
const ORDINARY: string[] = ['api', 'key', 'api_keys', 'my_api_key', 'page', 'per_page', 'q', 'state', 'api_key_id', 'apikey2'];

describe('a name that a server may read as the credential parameter', () => {
  for (const n of COLLIDING) {
    it(JSON.stringify(n), () => {
      assert.ok(queryNameCollides(n, 'api_key'));
      assert.equal(agentQuery(n), 'refused', 'broad tool, agent query');
      assert.ok(executorRefuses(n), 'executor');
    });
  }
  it('is refused in a catalog query too', () => {
    for (const n of ['api.key', 'API_KEY', 'api_key[]', 'api-key']) assert.ok(catalogRefuses(n), n);
  });
  for (const n of ORDINARY) {
    it(`${JSON.stringify(n)} is an ordinary name`, () => {
      assert.equal(agentQuery(n), 'resolved');
      assert.equal(executorRefuses(n), false);
      assert.equal(catalogRefuses(n), false);
    });
  }
});

describe('method-override parameters', () => {
  for (const n of ['_method', '_METHOD', '%5Fmethod', '_method[]', ' _method', '.method', 'x-http-method-override', 'X_HTTP_METHOD_OVERRIDE', 'x-method-override', 'x-http-method', '＿method']) {
    it(`${JSON.stringify(n)} is refused as an agent query name`, () => {
      assert.notEqual(methodOverrideParam(n), undefined);
      assert.equal(agentQuery(n), 'refused');
    });
  }
  it('must be fixed text in a catalog query', () => {
    const input = { type: 'object', required: ['m'], properties: { m: { type: 'string', maxLength: 10 } } };
    assert.throws(() => parseCatalog(catalogText({ t: tool([{ revision: 1, input, http: { target: 'api', method: 'POST', path: '/x', query: { _method: '{m}' } } }]) }), 'c.yaml'), /overrides the method/);
    assert.doesNotThrow(() => parseCatalog(catalogText({ t: tool([{ revision: 1, input: { type: 'object', properties: {} }, http: { target: 'api', method: 'POST', path: '/x', query: { _method: 'PUT' } } }]) }), 'c.yaml'));
  });
  it('ordinary names pass', () => {
    for (const n of ['method', 'methods', 'x_method', 'http_method_name']) assert.equal(methodOverrideParam(n), undefined, n);
  });
  it('a broad tool refuses them as top-level body fields too (Laravel reads a JSON body as parameters)', () => {
    for (const k of ['_method', '_METHOD', ' _method', 'x-http-method-override']) {
      assert.equal(resolveAction(toolOf(broad, 'q').current, { method: 'POST', path: '/x', body: { [k]: 'DELETE', title: 't' } }).kind, 'refused', k);
    }
    assert.equal(resolveAction(toolOf(broad, 'q').current, { method: 'POST', path: '/x', body: { method: 'card', title: 't' } }).kind, 'resolved');
  });
  it('must be a fixed value in a catalog body', () => {
    const input = { type: 'object', required: ['m'], properties: { m: { type: 'string', maxLength: 10 } } };
    assert.throws(() => parseCatalog(catalogText({ t: tool([{ revision: 1, input, http: { target: 'api', method: 'POST', path: '/x', body: { _method: '{m}' } } }]) }), 'c.yaml'), /overrides the method/);
  });
});

describe('properties', () => {
  // Spell api_key with random case, fullwidth letters, separators PHP folds, padding, suffixes and encodings.
  const FULLWIDTH = (c: string): string => String.fromCharCode(c.charCodeAt(0) + 0xfee0);
  const letter = (c: string) => fc.constantFrom(c, c.toUpperCase(), FULLWIDTH(c), FULLWIDTH(c.toUpperCase()));
  const sep = fc.constantFrom('_', '.', ' ', '+', '-', '＿', '%5F', '%2E', '%20'); // '[' is in the corpus: with a suffix it opens an array instead
  const lead = fc.constantFrom('', ' ', '\t', '\u00a0', '\u200b', '\ufeff');
  const pad = fc.constantFrom('', ' ', '\t', '\u00a0', '\u200b', '\ufeff', '\u0000');
  const suffix = fc.constantFrom('', '[]', '[0]', '[a]', '[a][b]', '\u0000tail');
  const variant = fc
    .tuple(lead, letter('a'), letter('p'), letter('i'), sep, letter('k'), letter('e'), letter('y'), suffix, pad, fc.nat({ max: 2 }))
    .map(([p1, a, p, i, s, k, e, y, sfx, p2, rounds]) => {
      let v = `${p1}${a}${p}${i}${s}${k}${e}${y}${sfx}${p2}`;
      for (let r = 0; r < rounds; r++) v = encodeComponent(v);
      return v;
    });
  it('every spelling of api_key collides and is refused by the resolver and the executor', () => {
    fc.assert(
      fc.property(variant, (v) => {
        assert.ok(queryNameCollides(v, 'api_key'), JSON.stringify(v));
        assert.equal(agentQuery(v), 'refused');
        assert.ok(executorRefuses(v));
      }),
      { numRuns: 400 },
    );
  });
  it('whatever the resolver lets through, the executor sends', () => {
    fc.assert(
      fc.property(fc.oneof(variant, fc.string({ minLength: 1, maxLength: 12 }), fc.stringMatching(/^[a-z_]{1,10}$/)), (v) => {
        const r = resolveAction(toolOf(broad, 'q').current, { method: 'GET', path: '/x', query: { [v]: 'v' } });
        if (r.kind === 'resolved' && r.action.kind === 'http') assert.equal(executorRefuses(v), false, JSON.stringify(v));
      }),
      { numRuns: 400 },
    );
  });
});

// A query name that holds a URL delimiter (`x#`: `#` ends the query where a
// server or proxy decodes the name; `&`, `;`, `=` split it; `+` is a space),
// a `%`, a character no URL may hold unescaped, or an invisible, control or
// unassigned one — as written or once NFKC-folded — never reaches a target:
// the resolver, the catalog (its own queries and a credential's parameter)
// and the executor refuse it alike, and none of them ever sends it.
describe('a query name with a URL delimiter or an unsafe character', () => {
  const DELIMITERS = [...":/?#[]@!$&'()*+,;=%"];
  const UNSAFE = [' ', '"', '<', '>', '\\', '^', '`', '{', '|', '}', '\u0000', '\u0007', '\t', '\n', '\r', '\u007f', '\u0085', '\u00a0', '\u2028', '\u200b', '\u200e', '\u202e', '\u2066', '\ufeff', '\u00ad', '\u034f', '\ue000', '\u{e0001}', '\u{10ffff}', '\ud800'];
  /** Fullwidth and small forms that NFKC folds into delimiters. */
  const FOLDED = ['＃', '？', '＆', '；', '＝', '＋', '％', '／', '﹟', '﹠', '︔', '＠', '：'];
  const rows: [string, string][] = [];
  for (const ch of [...DELIMITERS, ...UNSAFE, ...FOLDED]) {
    for (const at of ['start', 'middle', 'end'] as const) {
      const name = at === 'start' ? `${ch}x` : at === 'middle' ? `x${ch}y` : `x${ch}`;
      // A well-formed bracket suffix (`x[]`) is the one allowed use of the brackets; a leading `$`
      // before a letter (OData's `$filter`) the one allowed `$`.
      if (name === 'x[]' || name === '$x') continue;
      rows.push([`${JSON.stringify(ch)} at the ${at}`, name]);
    }
  }
  rows.push(['a lone $', '$'], ['$ before a digit', '$1'], ['two $', '$$x'], ['$ inside an OData name', '$fil$ter'], ['an unclosed suffix', 'x[a'], ['a nested bracket', 'x[a[b]]'], ['a suffix alone', '[a]'], ['a stray ]', 'x]'], ['a delimiter inside a suffix', 'x[a#]'], ['empty', '']);
  for (const [what, name] of rows) {
    it(`${what}: refused by the rule, the resolver, the executor and the catalog`, () => {
      assert.notEqual(queryNameProblem(name), undefined);
      assert.equal(agentQuery(name), 'refused');
      assert.ok(executorRefuses(name));
      assert.ok(catalogRefuses(name));
    });
  }
  it('x# refused by the resolver names the rule, not the value', () => {
    const r = resolveAction(toolOf(broad, 'q').current, { method: 'GET', path: '/x', query: { 'x#': 'v' } });
    assert.equal(r.kind, 'refused');
    assert.match(JSON.stringify(r), /URL delimiter/);
  });
  it('is refused as the credential\'s own query parameter in a target', () => {
    const text = catalogText({ t: tool([{ revision: 1, input: { type: 'object', properties: {} }, http: { target: 'qapi', method: 'GET', path: '/x' } }]) }, TARGETS).replace(/query: api_key/, 'query: "api#key"');
    assert.notEqual(text.indexOf('api#key'), -1, 'the fixture names the credential parameter');
    assert.throws(() => parseCatalog(text, 'catalog.yaml'), (e: unknown) => isPosternError(e, 'CATALOG_INVALID'));
  });
  it('ordinary names, bracket suffixes and letters beyond ASCII pass', () => {
    for (const n of ['q', 'per_page', 'per-page', 'a.b', 'x~y', 'ids[]', 'filter[state]', 'a[b][c]', 'a[]', 'ｑ', 'café', '＿x', '$filter', '$select', '$top']) {
      assert.equal(queryNameProblem(n), undefined, n);
      assert.equal(agentQuery(n), 'resolved', n);
      assert.equal(executorRefuses(n), false, n);
    }
  });
  const ordinary = fc.stringMatching(/^[A-Za-z0-9._~-]{1,8}$/);
  const bad = fc.constantFrom(...DELIMITERS.filter((c) => c !== '[' && c !== ']'), ...UNSAFE, ...FOLDED);
  it('property: an ordinary name with any such character put anywhere in it is refused everywhere', () => {
    fc.assert(
      fc.property(ordinary, bad, fc.nat(), (base, ch, at) => {
        const i = at % (base.length + 1);
        const name = base.slice(0, i) + ch + base.slice(i);
        if (/^\$[A-Za-z]/.test(name) && !name.slice(1).includes('$')) return; // OData's `$filter`: allowed
        assert.notEqual(queryNameProblem(name), undefined, JSON.stringify(name));
        assert.equal(agentQuery(name), 'refused', JSON.stringify(name));
        assert.ok(executorRefuses(name), JSON.stringify(name));
      }),
      { numRuns: 500 },
    );
  });
  it('property: what the rule lets through reaches the target percent-encoded, with no delimiter of its own', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 10, unit: 'binary' }), (name) => {
        if (queryNameProblem(name) !== undefined) return;
        const sent = encodeURIComponent(name);
        assert.doesNotMatch(sent, /[#?&;=+/:@!$'()*,]/, JSON.stringify(name));
      }),
      { numRuns: 500 },
    );
  });
});
