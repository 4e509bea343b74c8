import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createRedactor, MIN_SUBSTRING_BYTES, redactionMarker } from '../../../src/redaction/index.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });
const textOf = (b: Uint8Array): string | null => {
  try {
    return utf8.decode(b);
  } catch {
    return null;
  }
};

/** The encodings the redactor promises to recognize, as a target would write them. */
const ENCODINGS: readonly (readonly [string, (b: Uint8Array) => string | null])[] = [
  ['utf8', textOf],
  ['base64', (b) => Buffer.from(b).toString('base64')],
  ['base64, no padding', (b) => Buffer.from(b).toString('base64').replace(/=+$/, '')],
  ['base64url', (b) => Buffer.from(b).toString('base64url')],
  ['hex', (b) => Buffer.from(b).toString('hex')],
  ['HEX', (b) => Buffer.from(b).toString('hex').toUpperCase()],
  ['encodeURIComponent', (b) => mapText(b, encodeURIComponent)],
  ['form', (b) => mapText(b, (t) => new URLSearchParams({ x: t }).toString().slice(2))],
  ['JSON', (b) => mapText(b, (t) => JSON.stringify(t).slice(1, -1))],
];

function mapText(b: Uint8Array, f: (t: string) => string): string | null {
  const t = textOf(b);
  if (t === null) return null;
  try {
    return f(t);
  } catch {
    return null;
  }
}

const secretArb = fc.oneof(
  fc.uint8Array({ minLength: 4, maxLength: 40 }),
  fc.string({ minLength: 4, maxLength: 30 }).map((s) => Buffer.from(s)),
  fc.string({ unit: 'grapheme', minLength: 2, maxLength: 12 }).map((s) => Buffer.from(s)),
).filter((b) => b.length >= MIN_SUBSTRING_BYTES);
const textArb = fc.oneof(fc.string({ maxLength: 60 }), fc.string({ unit: 'grapheme', maxLength: 30 }), fc.string({ unit: 'binary', maxLength: 30 }));

function formsOf(secret: Uint8Array): string[] {
  return ENCODINGS.map(([, enc]) => enc(secret)).filter((f): f is string => f !== null && f.length > 0);
}

describe('redactor properties', () => {
  it('never leaves a secret in any encoding, whatever surrounds it', () => {
    fc.assert(
      fc.property(secretArb, fc.nat({ max: ENCODINGS.length - 1 }), textArb, textArb, (secret, which, before, after) => {
        const marker = redactionMarker('k');
        fc.pre(formsOf(secret).every((f) => !marker.includes(f)));
        const encoded = ENCODINGS[which]?.[1](secret) ?? null;
        fc.pre(encoded !== null && encoded.length > 0);
        const r = createRedactor([{ name: 'k', bytes: secret }]);
        const out = r.redactText(before + encoded + after);
        for (const f of formsOf(secret)) assert.ok(!out.includes(f), `left ${JSON.stringify(f)} in ${JSON.stringify(out)}`);
        assert.ok(out.includes(marker));
      }),
      { numRuns: 400 },
    );
  });

  it('redacts a short secret (under 4 bytes) when a whole value is one of its encodings', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: MIN_SUBSTRING_BYTES - 1 }), fc.nat({ max: ENCODINGS.length - 1 }), (secret, which) => {
        const encoded = ENCODINGS[which]?.[1](secret) ?? null;
        fc.pre(encoded !== null && encoded.trim() !== '');
        const r = createRedactor([{ name: 'pin', bytes: secret }]);
        assert.equal(r.redactText(encoded), '[REDACTED:pin]');
        assert.deepEqual(r.redactValue({ value: [encoded] }), { value: ['[REDACTED:pin]'] });
      }),
      { numRuns: 200 },
    );
  });

  it('is idempotent', () => {
    fc.assert(
      fc.property(fc.array(secretArb, { minLength: 1, maxLength: 4 }), fc.array(textArb, { maxLength: 6 }), (secrets, parts) => {
        const r = createRedactor(secrets.map((bytes, i) => ({ name: `s${i}`, bytes })));
        const text = parts.map((p, i) => p + (formsOf(secrets[i % secrets.length] ?? new Uint8Array())[i % 5] ?? '')).join('');
        const once = r.redactText(text);
        assert.equal(r.redactText(once), once);
      }),
      { numRuns: 300 },
    );
  });

  it('preserves text that holds no secret', () => {
    fc.assert(
      fc.property(fc.array(secretArb, { minLength: 1, maxLength: 4 }), textArb, (secrets, text) => {
        const r = createRedactor(secrets.map((bytes) => ({ name: 'k', bytes })));
        fc.pre(!r.findSecret(text));
        assert.equal(r.redactText(text), text);
      }),
      { numRuns: 300 },
    );
  });

  it('keeps everything around a secret exactly', () => {
    const upper = fc.string({ unit: fc.constantFrom(...'ABCDEFGHJKLMNPQRSTUVWXYZ'), minLength: 6, maxLength: 24 });
    const lower = fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz .,'), maxLength: 40 });
    fc.assert(
      fc.property(upper, lower, lower, (secret, before, after) => {
        const r = createRedactor([{ name: 'k', bytes: Buffer.from(secret) }]);
        assert.equal(r.redactText(before + secret + after), `${before}[REDACTED:k]${after}`);
      }),
      { numRuns: 200 },
    );
  });
});
