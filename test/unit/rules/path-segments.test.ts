// Path segments that servers resolve as `.` or `..` (THREATS rows 1 and 6):
// a corpus of variants — encodings, trimmed bytes, format characters,
// compatibility forms, path parameters — must be refused in every place a
// path is built or sent: a fixed tool's path parameter, a broad tool's path,
// and the HTTP executor's own last check. Property tests build more variants
// and check that ordinary segments still pass.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { resolveAction, type JsonObject, type ResolveResult } from '../../../src/contracts/index.ts';
import { encodeComponent } from '../../../src/contracts/templates/path-template.js';
import { prepareRequest } from '../../../src/executors/http/prepare-request.ts';
import { isPosternError } from '../../../src/rules/errors.ts';
import { pathSegmentProblem, resolvedSegmentText } from '../../../src/rules/path-segments.ts';
import { decodedForms } from '../../../src/rules/percent-readings.ts';
import { catalog, objectSchema, str, tool, toolOf } from '../contracts/helpers.ts';

const fixed = catalog({
  get: tool([{ revision: 1, input: objectSchema({ name: str({ maxLength: 400 }) }, ['name']), http: { target: 'api', method: 'GET', path: '/files/{name}/raw' } }]),
  broad: tool([{ revision: 1, http_request: { target: 'api', methods: ['GET'], paths: ['/files/{name}/raw', '/tree/{...rest}'] } }]),
});

function run(name: string, args: JsonObject): ResolveResult {
  return resolveAction(toolOf(fixed, name).current, args);
}

/** The executor's verdict on a whole, already encoded request path. */
function executorRefuses(path: string): boolean {
  try {
    prepareRequest({ origin: 'https://api.example.com', method: 'GET', path, query: [], headers: [] }, { credential: null }, 'https://api.example.com');
    return false;
  } catch (e) {
    assert.ok(isPosternError(e, 'INPUT_INVALID'), String(e));
    return true;
  }
}

const ZW = ['\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u200e', '\u200f', '\u202a', '\u202e', '\u2066', '\u2069', '\u00ad', '\u061c'];
const SPACES = [' ', '\t', '\n', '\r', '\u000b', '\u000c', '\u00a0', '\u1680', '\u2000', '\u2007', '\u2028', '\u3000', '\u0085', '\u0000', '\u007f', '\u0090'];
const DOTS = ['.', '\uff0e', '\u2024', '\ufe52', '\u3002', '\uff61'];

/** Raw (unencoded) values an agent may send as one path parameter; each resolves to `.`, `..` or nothing at some server. */
const DOT_VALUES: string[] = [
  '.', '..', '%2e', '%2e%2e', '%2E%2e', '.%2E', '%252e%252e', '%25252e%25252e', '%c0%ae%c0%ae', '%C0%AE.', '%e0%80%ae%e0%80%ae', '%u002e%u002e', '%U002E.',
  '..%00', '..%2500', '.%00.', '..%20', '..%09', '..%0a', '..%0d%0a', '%20..', '..%a0', '..%c2%a0', '..%e2%80%8b', '..%ef%bb%bf',
  '.. ', ' ..', '..\t', '\t..', '.. \u00a0', '.\u00a0.', '. .', '.\t.',
  '..;', '..;x', '..;jsessionid=1', '.;x', ';x', ';', '..%3b', '..%3Bx', '..%253bx', '..?', '..%3f', '..#', '..%23x',
  '\uff0e\uff0e', '\uff0e.', '\u2025', '\u2024\u2024', '\ufe52\ufe52', '\u3002\u3002', '\uff61\uff61', '%ef%bc%8e%ef%bc%8e',
  ' ', '%20', '\u200b', '%e2%80%8b', '\u3000',
  '..\ufe0f', '..\u034f', '.\u3164.', '..\u{e0001}', '\u115f..', '..%ef%b8%8f',
  ...ZW.flatMap((z) => [`..${z}`, `${z}..`, `.${z}.`, `${z}`]),
  ...SPACES.filter((s) => s.charCodeAt(0) >= 0x20 && !(s.charCodeAt(0) >= 0x7f && s.charCodeAt(0) <= 0x9f)).flatMap((s) => [`..${s}`, `${s}..`, `.${s}.`]),
];

/** Ordinary values that must keep working (and their encoded path). */
const ORDINARY: [string, string][] = [
  ['report.txt', 'report.txt'],
  ['...', '...'],
  ['a..b', 'a..b'],
  ['.hidden', '.hidden'],
  ['v1;x', 'v1%3Bx'],
  ['a b', 'a%20b'],
  ['ñ😀', '%C3%B1%F0%9F%98%80'],
  ['€uro', '%E2%82%ACuro'],
  ['x\u200by', 'x%E2%80%8By'],
];

