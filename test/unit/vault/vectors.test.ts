// Known-answer vectors (vault/FORMAT.md §7): every Postern must open the
// committed vaults (v1-basic: payload format 1; v2-accepted: payload format 2;
// v3-remembered: payload format 3; v4-journal: payload format 4)
// with the default (worker, MODERATE) settings and find exactly the recorded
// credentials, secrets, timestamps, acceptance marks and derived keys.
import assert from 'node:assert/strict';
import { copyFileSync, chmodSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { openVault } from '../../../src/vault/index.js';
import { DEFAULT_KDF_BOUNDS, parseHeader } from '../../../src/vault/format.js';
import { decodePayload } from '../../../src/vault/payload.js';
import { unsealVault } from '../../../src/vault/seal.js';
import { kekDeriver } from '../../../src/vault/kdf.js';
import { tempHome, utf8 } from './helpers.js';

const vectors = new URL('../../../vault/vectors/', import.meta.url);
type SecretSpec = { utf8: string } | { hex: string };
interface Expected {
  file: string;
  passphrase_utf8: string;
  header: { version: number; kdf_id: number; opslimit: number; memlimit: number };
  generation: number;
  created_at: string;
  credentials: Array<{
    name: string;
    kind: string;
    created_at: string;
    rotated_at: string | null;
    last_used_at: string | null;
    fields: Record<string, string>;
    secret: Record<string, SecretSpec>;
  }>;
  derived_keys: Record<'catalog-mac' | 'operator-auth', string>;
}

const bytesOf = (s: SecretSpec): Uint8Array => ('utf8' in s ? utf8(s.utf8) : Uint8Array.from(Buffer.from(s.hex, 'hex')));

test('v1-basic opens with the current code and matches its expected contents', async (t) => {
  const expected = JSON.parse(readFileSync(new URL('v1-basic.json', vectors), 'utf8')) as Expected;
  const { vault } = tempHome(t);
  // Git does not keep 0600; the copy gets the mode a real vault has.
  copyFileSync(new URL(expected.file, vectors), vault);
  chmodSync(vault, 0o600);

  const header = parseHeader(readFileSync(vault));
  assert.deepEqual(
    { version: header.version, kdf_id: header.kdfId, opslimit: header.kdf.opslimit, memlimit: header.kdf.memlimit },
    expected.header,
  );

  const v = await openVault(vault, utf8(expected.passphrase_utf8)); // defaults: worker runner, MODERATE floor
  try {
    assert.equal(v.generation, expected.generation);
    const kinds = new Set(expected.credentials.map((c) => c.kind));
    assert.equal(kinds.size, 6, 'the vector holds every credential kind');
    assert.deepEqual(
      v.list(),
      expected.credentials.map(({ secret: _s, ...meta }) => meta),
    );
    let parts = 0;
    for (const c of expected.credentials) {
      const got = v.get(c.name);
      assert.ok(got !== undefined, c.name);
      assert.deepEqual(Object.keys(got.secret).sort(), Object.keys(c.secret).sort(), c.name);
      for (const [part, spec] of Object.entries(c.secret)) {
        assert.deepEqual(Buffer.from(got.secret[part]!), Buffer.from(bytesOf(spec)), `${c.name}.${part}`);
        parts++;
      }
    }
    assert.ok(parts >= 9);
    assert.equal(v.acceptedCatalog, null, 'payload format 1 records no catalog acceptance');
    assert.equal(Buffer.from(v.deriveKey('catalog-mac')).toString('hex'), expected.derived_keys['catalog-mac']);
    assert.equal(Buffer.from(v.deriveKey('operator-auth')).toString('hex'), expected.derived_keys['operator-auth']);
  } finally {
    v.lock();
  }
});

test('v1-basic payload records the vault creation time (pure layer, inline KDF)', async () => {
  const expected = JSON.parse(readFileSync(new URL('v1-basic.json', vectors), 'utf8')) as Expected;
  const file = readFileSync(new URL(expected.file, vectors));
  const { dataKey, plaintext } = await unsealVault(file, utf8(expected.passphrase_utf8), {
    bounds: DEFAULT_KDF_BOUNDS,
    deriveKek: kekDeriver('inline'),
  });
  const contents = decodePayload(plaintext);
  dataKey.fill(0);
  assert.equal(contents.createdAt, expected.created_at);
  assert.equal(contents.generation, expected.generation);
  assert.ok(plaintext.every((b) => b === 0), 'decoded plaintext is zeroed');
});

test('v2-accepted (payload format 2) opens and matches its expected contents, acceptance mark included', async (t) => {
  const expected = JSON.parse(readFileSync(new URL('v2-accepted.json', vectors), 'utf8')) as Omit<Expected, 'created_at'> & { accepted_catalog: { sequence: number; digest: string } };
  const { vault } = tempHome(t);
  copyFileSync(new URL(expected.file, vectors), vault);
  chmodSync(vault, 0o600);
  const header = parseHeader(readFileSync(vault));
  assert.deepEqual({ version: header.version, kdf_id: header.kdfId, opslimit: header.kdf.opslimit, memlimit: header.kdf.memlimit }, expected.header);
  const v = await openVault(vault, utf8(expected.passphrase_utf8));
  try {
    assert.equal(v.generation, expected.generation);
    assert.deepEqual(v.acceptedCatalog, expected.accepted_catalog);
    assert.deepEqual(v.list(), expected.credentials.map(({ secret: _s, ...meta }) => meta));
    for (const c of expected.credentials) {
      for (const [part, spec] of Object.entries(c.secret)) assert.deepEqual(Buffer.from(v.get(c.name)!.secret[part]!), Buffer.from(bytesOf(spec)));
    }
    assert.equal(Buffer.from(v.deriveKey('catalog-mac')).toString('hex'), expected.derived_keys['catalog-mac']);
    assert.equal(Buffer.from(v.deriveKey('operator-auth')).toString('hex'), expected.derived_keys['operator-auth']);
  } finally {
    v.lock();
  }
});

type Entry = { secret: Record<string, SecretSpec> } & Record<string, unknown>;
type RememberedExpected = Omit<Expected, 'created_at' | 'credentials'> & { read_at: string; retention_days: number; credentials: Entry[]; remembered: Entry[] };

/**
 * Opens a vector of payload format 3 or later on the vector's own clock (so the remembered values
 * do not depend on today's date) and checks what every such vector holds; `more` checks the rest.
 */
async function checkRememberedVector<E extends RememberedExpected>(t: Parameters<typeof tempHome>[0], name: string, more: (v: Awaited<ReturnType<typeof openVault>>, expected: E) => void = () => undefined): Promise<E> {
  const expected = JSON.parse(readFileSync(new URL(`${name}.json`, vectors), 'utf8')) as E;
  const { vault } = tempHome(t);
  copyFileSync(new URL(expected.file, vectors), vault);
  chmodSync(vault, 0o600);
  const v = await openVault(vault, utf8(expected.passphrase_utf8), { clock: { now: () => new Date(expected.read_at), monotonicMs: () => 0 } });
  const plain = (e: { readonly secret: Readonly<Record<string, Uint8Array>> }): Record<string, string> => Object.fromEntries(Object.entries(e.secret).map(([k, b]) => [k, Buffer.from(b).toString('hex')]));
  const want = (e: Entry): Record<string, string> => Object.fromEntries(Object.entries(e.secret).map(([k, s]) => [k, Buffer.from(bytesOf(s)).toString('hex')]));
  try {
    assert.equal(v.generation, expected.generation);
    assert.equal(v.retentionDays, expected.retention_days);
    assert.deepEqual(v.list(), expected.credentials.map(({ secret: _s, ...meta }) => meta));
    for (const c of expected.credentials) assert.deepEqual(plain(v.get(c['name'] as string)!), want(c));
    const remembered = v.remembered();
    assert.deepEqual(remembered.map((r) => r.meta), expected.remembered.map(({ secret: _s, ...meta }) => meta));
    assert.deepEqual(remembered.map(plain), expected.remembered.map(want));
    assert.equal(Buffer.from(v.deriveKey('catalog-mac')).toString('hex'), expected.derived_keys['catalog-mac']);
    assert.equal(Buffer.from(v.deriveKey('operator-auth')).toString('hex'), expected.derived_keys['operator-auth']);
    more(v, expected);
  } finally {
    v.lock();
  }
  return expected;
}

test('v3-remembered (payload format 3) opens and matches: credentials, the retention and the remembered values at read_at', async (t) => {
  await checkRememberedVector(t, 'v3-remembered');
});

test('v4-journal (payload format 4) opens and matches: what v3 holds, and the journal the home keeps', async (t) => {
  type Journal = { id: string; activity: { seq: number; hash: string }; sessions: { seq: number; hash: string } };
  const expected = await checkRememberedVector<RememberedExpected & { journal: Journal }>(t, 'v4-journal', (v, e) => assert.deepEqual(v.journal, e.journal));
  const { dataKey, plaintext } = await unsealVault(readFileSync(new URL(expected.file, vectors)), utf8(expected.passphrase_utf8), { bounds: DEFAULT_KDF_BOUNDS, deriveKek: kekDeriver('inline') });
  dataKey.fill(0);
  assert.equal((JSON.parse(Buffer.from(plaintext).toString('utf8')) as { format?: unknown }).format, 4, 'the payload is format 4');
  plaintext.fill(0);
});
