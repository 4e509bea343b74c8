// The bounded JSON Schema subset: defaults for missing bounds, strict objects,
// refusal of unbounded or uncomparable features, agent-repairable messages.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { z } from 'zod';
import { SchemaLimits, validateArguments } from '../../../src/contracts/index.ts';
import { IssueSink } from '../../../src/contracts/issues.js';
import { parseSchema } from '../../../src/contracts/schema/schema-parse.js';
import { checkDefaults, compileSchema } from '../../../src/contracts/schema/schema-zod.js';
import { within } from '../../../src/contracts/schema/schema-within.js';

function compile(raw: unknown, mode: 'input' | 'output' = 'input') {
  const sink = new IssueSink();
  const node = parseSchema(raw, ['input'], sink, mode);
  if (node !== undefined) checkDefaults(node, ['input'], sink);
  return { node, sink, schema: node === undefined ? undefined : compileSchema(node) };
}

function problems(raw: unknown): string[] {
  return compile(raw).sink.issues.map((i) => `${i.path.join('/')}: ${i.message}`);
}

describe('input schema normalization', () => {
  it('fills in bounds and closes objects', () => {
    const { schema } = compile({ type: 'object', properties: { s: { type: 'string' }, a: { type: 'array', items: { type: 'integer' } } } });
    assert.deepEqual(schema?.json, {
      type: 'object',
      properties: { s: { type: 'string', maxLength: SchemaLimits.defaultMaxLength }, a: { type: 'array', items: { type: 'integer' }, maxItems: SchemaLimits.defaultMaxItems } },
      additionalProperties: false,
    });
  });

  it('keeps declared bounds, defaults, descriptions and the dash opt-in', () => {
    const { schema } = compile({
      type: 'object',
      required: ['b'],
      properties: { b: { type: 'string', minLength: 1, maxLength: 9, pattern: '^[a-z]+$', description: 'branch' }, n: { type: 'integer', minimum: 0, default: 3 }, f: { type: 'string', 'x-postern-allow-dash': true } },
    });
    assert.deepEqual(schema?.json['properties'], {
      b: { type: 'string', minLength: 1, maxLength: 9, pattern: '^[a-z]+$', description: 'branch' },
      n: { type: 'integer', minimum: 0, default: 3 },
      f: { type: 'string', maxLength: 4096, 'x-postern-allow-dash': true },
    });
  });

  const refused: [string, unknown, RegExp][] = [
    ['$ref', { type: 'object', properties: { a: { $ref: '#/x' } } }, /input\/properties\/a\/\$ref: references are not supported/],
    ['allOf', { type: 'object', allOf: [] }, /allOf cannot be bounded/],
    ['oneOf', { type: 'object', properties: { a: { oneOf: [] } } }, /oneOf is not supported/],
    ['patternProperties', { type: 'object', patternProperties: {} }, /patternProperties/],
    ['additionalProperties: true', { type: 'object', additionalProperties: true }, /additionalProperties: true is not allowed/],
    ['typo in a keyword', { type: 'object', properties: { a: { type: 'string', maxlength: 3 } } }, /a\/maxlength: unknown keyword/],
    ['keyword of another type', { type: 'object', properties: { a: { type: 'integer', maxLength: 3 } } }, /maxLength: does not apply here \(it is a string keyword\)/],
    ['maxLength over the cap', { type: 'object', properties: { a: { type: 'string', maxLength: 10_000_000 } } }, /maxLength: must be at most/],
    ['bad regex', { type: 'object', properties: { a: { type: 'string', pattern: '(' } } }, /pattern: is not a valid regular expression/],
    ['unknown format', { type: 'object', properties: { a: { type: 'string', format: 'hostname' } } }, /format: must be one of/],
    ['array without items', { type: 'object', properties: { a: { type: 'array' } } }, /needs an "items" schema/],
    ['tuple', { type: 'object', properties: { a: { type: 'array', items: [{ type: 'string' }] } } }, /tuples are not supported/],
    ['no type', { type: 'object', properties: { a: { minimum: 1 } } }, /needs a "type"/],
    ['non-object top', { type: 'string' }, /must be an object at the top/],
    ['required names an unknown property', { type: 'object', required: ['x'] }, /required\/0: "x" is not a declared property/],
    ['default on a required property', { type: 'object', required: ['a'], properties: { a: { type: 'string', default: 'x' } } }, /required property cannot have a default/],
    ['default of the wrong type', { type: 'object', properties: { a: { type: 'integer', default: 'x' } } }, /a\/default: the default does not satisfy/],
    ['reserved idempotency_key', { type: 'object', properties: { idempotency_key: { type: 'string' } } }, /added by Postern/],
    ['__proto__ property', JSON.parse('{"type":"object","properties":{"__proto__":{"type":"string"}}}'), /reserved/],
    ['duplicate enum values', { type: 'object', properties: { a: { enum: ['x', 'x'] } } }, /duplicate values/],
    ['enum of objects', { type: 'object', properties: { a: { enum: [{}] } } }, /strings, numbers, booleans or null/],
  ];
  for (const [name, raw, re] of refused) {
    it(`refuses ${name}`, () => assert.match(problems(raw).join('\n'), re));
  }

  it('refuses nesting deeper than the limit', () => {
    let s: unknown = { type: 'string' };
    for (let i = 0; i < SchemaLimits.maxDepth + 1; i++) s = { type: 'object', properties: { x: s } };
    assert.match(problems(s).join('\n'), /deeper than 8/);
  });

  it('output schemas stay open and unbounded', () => {
    const { schema } = compile({ type: 'object', properties: { id: { type: 'string' } } }, 'output');
    assert.deepEqual(schema?.json, { type: 'object', properties: { id: { type: 'string' } } });
    assert.equal(schema?.zod.safeParse({ id: 'x'.repeat(10_000), extra: [1] }).success, true);
  });
});

