/**
 * `Redactor.track`: every real redaction is reported with the secret it
 * found (name and fingerprint); a marker already in the text, text without a
 * secret and the untracked redactor report nothing. And the value
 * fingerprint: keyed, stable, different per value and per key.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createRedactor, exposureKeyId, parseFingerprint, valueFingerprint, type SecretHit } from '../../../src/redaction/index.js';

const utf8 = (s: string): Uint8Array => Buffer.from(s, 'utf8');
const CURRENT = 'tok_CurrentValue_0123456789abcdef';
const RETIRED = 'tok_RetiredValue_0123456789abcdef';
const SHORT = 'ab12';

const r = createRedactor([
  { name: 'api', bytes: utf8(CURRENT), fingerprint: 'fp-current' },
  { name: 'api', bytes: utf8(RETIRED), fingerprint: 'fp-retired' },
  { name: 'pin', bytes: utf8(SHORT) },
]);

function hitsOf(fn: (t: ReturnType<typeof r.track>) => unknown): SecretHit[] {
  const hits: SecretHit[] = [];
  const seen = new Set<string>();
  fn(
    r.track((h) => {
      const k = `${h.name}/${h.fingerprint}`;
      if (!seen.has(k)) hits.push(h);
      seen.add(k);
    }),
  );
  return hits;
}

describe('redactor: tracked hits', () => {
  it('reports the value found, by name and fingerprint, in text, encodings, values, keys and bytes', () => {
    assert.deepEqual(hitsOf((t) => t.redactText(`auth: Bearer ${CURRENT}`)), [{ name: 'api', fingerprint: 'fp-current' }]);
    assert.deepEqual(hitsOf((t) => t.redactText(Buffer.from(RETIRED).toString('base64'))), [{ name: 'api', fingerprint: 'fp-retired' }]);
    assert.deepEqual(hitsOf((t) => t.redactValue({ [CURRENT]: [1, { deep: RETIRED }] })), [
      { name: 'api', fingerprint: 'fp-current' },
      { name: 'api', fingerprint: 'fp-retired' },
    ]);
    assert.deepEqual(hitsOf((t) => t.redactValue(utf8(`x${CURRENT}y`))), [{ name: 'api', fingerprint: 'fp-current' }]);
    assert.deepEqual(hitsOf((t) => t.redactValue({ pin: SHORT })), [{ name: 'pin', fingerprint: null }], 'a short secret as a whole value');
    assert.deepEqual(hitsOf((t) => t.findSecret([`..${CURRENT}..`])), [{ name: 'api', fingerprint: 'fp-current' }]);
    assert.deepEqual(hitsOf((t) => t.redactCut(`${CURRENT} and more`, 40)), [{ name: 'api', fingerprint: 'fp-current' }]);
  });

  it('a marker already in the text, or text without a secret, is no hit; the untracked redactor reports nothing', () => {
    assert.deepEqual(hitsOf((t) => t.redactText('the token is [REDACTED:api] and [REDACTED:pin]')), []);
    assert.deepEqual(hitsOf((t) => t.redactValue({ a: 'nothing here', n: 42 })), []);
    assert.deepEqual(hitsOf((t) => t.findSecret('[REDACTED:api]')), []);
    const hits: SecretHit[] = [];
    const tracked = r.track((h) => hits.push(h));
    assert.equal(r.redactText(CURRENT), '[REDACTED:api]');
    assert.equal(hits.length, 0, 'only the tracked view reports');
    assert.equal(tracked.redactText(CURRENT), '[REDACTED:api]', 'tracking changes nothing in the output');
    assert.equal(hits.length, 1);
  });

  it('a tracked view of a tracked view reports to both', () => {
    const outer: SecretHit[] = [];
    const inner: SecretHit[] = [];
    r.track((h) => outer.push(h))
      .track((h) => inner.push(h))
      .redactText(CURRENT);
    assert.equal(outer.length, 1);
    assert.equal(inner.length, 1);
  });
});

describe('value fingerprint', () => {
  const cred = (token: string) => ({ meta: { name: 'api', kind: 'http_bearer' as const, fields: {} }, secret: { token: utf8(token) } });
  const k1 = new Uint8Array(32).fill(1);
  const k2 = new Uint8Array(32).fill(2);

  it('is keyed and stable, and differs per value and per key; the key id says which key', () => {
    const a = valueFingerprint(k1, cred(CURRENT));
    assert.equal(a, valueFingerprint(k1, cred(CURRENT)));
    assert.notEqual(a, valueFingerprint(k1, cred(RETIRED)));
    assert.notEqual(a, valueFingerprint(k2, cred(CURRENT)));
    const parsed = parseFingerprint(a);
    assert.equal(parsed?.keyId, exposureKeyId(k1));
    assert.notEqual(exposureKeyId(k1), exposureKeyId(k2));
    assert.ok(!a.includes(Buffer.from(CURRENT).toString('hex').slice(0, 16)));
    assert.equal(parseFingerprint('not-a-fingerprint'), undefined);
  });
});
