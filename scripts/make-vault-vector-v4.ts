/**
 * Writes the payload-format-4 known-answer vector vault/vectors/v4-journal.*
 * (see vault/FORMAT.md §4, §4.3 and §7): what v3-remembered holds (a retired
 * value, a minted token, a set retention) plus the journal the home keeps —
 * its id and the heads its anchor vouched for. Like every vector it is a
 * promise and is never regenerated once committed (--force only before the
 * first commit).
 * Run: node --import tsx scripts/make-vault-vector-v4.ts
 */
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createVault, MODERATE_KDF, openVault, withVaultWriter } from '../src/vault/index.js';
import { parseHeader } from '../src/vault/format.js';

const outDir = new URL('../vault/vectors/', import.meta.url);
const name = 'v4-journal';
const pvlt = new URL(`${name}.pvlt`, outDir);
const json = new URL(`${name}.json`, outDir);
if ((existsSync(pvlt) || existsSync(json)) && !process.argv.includes('--force')) {
  console.error(`${name} already exists; committed vectors must never change (use --force only before the first commit)`);
  process.exit(1);
}

let clock = new Date('2026-04-01T00:00:00.000Z');
const opts = { clock: { now: () => clock, monotonicMs: () => 0 } };
const passphrase = 'vector v4 — the journal it keeps ✓';
const pass = new TextEncoder().encode(passphrase);
const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const oldToken = 'ghp_VectorFourRetired01234567890ab';
const newToken = 'ghp_VectorFourCurrent01234567890ab';
const minted = 'ya29.VectorFourMinted01234567890abcdef';

const work = mkdtempSync(join(tmpdir(), 'postern-vectors-'));
try {
  const path = join(work, 'vault.pvlt');
  await createVault(path, pass, opts);
  clock = new Date('2026-04-02T03:04:05.678Z');
  await withVaultWriter(path, pass, (v) => {
    v.add({ name: 'api-token', kind: 'http_bearer', fields: {}, secret: { token: utf8(oldToken) } });
    v.add({ name: 'oauth', kind: 'oauth_client_credentials', fields: { client_id: 'vector-client' }, secret: { client_secret: utf8('vector-client-secret') } });
    v.setRetentionDays(45);
  }, opts);
  clock = new Date('2026-04-03T00:00:00.000Z');
  await withVaultWriter(path, pass, (v) => {
    v.rotate('api-token', { token: utf8(newToken) });
    v.recordJournal({
      id: '6f1c2d3e-4b5a-4c6d-8e7f-90a1b2c3d4e5',
      activity: { seq: 42, hash: 'a'.repeat(63) + '1' },
      sessions: { seq: 7, hash: 'b'.repeat(63) + '2' },
    });
    v.remember({ name: 'oauth', kind: 'oauth_client_credentials', fields: { client_id: 'vector-client' }, secret: { access_token: utf8(minted) }, source: 'minted', until: new Date('2026-04-03T01:00:00.000Z') });
  }, opts);
  const v = await openVault(path, pass, opts);
  const header = parseHeader(readFileSync(path));
  const secretOf = (s: Readonly<Record<string, Uint8Array>>) => Object.fromEntries(Object.entries(s).map(([k, b]) => [k, { utf8: Buffer.from(b).toString('utf8') }]));
  const expected = {
    description: 'Vault payload format 4 known-answer vector. Every later Postern must open v4-journal.pvlt with this passphrase and find exactly this (remembered values read at `read_at`, and the journal mark).',
    file: `${name}.pvlt`,
    passphrase_utf8: passphrase,
    header: { version: header.version, kdf_id: header.kdfId, opslimit: header.kdf.opslimit, memlimit: header.kdf.memlimit },
    generation: v.generation,
    read_at: clock.toISOString(),
    retention_days: v.retentionDays,
    credentials: v.list().map((meta) => ({ ...meta, secret: secretOf(v.get(meta.name)!.secret) })),
    remembered: v.remembered().map((r) => ({ ...r.meta, secret: secretOf(r.secret) })),
    journal: v.journal,
    derived_keys: {
      'catalog-mac': Buffer.from(v.deriveKey('catalog-mac')).toString('hex'),
      'operator-auth': Buffer.from(v.deriveKey('operator-auth')).toString('hex'),
    },
  };
  v.lock();
  if (expected.header.opslimit !== MODERATE_KDF.opslimit || expected.header.memlimit !== MODERATE_KDF.memlimit) throw new Error('vector must use MODERATE parameters');
  if (expected.remembered.length !== 2) throw new Error('the vector must remember two values');
  if (expected.journal === null) throw new Error('the vector must record a journal');
  copyFileSync(path, pvlt);
  chmodSync(pvlt, 0o644);
  writeFileSync(json, JSON.stringify(expected, null, 2) + '\n');
  console.log(`wrote ${pvlt.pathname} (generation ${expected.generation}) and ${json.pathname}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