describe('validateArguments', () => {
  const { schema } = compile({
    type: 'object',
    required: ['branch'],
    properties: {
      branch: { type: 'string', maxLength: 10 },
      tags: { type: 'array', items: { type: 'string', maxLength: 3 }, maxItems: 2, uniqueItems: true },
      region: { enum: ['eu', 'us'] },
      n: { type: 'integer', default: 1 },
      labels: { type: 'object', additionalProperties: { type: 'string', maxLength: 5 }, maxProperties: 2 },
    },
  });
  const v = (raw: unknown) => validateArguments(schema!, raw);

  it('accepts and applies defaults', () => assert.deepEqual(v({ branch: 'main' }), { ok: true, value: { branch: 'main', n: 1 } }));

  const bad: [string, unknown, string][] = [
    ['missing required', {}, 'branch: is required'],
    ['unknown field', { branch: 'a', extra: 1 }, 'extra: is not a field of this tool'],
    ['too long', { branch: 'x'.repeat(11) }, 'branch: Too big: expected string to have <=10 characters'],
    ['enum', { branch: 'a', region: 'mars' }, 'region: must be one of "eu", "us"'],
    ['array item', { branch: 'a', tags: ['abcd'] }, 'tags[0]: Too big: expected string to have <=3 characters'],
    ['unique', { branch: 'a', tags: ['a', 'a'] }, 'tags: items must be unique'],
    ['integer', { branch: 'a', n: 1.5 }, 'n: Invalid input: expected int, received number'],
    ['map size', { branch: 'a', labels: { a: 'x', b: 'y', c: 'z' } }, 'labels: at most 2 keys are allowed'],
    ['lone surrogate', { branch: '\uD800' }, 'branch: must be well-formed Unicode text (no lone surrogates)'],
    ['not an object', [1], '(arguments): must be a JSON object'],
    ['__proto__ key', JSON.parse('{"branch":"a","__proto__":{"polluted":1}}'), '__proto__: is not a field of this tool'],
  ];
  for (const [name, raw, problem] of bad) {
    it(`reports ${name}`, () => {
      const r = v(raw);
      assert.equal(r.ok, false);
      assert.equal(r.ok ? '' : r.issues.map((i) => `${i.field}: ${i.problem}`).join('; '), problem);
    });
  }

  it('refuses hostile nesting without walking it', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const r = v({ branch: 'a', tags: deep });
    assert.equal(r.ok, false);
  });
});

