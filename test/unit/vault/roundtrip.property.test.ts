// Property tests: any valid credential set survives create → add → save →
// open byte-exact, and sealing never repeats salt, nonces or ciphertext.
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { test } from 'node:test';
import fc from 'fast-check';
import { createVault, CredentialKinds, openVault, withVaultWriter } from '../../../src/vault/index.js';
import type { CredentialKind } from '../../../src/vault/index.js';
import { HEADER_BYTES, HeaderOffsets, parseHeader } from '../../../src/vault/format.js';
import { CHEAP, CHEAP_BOUNDS, tempHome, utf8 } from './helpers.js';

const kinds = Object.keys(CredentialKinds) as CredentialKind[];

const secretBytes = fc.oneof(
  fc.constant(new Uint8Array(0)),
  fc.uint8Array({ maxLength: 300 }),
  fc.string({ unit: 'binary', maxLength: 80 }).map(utf8),
  fc.string({ unit: 'grapheme', maxLength: 40 }).map(utf8),
);
// eslint-disable-next-line no-control-regex
const fieldValue = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }).filter((s) => !/[\u0000-\u001f\u007f-\u009f]/.test(s));

const credential = fc
  .record({
    name: fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,63}$/),
    kind: fc.constantFrom(...kinds),
    withOptional: fc.boolean(),
    extraFields: fc.dictionary(fc.stringMatching(/^[a-z][a-z0-9_]{0,31}$/), fieldValue, { maxKeys: 3 }),
    requiredValue: fieldValue,
    parts: fc.array(secretBytes, { minLength: 2, maxLength: 2 }),
  })
  .map(({ name, kind, withOptional, extraFields, requiredValue, parts }) => {
    const spec = CredentialKinds[kind];
    const fields: Record<string, string> = { ...extraFields };
    for (const f of spec.requiredFields as readonly string[]) fields[f] = requiredValue;
    const secret: Record<string, Uint8Array> = {};
    (spec.secretParts as readonly string[]).forEach((part, i) => {
      if (withOptional || !(spec.optionalSecretParts as readonly string[]).includes(part)) secret[part] = parts[i]!;
    });
    return { name, kind, fields, secret };
  });

const credentialSet = fc.uniqueArray(credential, { selector: (c) => c.name, maxLength: 8 });

test('random credential sets survive seal → open byte-exact', async (t) => {
  const { vault } = tempHome(t);
  const pass = utf8('property passphrase');
  await fc.assert(
    fc.asyncProperty(credentialSet, fc.string({ unit: 'binary', maxLength: 30 }), async (set, passText) => {
      const passphrase = passText === '' ? pass : utf8(passText);
      rmSync(vault, { force: true });
      await createVault(vault, passphrase, CHEAP);
      await withVaultWriter(vault, passphrase, (v) => set.forEach((c) => v.add(c)), CHEAP);
      const v = await openVault(vault, passphrase, CHEAP);
      try {
        assert.equal(v.generation, set.length === 0 ? 1 : 2);
        assert.deepEqual(
          v.list().map((m) => m.name),
          set.map((c) => c.name).sort(),
        );
        for (const c of set) {
          const got = v.get(c.name)!;
          assert.equal(got.meta.kind, c.kind);
          assert.deepEqual(got.meta.fields, c.fields);
          assert.deepEqual(Object.keys(got.secret).sort(), Object.keys(c.secret).sort());
          for (const [part, bytes] of Object.entries(c.secret)) {
            assert.ok(Buffer.from(got.secret[part]!).equals(Buffer.from(bytes)), `${c.name}.${part}`);
          }
        }
      } finally {
        v.lock();
      }
    }),
    { numRuns: 60 },
  );
});

test('two seals of the same data differ: salt, wrap nonce, payload nonce and ciphertext', async (t) => {
  const { dir } = tempHome(t);
  const pass = utf8('same data');
  const fixed = { ...CHEAP, now: () => new Date('2025-01-01T00:00:00.000Z') };
  const a = `${dir}/a.pvlt`;
  const b = `${dir}/b.pvlt`;
  await createVault(a, pass, fixed);
  await createVault(b, pass, fixed);
  const fa = readFileSync(a);
  const fb = readFileSync(b);
  const ha = parseHeader(fa, { bounds: CHEAP_BOUNDS });
  const hb = parseHeader(fb, { bounds: CHEAP_BOUNDS });
  assert.equal(fa.length, fb.length, 'same plaintext length');
  assert.notDeepEqual(ha.salt, hb.salt);
  assert.notDeepEqual(ha.wrapNonce, hb.wrapNonce);
  assert.notDeepEqual(ha.payloadNonce, hb.payloadNonce);
  assert.notDeepEqual(fa.subarray(HEADER_BYTES), fb.subarray(HEADER_BYTES));

  // Every save re-seals under a fresh payload nonce and keeps the key wrap (no KDF run).
  await withVaultWriter(a, pass, (v) => v.add({ name: 'x', kind: 'http_bearer', fields: {}, secret: { token: utf8('t') } }), fixed);
  const s1 = readFileSync(a);
  await withVaultWriter(a, pass, (v) => v.markUsed('x'), fixed);
  await withVaultWriter(a, pass, (v) => v.markUsed('x'), fixed);
  const s2 = readFileSync(a);
  const h1 = parseHeader(s1, { bounds: CHEAP_BOUNDS });
  const h2 = parseHeader(s2, { bounds: CHEAP_BOUNDS });
  assert.deepEqual(h1.salt, h2.salt, 'an ordinary save keeps the key wrap');
  assert.deepEqual(h1.wrappedKey, h2.wrappedKey);
  assert.notDeepEqual(
    s1.subarray(HeaderOffsets.payloadNonce, HEADER_BYTES),
    s2.subarray(HeaderOffsets.payloadNonce, HEADER_BYTES),
    'fresh payload nonce per save',
  );
});
