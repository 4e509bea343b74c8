/**
 * Writes the payload-format-2 known-answer vector vault/vectors/v2-accepted.*
 * (see vault/FORMAT.md §4 and §7): one credential and a catalog acceptance
 * mark. Like every vector it is a promise and is never regenerated once
 * committed (--force only before the first commit).
 * Run: node --import tsx scripts/make-vault-vector-v2.ts
 */
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { createVault, MODERATE_KDF, openVault, withVaultWriter } from '../src/vault/index.js';
import { parseHeader } from '../src/vault/format.js';

const outDir = new URL('../vault/vectors/', import.meta.url);
const name = 'v2-accepted';
const pvlt = new URL(`${name}.pvlt`, outDir);
const json = new URL(`${name}.json`, outDir);
if ((existsSync(pvlt) || existsSync(json)) && !process.argv.includes('--force')) {
  console.error(`${name} already exists; committed vectors must never change (use --force only before the first commit)`);
  process.exit(1);
}

let clock = new Date('2026-03-01T00:00:00.000Z');
const opts = { clock: { now: () => clock, monotonicMs: () => 0 } };
const passphrase = 'vector v2 — accepted catalogs ✓';
const pass = new TextEncoder().encode(passphrase);
const digest = (s: string): string => createHash('sha256').update(s).digest('hex');
const token = 'ghp_VectorTwoToken0123456789abcdef';

const work = mkdtempSync(join(tmpdir(), 'postern-vectors-'));
try {
  const path = join(work, 'vault.pvlt');
  await createVault(path, pass, opts);
  clock = new Date('2026-03-02T03:04:05.678Z');
  await withVaultWriter(path, pass, (v) => {
    v.add({ name: 'api-token', kind: 'http_bearer', fields: {}, secret: { token: new TextEncoder().encode(token) } });
    v.recordAcceptedCatalog({ sequence: 1, digest: digest('targets: {}\ntools: {}\n') });
  }, opts);
  await withVaultWriter(path, pass, (v) => v.recordAcceptedCatalog({ sequence: 2, digest: digest('targets: {}\ntools: {} # 2\n') }), opts);
  const v = await openVault(path, pass, opts);
  const header = parseHeader(readFileSync(path));
  const expected = {
    description: 'Vault payload format 2 known-answer vector. Every later Postern must open v2-accepted.pvlt with this passphrase and find exactly this.',
    file: `${name}.pvlt`,
    passphrase_utf8: passphrase,
    header: { version: header.version, kdf_id: header.kdfId, opslimit: header.kdf.opslimit, memlimit: header.kdf.memlimit },
    generation: v.generation,
    accepted_catalog: v.acceptedCatalog,
    credentials: v.list().map((meta) => ({ ...meta, secret: { token: { utf8: token } } })),
    derived_keys: {
      'catalog-mac': Buffer.from(v.deriveKey('catalog-mac')).toString('hex'),
      'operator-auth': Buffer.from(v.deriveKey('operator-auth')).toString('hex'),
    },
  };
  v.lock();
  if (expected.header.opslimit !== MODERATE_KDF.opslimit || expected.header.memlimit !== MODERATE_KDF.memlimit) throw new Error('vector must use MODERATE parameters');
  copyFileSync(path, pvlt);
  chmodSync(pvlt, 0o644);
  writeFileSync(json, JSON.stringify(expected, null, 2) + '\n');
  console.log(`wrote ${pvlt.pathname} (generation ${expected.generation}) and ${json.pathname}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