describe('within (schema containment)', () => {
  const node = (raw: unknown) => compile(raw, 'input').node!;
  it('a schema is within itself', () => {
    const s = node({ type: 'object', properties: { a: { type: 'string', pattern: '^x' }, b: { type: 'array', items: { enum: [1, 2] } } } });
    assert.deepEqual(within(s, s), []);
  });
  it('integer is within number; bounds compare with exclusivity', () => {
    const a = node({ type: 'object', properties: { n: { type: 'integer', exclusiveMinimum: 0, maximum: 10 } } });
    const b = node({ type: 'object', properties: { n: { type: 'number', minimum: 0, maximum: 10 } } });
    assert.deepEqual(within(a, b), []);
    assert.deepEqual(within(b, a).map((d) => d.code), ['type', 'range']);
  });
  it('a changed regex is never assumed wider', () => {
    const a = node({ type: 'object', properties: { s: { type: 'string', pattern: '^a' } } });
    const b = node({ type: 'object', properties: { s: { type: 'string', pattern: '^(a|b)' } } });
    assert.deepEqual(within(a, b).map((d) => d.code), ['pattern']);
  });
});

describe('the advertised JSON Schema means what the validator enforces', () => {
  it('agrees with zod\'s own reading of the normalized schema (z.fromJSONSchema)', () => {
    const { schema } = compile({
      type: 'object',
      required: ['name', 'count'],
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 8, pattern: '^[a-z]+$' },
        count: { type: 'integer', minimum: 0, maximum: 5 },
        mode: { enum: ['a', 'b', 1, null] },
        tags: { type: 'array', items: { type: 'string', maxLength: 3 }, maxItems: 3 },
        ratio: { type: ['number', 'null'], exclusiveMaximum: 1 },
      },
    });
    const reference = z.fromJSONSchema(schema!.json);
    const value = fc.oneof(fc.string({ maxLength: 10 }), fc.integer({ min: -2, max: 7 }), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom('a', 'b', 'c', 1, null, true), fc.array(fc.string({ maxLength: 4 }), { maxLength: 4 }));
    const nearlyValid = fc.record(
      {
        name: fc.oneof(fc.stringMatching(/^[a-z]{1,9}$/), value),
        count: fc.oneof(fc.integer({ min: -1, max: 6 }), value),
        mode: fc.constantFrom('a', 'b', 1, null, 'z'),
        tags: fc.array(fc.stringMatching(/^[a-z]{0,4}$/), { maxLength: 4 }),
        ratio: fc.oneof(fc.double({ min: -2, max: 2, noNaN: true }), fc.constant(null)),
      },
      { requiredKeys: [] },
    );
    const args = fc.oneof(nearlyValid, fc.dictionary(fc.constantFrom('name', 'count', 'mode', 'tags', 'ratio', 'other'), value));
    let accepted = 0;
    fc.assert(
      fc.property(args, (raw) => {
        const ours = validateArguments(schema!, raw).ok;
        assert.equal(ours, reference.safeParse(raw).success, JSON.stringify(raw));
        if (ours) accepted++;
      }),
      // A fixed seed keeps the share of accepted samples stable; the comparison itself is what is tested.
      { numRuns: 600, seed: 20261130 },
    );
    assert.ok(accepted > 20, `only ${accepted} accepted samples`);
  });
});
