/**
 * Journal JSON: stored values round-trip exactly (key order kept), values
 * JSON cannot represent are refused with INTERNAL, and the canonical form the
 * chain hashes does not depend on key order.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { canonicalJson, toJsonText } from '../../../src/journal/json.js';

function reversedKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reversedKeys);
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v).reverse()) Object.defineProperty(out, k, { value: reversedKeys((v as Record<string, unknown>)[k]), enumerable: true, writable: true, configurable: true });
  return out;
}

describe('journal JSON', () => {
  it('stores JSON data as JSON.stringify would (key order as received)', () => {
    fc.assert(fc.property(fc.jsonValue(), (v) => assert.equal(toJsonText(v), JSON.stringify(v))));
  });

  it('canonical JSON ignores key order and parses back to the same data', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const c = canonicalJson(v);
        assert.equal(canonicalJson(reversedKeys(v)), c);
        assert.deepEqual(JSON.parse(c), JSON.parse(JSON.stringify(v)));
      }),
    );
  });

  it('sorts keys at every level', () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [{ z: 1, y: 2 }], c: null } }), '{"a":{"c":null,"d":[{"y":2,"z":1}]},"b":1}');
  });

  const refused: [string, unknown][] = [
    ['bigint', { n: 1n }],
    ['NaN', [Number.NaN]],
    ['Infinity', { x: Infinity }],
    ['a function', { f: () => 1 }],
    ['a symbol', { s: Symbol('x') }],
    ['a Date', { d: new Date(0) }],
    ['a Buffer', { b: Buffer.from('x') }],
    ['a Map', new Map()],
  ];
  for (const [name, value] of refused) {
    it(`refuses ${name} with INTERNAL`, () => {
      assert.throws(() => toJsonText(value), { code: 'INTERNAL' });
      assert.throws(() => canonicalJson(value), { code: 'INTERNAL' });
    });
  }

  it('refuses a cycle, but accepts a shared (non-cyclic) reference', () => {
    const a: Record<string, unknown> = { x: 1 };
    a['self'] = a;
    assert.throws(() => toJsonText(a), { code: 'INTERNAL' });
    const shared = { x: 1 };
    assert.equal(toJsonText({ p: shared, q: shared }), '{"p":{"x":1},"q":{"x":1}}');
  });

  it('keeps a "__proto__" own key as data', () => {
    const v = JSON.parse('{"__proto__":{"polluted":true},"a":1}') as unknown;
    assert.equal(toJsonText(v), '{"__proto__":{"polluted":true},"a":1}');
    assert.equal(canonicalJson(v), '{"__proto__":{"polluted":true},"a":1}');
  });
});
