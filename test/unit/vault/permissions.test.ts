// File-system safety: the vault and its directory must be private and ours,
// the vault path must not be a symlink (or a FIFO), and new vaults are
// created private. Each refusal names the path, the mode and the fix.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { createVault, openVault, vaultExists, withVaultWriter } from '../../../src/vault/index.js';
import { CHEAP, rejectsWith, tempHome, utf8 } from './helpers.js';

const pass = utf8('permissions');

test('createVault makes a missing home 0700 and a 0600 vault; a second create → VAULT_EXISTS', async (t) => {
  const { dir } = tempHome(t);
  const vault = join(dir, 'home', 'nested', 'vault.pvlt');
  assert.equal(await vaultExists(vault), false);
  await createVault(vault, pass, CHEAP);
  assert.equal(await vaultExists(vault), true);
  assert.equal(statSync(join(dir, 'home', 'nested')).mode & 0o777, 0o700);
  assert.equal(statSync(vault).mode & 0o777, 0o600);
  const before = readFileSync(vault);
  await rejectsWith(createVault(vault, pass, CHEAP), 'VAULT_EXISTS', /already exists at .*vault\.pvlt/);
  assert.deepEqual(readFileSync(vault), before);
});

test('a missing vault or home → VAULT_NOT_FOUND', async (t) => {
  const { dir, vault } = tempHome(t);
  await rejectsWith(openVault(vault, pass, CHEAP), 'VAULT_NOT_FOUND', /no vault at/);
  await rejectsWith(openVault(join(dir, 'absent', 'vault.pvlt'), pass, CHEAP), 'VAULT_NOT_FOUND');
  await rejectsWith(withVaultWriter(vault, pass, () => undefined, CHEAP), 'VAULT_NOT_FOUND');
  assert.equal(existsSync(`${vault}.lock`), false);
});

test('a 0644 vault → VAULT_PERMISSIONS with path, mode and chmod fix (open and save)', async (t) => {
  const { vault } = tempHome(t);
  await createVault(vault, pass, CHEAP);
  for (const mode of [0o644, 0o640, 0o604, 0o601]) {
    chmodSync(vault, mode);
    const err = await rejectsWith(openVault(vault, pass, CHEAP), 'VAULT_PERMISSIONS');
    assert.ok(err.message.includes(vault));
    assert.ok(err.message.includes(`0${mode.toString(8)}`), err.message);
    assert.ok(err.message.includes(`chmod 600 ${vault}`));
    await rejectsWith(withVaultWriter(vault, pass, () => undefined, CHEAP), 'VAULT_PERMISSIONS');
  }
  chmodSync(vault, 0o600);
  (await openVault(vault, pass, CHEAP)).lock();
});

test('a 0755 (or 0750) directory → VAULT_PERMISSIONS; 0711 is accepted', async (t) => {
  const { dir, vault } = tempHome(t);
  await createVault(vault, pass, CHEAP);
  for (const mode of [0o755, 0o750, 0o705]) {
    chmodSync(dir, mode);
    const err = await rejectsWith(openVault(vault, pass, CHEAP), 'VAULT_PERMISSIONS', new RegExp(`0${mode.toString(8)}`));
    assert.ok(err.message.includes(`chmod 700 ${dir}`));
    await rejectsWith(createVault(join(dir, 'other.pvlt'), pass, CHEAP), 'VAULT_PERMISSIONS');
  }
  chmodSync(dir, 0o711);
  (await openVault(vault, pass, CHEAP)).lock();
  chmodSync(dir, 0o700);
});

test('a symlinked vault is refused on open, on write and on create', async (t) => {
  const { dir, vault } = tempHome(t);
  const real = join(dir, 'real.pvlt');
  await createVault(real, pass, CHEAP);
  symlinkSync(real, vault);
  await rejectsWith(openVault(vault, pass, CHEAP), 'VAULT_PERMISSIONS', /symbolic link/);
  await rejectsWith(withVaultWriter(vault, pass, () => undefined, CHEAP), 'VAULT_PERMISSIONS', /symbolic link/);
  await rejectsWith(createVault(vault, pass, CHEAP), 'VAULT_EXISTS');
  const dangling = join(dir, 'dangling.pvlt');
  symlinkSync(join(dir, 'nowhere'), dangling);
  await rejectsWith(openVault(dangling, pass, CHEAP), 'VAULT_PERMISSIONS', /symbolic link/);
  await rejectsWith(createVault(dangling, pass, CHEAP), 'VAULT_EXISTS');
  assert.equal(existsSync(join(dir, 'nowhere')), false, 'nothing was written through the link');
});

test('a FIFO at the vault path is refused without hanging', async (t) => {
  const { vault } = tempHome(t);
  execFileSync('mkfifo', ['-m', '600', vault]);
  await rejectsWith(openVault(vault, pass, CHEAP), 'VAULT_CORRUPT', /not a regular file/);
});

test('a vault or directory owned by another uid is refused', { skip: process.getuid?.() !== 0 && 'needs root to chown' }, async (t) => {
  const { dir, vault } = tempHome(t);
  await createVault(vault, pass, CHEAP);
  chownSync(vault, 4321, 4321);
  await rejectsWith(openVault(vault, pass, CHEAP), 'VAULT_PERMISSIONS', /owned by uid 4321/);
  chownSync(vault, 0, 0);
  const sub = join(dir, 'foreign');
  mkdirSync(sub, { mode: 0o700 });
  copyFileSync(vault, join(sub, 'vault.pvlt'));
  chownSync(sub, 4321, 4321);
  await rejectsWith(openVault(join(sub, 'vault.pvlt'), pass, CHEAP), 'VAULT_PERMISSIONS', /directory .* owned by uid 4321/);
});
