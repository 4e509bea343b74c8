/**
 * Writes the known-answer vault vectors in vault/vectors/ (see vault/FORMAT.md §7).
 *
 * A vector is a promise: once committed, every later Postern must open it and
 * find exactly what its .json says. So this script refuses to overwrite an
 * existing vector unless given --force, which is only right before the vector
 * was ever committed. Run: node --import tsx scripts/make-vault-vectors.ts
 */
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createVault, MODERATE_KDF, openVault, withVaultWriter } from '../src/vault/index.js';
import type { CredentialKind } from '../src/vault/index.js';
import { parseHeader } from '../src/vault/format.js';

const outDir = new URL('../vault/vectors/', import.meta.url);
const name = 'v1-basic';
const pvlt = new URL(`${name}.pvlt`, outDir);
const json = new URL(`${name}.json`, outDir);
if ((existsSync(pvlt) || existsSync(json)) && !process.argv.includes('--force')) {
  console.error(`${name} already exists; committed vectors must never change (use --force only before the first commit)`);
  process.exit(1);
}

type SecretSpec = { utf8: string } | { hex: string };
interface Spec {
  name: string;
  kind: CredentialKind;
  fields: Record<string, string>;
  secret: Record<string, SecretSpec>;
}

const bytesOf = (s: SecretSpec): Uint8Array => ('utf8' in s ? new TextEncoder().encode(s.utf8) : Uint8Array.from(Buffer.from(s.hex, 'hex')));
const secretOf = (spec: Record<string, SecretSpec>): Record<string, Uint8Array> =>
  Object.fromEntries(Object.entries(spec).map(([k, v]) => [k, bytesOf(v)]));

const privateKey = [
  '-----BEGIN OPENSSH PRIVATE KEY-----',
  'VEVTVCBWRUNUT1IgT05MWSAtIG5vdCBhIHJlYWwga2V5IC0gcG9zdGVybiB2YXVsdCB2MQ==',
  '-----END OPENSSH PRIVATE KEY-----',
  '',
].join('\n');

const specs: Spec[] = [
  { name: 'api-bearer', kind: 'http_bearer', fields: {}, secret: { token: { utf8: 'ghp_VectorToken0123456789abcdefABCDEF' } } },
  { name: 'api-basic', kind: 'http_basic', fields: { username: 'deploy-bot' }, secret: { password: { utf8: 'p@ss wörd:with:colons' } } },
  { name: 'api-header', kind: 'http_header', fields: { header: 'X-Api-Key' }, secret: { value: { utf8: 'hdr-välue-🔑' } } },
  { name: 'api-query', kind: 'http_query', fields: { param: 'api_key' }, secret: { value: { utf8: 'q=1&x=%20' } } },
  {
    name: 'deploy.key',
    kind: 'ssh_key',
    fields: { key_type: 'ed25519', public_fingerprint: 'SHA256:dGVzdCB2ZWN0b3IgZmluZ2VycHJpbnQgb25seQ' },
    secret: { private_key: { utf8: privateKey }, key_passphrase: { utf8: 'key passphrase' } },
  },
  { name: 'deploy_plain', kind: 'ssh_key', fields: { key_type: 'ed25519' }, secret: { private_key: { utf8: privateKey } } },
  { name: 'ssh-root', kind: 'ssh_password', fields: {}, secret: { password: { utf8: 'hunter2' } } },
  { name: 'ssh-empty', kind: 'ssh_password', fields: {}, secret: { password: { hex: '' } } },
  {
    name: '0-binary',
    kind: 'http_bearer',
    fields: {},
    secret: { token: { hex: Buffer.from(Array.from({ length: 256 }, (_, i) => i)).toString('hex') } },
  },
];
const rotatedBasic: Record<string, SecretSpec> = { password: { utf8: 'rotated-Passw0rd-2' } };

let clock = new Date('2025-01-01T00:00:00.000Z');
const opts = { clock: { now: () => clock, monotonicMs: () => 0 } };
const passphrase = 'correct horse battery staple — ünïcödé 🐎';
const pass = new TextEncoder().encode(passphrase);

const work = mkdtempSync(join(tmpdir(), 'postern-vectors-'));
try {
  const path = join(work, 'vault.pvlt');
  await createVault(path, pass, opts);
  clock = new Date('2025-01-02T03:04:05.678Z');
  await withVaultWriter(path, pass, (v) => {
    for (const s of specs) v.add({ name: s.name, kind: s.kind, fields: s.fields, secret: secretOf(s.secret) });
  }, opts);
  clock = new Date('2025-02-03T04:05:06.789Z');
  await withVaultWriter(path, pass, (v) => {
    v.rotate('api-basic', secretOf(rotatedBasic));
    v.markUsed('api-bearer');
  }, opts);

  const v = await openVault(path, pass, opts);
  const header = parseHeader(readFileSync(path));
  const expected = {
    description: 'Vault format v1 known-answer vector. Every later Postern must open v1-basic.pvlt with this passphrase and find exactly this.',
    file: `${name}.pvlt`,
    passphrase_utf8: passphrase,
    header: { version: header.version, kdf_id: header.kdfId, opslimit: header.kdf.opslimit, memlimit: header.kdf.memlimit },
    generation: v.generation,
    created_at: '2025-01-01T00:00:00.000Z',
    credentials: v.list().map((meta) => {
      const spec = specs.find((s) => s.name === meta.name);
      if (spec === undefined) throw new Error(`unexpected credential ${meta.name}`);
      return { ...meta, secret: meta.name === 'api-basic' ? rotatedBasic : spec.secret };
    }),
    derived_keys: {
      'catalog-mac': Buffer.from(v.deriveKey('catalog-mac')).toString('hex'),
      'operator-auth': Buffer.from(v.deriveKey('operator-auth')).toString('hex'),
    },
  };
  v.lock();
  if (expected.header.opslimit !== MODERATE_KDF.opslimit || expected.header.memlimit !== MODERATE_KDF.memlimit) {
    throw new Error('vector must use MODERATE parameters');
  }
  copyFileSync(path, pvlt);
  chmodSync(pvlt, 0o644);
  writeFileSync(json, JSON.stringify(expected, null, 2) + '\n');
  console.log(`wrote ${pvlt.pathname} (generation ${expected.generation}) and ${json.pathname}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