describe('the segment rule', () => {
  it('reads the decoding rounds as UTF-8 (lenient) and Latin-1', () => {
    assert.ok(decodedForms('%252e').includes('.'));
    assert.ok(decodedForms('%c0%ae').includes('.'));
    assert.ok(decodedForms('%a0').includes('\u00a0'));
    assert.ok(decodedForms('%u002e').includes('.'));
  });
  it('trims, folds and cuts like the servers do', () => {
    assert.equal(resolvedSegmentText('..\u0000'), '..');
    assert.equal(resolvedSegmentText('\uff0e\uff0e'), '..');
    assert.equal(resolvedSegmentText('..;jsessionid=1'), '..');
    assert.equal(resolvedSegmentText('\u202e..\u200b'), '..');
  });
  for (const v of DOT_VALUES) {
    it(`${JSON.stringify(v)} is refused by the rule`, () => assert.notEqual(pathSegmentProblem(v), undefined));
  }
  for (const [v] of ORDINARY) it(`${JSON.stringify(v)} is an ordinary segment`, () => assert.equal(pathSegmentProblem(v), undefined));
});

describe('a fixed tool refuses every variant as a path parameter', () => {
  for (const v of DOT_VALUES) {
    it(JSON.stringify(v), () => {
      const r = run('get', { name: v });
      assert.equal(r.kind, 'refused', JSON.stringify(r));
      assert.equal(r.kind === 'refused' ? r.field : '', 'name');
    });
  }
  for (const [v, enc] of ORDINARY) {
    it(`${JSON.stringify(v)} → /files/${enc}/raw`, () => {
      const r = run('get', { name: v });
      assert.equal(r.kind === 'resolved' && r.action.kind === 'http' ? r.action.path : JSON.stringify(r), `/files/${enc}/raw`);
    });
  }
});

describe('a broad tool refuses every variant in the agent path', () => {
  for (const v of DOT_VALUES) {
    // The agent writes the path percent-encoded; a value written encoded once is the same attack one round later.
    for (const written of [encodeComponent(v), encodeComponent(encodeComponent(v))]) {
      it(`/tree/a/${written}`, () => {
        assert.equal(run('broad', { method: 'GET', path: `/tree/a/${written}` }).kind, 'refused');
        assert.equal(run('broad', { method: 'GET', path: `/files/${written}/raw` }).kind, 'refused');
      });
    }
  }
});

describe('the HTTP executor refuses every variant in the request path', () => {
  for (const v of DOT_VALUES) {
    const written = encodeComponent(v);
    it(`/a/${written}/b`, () => assert.ok(executorRefuses(`/a/${written}/b`)));
  }
  it('keeps ordinary paths and a trailing slash', () => {
    for (const [, enc] of ORDINARY) assert.equal(executorRefuses(`/files/${enc}/raw/`), false, enc);
    assert.equal(executorRefuses('/'), false);
    assert.ok(executorRefuses('/a//b'), 'an inner empty segment');
  });
});

describe('properties', () => {
  const noise = fc.constantFrom(...ZW, ...SPACES, '');
  const dot = fc.constantFrom(...DOTS, '%2e', '%2E', '%252e', '%c0%ae');
  const tail = fc.constantFrom('', ';', ';x=1', '%3b', '?', '%3fq', '#f');
  const dotLike = fc
    .tuple(fc.array(noise, { maxLength: 3 }), dot, fc.array(noise, { maxLength: 3 }), fc.option(dot, { nil: '' }), fc.array(noise, { maxLength: 3 }), tail, fc.nat({ max: 2 }))
    .map(([a, d1, b, d2, c, t, rounds]) => {
      let v = `${a.join('')}${d1}${b.join('')}${d2}${c.join('')}${t}`;
      for (let i = 0; i < rounds; i++) v = encodeComponent(v);
      return v;
    });

  it('a segment made of dots, invisible characters and a parameter tail is refused everywhere', () => {
    fc.assert(
      fc.property(dotLike, (v) => {
        assert.notEqual(pathSegmentProblem(v), undefined);
        assert.equal(run('get', { name: v }).kind, 'refused');
        assert.ok(executorRefuses(`/a/${encodeComponent(v)}`));
      }),
      { numRuns: 500 },
    );
  });

  it('ordinary segments pass, and the catalog and the executor agree on them', () => {
    const ordinary = fc.stringMatching(/^[A-Za-z0-9_~-][A-Za-z0-9._~ -]{0,20}$/).filter((s) => s.trim() !== '' && !/^[. ]+$/.test(s));
    fc.assert(
      fc.property(ordinary, (v) => {
        const r = run('get', { name: v });
        assert.equal(r.kind, 'resolved');
        assert.ok(r.kind === 'resolved' && r.action.kind === 'http');
        assert.equal(executorRefuses(r.action.path), false, r.action.path);
      }),
      { numRuns: 300 },
    );
  });

  it('whatever the catalog resolves, the executor sends (no value passes one check and fails the other)', () => {
    fc.assert(
      fc.property(fc.oneof(dotLike, fc.string({ maxLength: 12 }), fc.string({ unit: "binary", maxLength: 6 })), (v) => {
        const r = run('get', { name: v });
        if (r.kind === 'resolved' && r.action.kind === 'http') assert.equal(executorRefuses(r.action.path), false, r.action.path);
      }),
      { numRuns: 500 },
    );
  });
});
