/**
 * Received secrets held until the vault has them (src/home/pending-secrets.ts):
 * the file is encrypted (no value in the clear, another key opens nothing), a
 * daemon killed after holding a rotated token loses nothing — the next start
 * folds it into the vault —, an operator's rotate meanwhile wins, a chain of
 * rotations folds in any order, and a torn or foreign line is never used.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { appendFile, mkdtemp, readFile, rm } from 'node:fs/promises';
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
  it('a token held before a kill is folded into the vault by the next start, and the file is emptied', async () => {
    const sent = `old-${randomBytes(8).toString('hex')}`;
    const next = `new-${randomBytes(8).toString('hex')}`;
    const { paths, key } = await home(sent);
    await holdPendingSecret(paths, key, { name: 'idp', part: 'refresh_token', sent: Buffer.from(sent), next: Buffer.from(next) });
    const text = await readFile(paths.pendingSecrets, 'utf8');
    for (const v of [sent, next, Buffer.from(next).toString('base64'), Buffer.from(next).toString('hex')]) assert.ok(!text.includes(v), 'nothing in the clear');
    assert.equal(openPendingSecrets(randomBytes(32), text), 'unreadable', 'another key opens nothing');
    // The daemon was killed here: the vault still holds the old token.
    assert.equal(await stored(paths), sent);
    assert.deepEqual(await foldPendingIntoVault(ctx(paths), PASS), { folded: 1, unopened: 0 });
    assert.equal(await stored(paths), next);
    assert.equal(await readFile(paths.pendingSecrets, 'utf8'), '', 'the file stays, empty, for the next bare append');
    assert.equal(await foldPendingIntoVault(ctx(paths), PASS), 'none');
  });

  it('an operator rotate meanwhile wins; a released entry is not folded', async () => {
    const { paths, key } = await home('old');
    await holdPendingSecret(paths, key, { name: 'idp', part: 'refresh_token', sent: Buffer.from('old'), next: Buffer.from('rotated') });
    await withVaultWriter(paths.vault, PASS, (v) => v.rotate('idp', { refresh_token: Buffer.from('operator') }, { client_id: 'c' }), TEST_VAULT_OPTIONS);
    assert.deepEqual(await foldPendingIntoVault(ctx(paths), PASS), { folded: 0, unopened: 0 });
    assert.equal(await stored(paths), 'operator');
    await holdPendingSecret(paths, key, { name: 'idp', part: 'refresh_token', sent: Buffer.from('operator'), next: Buffer.from('n2') });
    await releasePendingSecret(paths, key, { name: 'idp', part: 'refresh_token', next: Buffer.from('n2') });
    assert.equal((await readFile(paths.pendingSecrets, 'utf8')).trim(), '', 'the released entry is gone');
  });

  it('a chain of rotations folds link by link whatever the order; a torn last line and a foreign line are never used and never glue', async () => {
    const { paths, key } = await home('t0');
    await holdPendingSecret(paths, key, { name: 'idp', part: 'refresh_token', sent: Buffer.from('t1'), next: Buffer.from('t2') });
    // A kill in the middle of an append: half a line, no newline.
    const whole = await readFile(paths.pendingSecrets, 'utf8');
    await appendFile(paths.pendingSecrets, whole.trim().slice(0, 40));
    await holdPendingSecret(paths, key, { name: 'idp', part: 'refresh_token', sent: Buffer.from('t0'), next: Buffer.from('t1') });
    await appendFile(paths.pendingSecrets, `${whole.trim().replace(/"nonce":"[^"]{4}/, '"nonce":"AAAA')}\n`);
    assert.equal(openPendingSecrets(key, await readFile(paths.pendingSecrets, 'utf8')), 'unreadable', 'a file with a line that does not open is not read whole');
    assert.deepEqual(await foldPendingIntoVault(ctx(paths), PASS), { folded: 2, unopened: 2 });
    assert.equal(await stored(paths), 't2');
    assert.equal((await readFile(paths.pendingSecrets, 'utf8')).trim().split('\n').length, 2, 'the lines that do not open are left as they are');
  });

  it('two credentials held at once: neither append drops the other', async () => {
    const { paths, key } = await home('a0');
    await Promise.all([
      holdPendingSecret(paths, key, { name: 'idp', part: 'refresh_token', sent: Buffer.from('a0'), next: Buffer.from('a1') }),
      holdPendingSecret(paths, key, { name: 'other', part: 'refresh_token', sent: Buffer.from('b0'), next: Buffer.from('b1') }),
      releasePendingSecret(paths, key, { name: 'nobody', part: 'refresh_token', next: Buffer.from('x') }),
    ]);
    const found = openPendingSecrets(key, await readFile(paths.pendingSecrets, 'utf8'));
    assert.notEqual(found, 'unreadable');
    assert.deepEqual((found as { name: string }[]).map((e) => e.name).sort(), ['idp', 'other']);
  });
});
