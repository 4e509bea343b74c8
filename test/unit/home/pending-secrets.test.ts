/**
 * Received secrets held until the vault has them (src/home/pending-secrets.ts):
 * the file is encrypted (no value in the clear, another key opens nothing), a
 * daemon killed after holding a rotated token loses nothing — the next start
 * folds it into the vault — and an operator's rotate meanwhile wins.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createVault, openVault, withVaultWriter } from '../../../src/vault/index.js';
import { foldPendingIntoVault, holdPendingSecret, openPendingSecrets, releasePendingSecret } from '../../../src/home/pending-secrets.js';
import { homePaths, type HomePaths } from '../../../src/home/paths.js';
import { TEST_VAULT_OPTIONS } from '../../helpers/cli.js';
import { ManualClock } from '../../helpers/clock.js';

const PASS = Buffer.from('pending-secrets-passphrase');
const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function home(first: string): Promise<{ paths: HomePaths; key: Uint8Array }> {
  const d = await mkdtemp(join(tmpdir(), 'postern-pending-'));
  dirs.push(d);
  const paths = homePaths(d);
  await createVault(paths.vault, PASS, TEST_VAULT_OPTIONS);
  await withVaultWriter(paths.vault, PASS, (v) => v.add({ name: 'idp', kind: 'oauth_refresh_token', fields: { client_id: 'c' }, secret: { refresh_token: Buffer.from(first) } }), TEST_VAULT_OPTIONS);
  const v = await openVault(paths.vault, PASS, TEST_VAULT_OPTIONS);
  const key = Uint8Array.from(v.deriveKey('pending-secret'));
  v.lock();
  return { paths, key };
}

const stored = async (paths: HomePaths): Promise<string> => {
  const v = await openVault(paths.vault, PASS, TEST_VAULT_OPTIONS);
  try {
    return Buffer.from(v.get('idp')!.secret['refresh_token']!).toString();
  } finally {
    v.lock();
  }
};

const ctx = (paths: HomePaths) => ({ paths, clock: new ManualClock('2026-01-01T00:00:00.000Z'), vault: TEST_VAULT_OPTIONS, out: () => undefined });

describe('pending secrets', () => {
  it('a token held before a kill is folded into the vault by the next start, and the file goes', async () => {
    const sent = `old-${randomBytes(8).toString('hex')}`;
    const next = `new-${randomBytes(8).toString('hex')}`;
    const { paths, key } = await home(sent);
    await holdPendingSecret(paths, key, { name: 'idp', part: 'refresh_token', sent: Buffer.from(sent), next: Buffer.from(next) });
    const text = await readFile(paths.pendingSecrets, 'utf8');
    for (const v of [sent, next, Buffer.from(next).toString('base64'), Buffer.from(next).toString('hex')]) assert.ok(!text.includes(v), 'nothing in the clear');
    assert.equal(openPendingSecrets(randomBytes(32), text), 'unreadable', 'another key opens nothing');
    // The daemon was killed here: the vault still holds the old token.
    assert.equal(await stored(paths), sent);
    assert.equal(await foldPendingIntoVault(ctx(paths), PASS), 1);
    assert.equal(await stored(paths), next);
    assert.ok(!existsSync(paths.pendingSecrets));
    assert.equal(await foldPendingIntoVault(ctx(paths), PASS), 'none');
  });

  it('an operator rotate meanwhile wins; a released entry is not folded', async () => {
    const { paths, key } = await home('old');
    await holdPendingSecret(paths, key, { name: 'idp', part: 'refresh_token', sent: Buffer.from('old'), next: Buffer.from('rotated') });
    await withVaultWriter(paths.vault, PASS, (v) => v.rotate('idp', { refresh_token: Buffer.from('operator') }, { client_id: 'c' }), TEST_VAULT_OPTIONS);
    assert.equal(await foldPendingIntoVault(ctx(paths), PASS), 0);
    assert.equal(await stored(paths), 'operator');
    await holdPendingSecret(paths, key, { name: 'idp', part: 'refresh_token', sent: Buffer.from('operator'), next: Buffer.from('n2') });
    await releasePendingSecret(paths, key, { name: 'idp', part: 'refresh_token', next: Buffer.from('n2') });
    assert.ok(!existsSync(paths.pendingSecrets), 'the last entry takes the file with it');
  });
});
