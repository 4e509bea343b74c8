// reopenVault: how a running daemon adopts what `secret add|rotate|rm` saved,
// with the data key it holds and no passphrase. Newer generations are
// adopted, the same one is "unchanged", an older copy is reported as such,
// and a file sealed under another data key is VAULT_AUTH.
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { changePassphrase, createVault, openVault, reopenVault, withVaultWriter } from '../../../src/vault/index.js';
import { CHEAP, rejectsWith, tempHome, utf8 } from './helpers.js';

const pass = utf8('reopen-passphrase');
const token = (s: string) => ({ token: utf8(s) });
const text = (b: Uint8Array | undefined): string => Buffer.from(b ?? new Uint8Array()).toString('utf8');

test('unchanged, then newer after a save (rotate, add, rm), then older when a copy is put back', async (t) => {
  const { dir, vault } = tempHome(t);
  await createVault(vault, pass, CHEAP);
  await withVaultWriter(vault, pass, (v) => v.add({ name: 'api', kind: 'http_bearer', fields: {}, secret: token('one') }), CHEAP);
  const held = await openVault(vault, pass, CHEAP);
  assert.deepEqual(await reopenVault(vault, held, CHEAP), { kind: 'unchanged', generation: 2 });

  const older = join(dir, 'older.pvlt');
  copyFileSync(vault, older);
  await withVaultWriter(vault, pass, (v) => {
    v.rotate('api', token('two'));
    v.add({ name: 'other', kind: 'http_bearer', fields: {}, secret: token('x') });
  }, CHEAP);
  const r = await reopenVault(vault, held, CHEAP);
  assert.equal(r.kind, 'newer');
  if (r.kind !== 'newer') return;
  assert.equal(r.vault.generation, 3);
  assert.equal(text(r.vault.get('api')?.secret['token']), 'two');
  assert.deepEqual(r.vault.list().map((m) => m.name), ['api', 'other']);
  // The held vault is untouched, and the new one owns its keys: locking one leaves the other usable.
  assert.equal(text(held.get('api')?.secret['token']), 'one');
  held.lock();
  assert.equal(text(r.vault.get('api')?.secret['token']), 'two');
  assert.equal(r.vault.deriveKey('catalog-mac').length, 32);

  copyFileSync(older, `${vault}.restore`);
  renameSync(`${vault}.restore`, vault);
  assert.deepEqual(await reopenVault(vault, r.vault, CHEAP), { kind: 'older', generation: 2 });
  r.vault.lock();
});

test('a passphrase change makes a new data key: the held key no longer opens it (VAULT_AUTH), nor a vault under another data key', async (t) => {
  const { dir, vault } = tempHome(t);
  await createVault(vault, pass, CHEAP);
  const held = await openVault(vault, pass, CHEAP);
  const before = readFileSync(vault);
  await changePassphrase(vault, pass, utf8('another-passphrase'), CHEAP);
  await rejectsWith(reopenVault(vault, held, CHEAP), 'VAULT_AUTH');
  writeFileSync(vault, before, { mode: 0o600 });

  const foreign = join(dir, 'foreign');
  mkdirSync(foreign, { mode: 0o700 });
  await createVault(join(foreign, 'vault.pvlt'), pass, CHEAP);
  await withVaultWriter(join(foreign, 'vault.pvlt'), pass, (v) => v.add({ name: 'api', kind: 'http_bearer', fields: {}, secret: token('z') }), CHEAP);
  copyFileSync(join(foreign, 'vault.pvlt'), vault);
  await rejectsWith(reopenVault(vault, held, CHEAP), 'VAULT_AUTH');
  rmSync(vault);
  await rejectsWith(reopenVault(vault, held, CHEAP), 'VAULT_NOT_FOUND');
  held.lock();
  await rejectsWith(reopenVault(vault, held, CHEAP), 'VAULT_LOCKED');
});

test('a symlinked vault directory is refused by every entry point', async (t) => {
  const { dir, vault } = tempHome(t);
  await createVault(vault, pass, CHEAP);
  const link = `${dir}-link`;
  symlinkSync(dir, link);
  t.after(() => rmSync(link, { force: true }));
  const linked = join(link, 'vault.pvlt');
  await rejectsWith(openVault(linked, pass, CHEAP), 'VAULT_PERMISSIONS', /symbolic link/);
  await rejectsWith(withVaultWriter(linked, pass, () => undefined, CHEAP), 'VAULT_PERMISSIONS', /symbolic link/);
  await rejectsWith(createVault(join(link, 'new.pvlt'), pass, CHEAP), 'VAULT_PERMISSIONS', /symbolic link/);
});
