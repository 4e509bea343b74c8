// Canonical JSON: sorted keys, no whitespace, JCS number forms, and refusal of
// anything that is not plain JSON (a dropped field would let two calls share a digest).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { canonicalDigest, canonicalJson, JOURNAL_RULES } from '../../../src/rules/canonical.ts';
import { isPosternError } from '../../../src/rules/errors.ts';

describe('canonicalJson', () => {
  const cases: [string, unknown, string][] = [
    ['sorted keys, nested', { b: 1, a: { d: [true, null], c: 'x' } }, '{"a":{"c":"x","d":[true,null]},"b":1}'],
    ['UTF-16 code unit order', { 'é': 1, z: 2, Z: 3, '10': 4, '9': 5 }, '{"10":4,"9":5,"Z":3,"z":2,"é":1}'],
    ['-0 is 0', { n: -0 }, '{"n":0}'],
    ['shortest numbers', [1e21, 0.1, 1.5e-7, 100], '[1e+21,0.1,1.5e-7,100]'],
    ['string escapes', ['a"b\\c\n\u0001'], '["a\\"b\\\\c\\n\\u0001"]'],
    ['unicode kept', ['ñ😀'], '["ñ😀"]'],
    ['own __proto__ key is data', JSON.parse('{"__proto__":{"x":1}}'), '{"__proto__":{"x":1}}'],
  ];
  for (const [name, value, expected] of cases) {
    it(name, () => assert.equal(canonicalJson(value), expected));
  }

  const refused: [string, unknown][] = [
    ['undefined field', { a: undefined }],
    ['NaN', [NaN]],
    ['Infinity', { x: Infinity }],
    ['bigint', { x: 1n }],
    ['function', { f: () => 1 }],
    ['Date', { d: new Date(0) }],
    ['Map', new Map()],
    ['sparse array', [1, , 3]], // eslint-disable-line no-sparse-arrays
    ['lone surrogate', ['\uD800']],
    ['lone surrogate in a key', { '\uDC00': 1 }],
  ];
  for (const [name, value] of refused) {
    it(`refuses ${name}`, () => assert.throws(() => canonicalJson(value), (e: unknown) => isPosternError(e, 'INPUT_INVALID')));
  }

  it('refuses cycles', () => {
    const a: Record<string, unknown> = {};
    a['self'] = a;
    assert.throws(() => canonicalJson(a), (e: unknown) => isPosternError(e, 'INPUT_INVALID'));
  });

  it('property: equal to JSON.parse round trip and independent of key order', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const text = canonicalJson(v);
        assert.equal(canonicalJson(JSON.parse(text)), text);
        assert.deepEqual(JSON.parse(text), JSON.parse(JSON.stringify(v)));
      }),
      { numRuns: 300 },
    );
  });

  it('digest is the SHA-256 of the canonical text', () => {
    assert.equal(canonicalDigest({ b: 1, a: 2 }), canonicalDigest({ a: 2, b: 1 }));
    assert.equal(canonicalDigest({}), '44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a');
  });
});

describe('one canonical encoding for digests and the journal chain', () => {
  it('strict and journal rules give the same bytes for every JSON value', () => {
    fc.assert(fc.property(fc.jsonValue(), (v) => canonicalJson(v) === canonicalJson(v, JOURNAL_RULES)));
  });

  it('the journal rules leave out undefined members and escape lone surrogates; the strict rules refuse both', () => {
    assert.equal(canonicalJson({ b: undefined, a: 1 }, JOURNAL_RULES), '{"a":1}');
    assert.equal(canonicalJson(['\ud800'], JOURNAL_RULES), '["\\ud800"]');
    assert.throws(() => canonicalJson({ b: undefined }), /undefined/);
    assert.throws(() => canonicalJson('\ud800'), /lone surrogate/);
  });
});
