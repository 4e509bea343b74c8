// One writer at a time: a live holder makes others VAULT_BUSY; a lock left by
// a dead process (or garbage) is taken over; the lock is released on every
// path, including a throwing callback and a failed open.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { changePassphrase, createVault, openVault, withVaultWriter } from '../../../src/vault/index.js';
import { CHEAP, rejectsWith, tempHome, utf8 } from './helpers.js';

const pass = utf8('lock test');
const bearer = (name: string) => ({ name, kind: 'http_bearer' as const, fields: {}, secret: { token: utf8(name) } });

function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(r.stdout.toString());
}

test('a second writer while the first holds the lock → VAULT_BUSY naming the holder; readers are not blocked', async (t) => {
  const { vault } = tempHome(t);
  await createVault(vault, pass, CHEAP);
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let entered!: () => void;
  const inside = new Promise<void>((r) => (entered = r));
  const first = withVaultWriter(vault, pass, async (v) => {
    v.add(bearer('first'));
    entered();
    await held;
  }, CHEAP);
  await inside;
  const lockText = readFileSync(`${vault}.lock`, 'utf8');
  assert.match(lockText, new RegExp(`^${process.pid} [0-9a-f]{32}\\n$`));
  assert.equal(statSync(`${vault}.lock`).mode & 0o777, 0o600);
  const err = await rejectsWith(withVaultWriter(vault, pass, (v) => v.add(bearer('second')), CHEAP), 'VAULT_BUSY', /being written by process \d+/);
  assert.equal(err.details.pid, process.pid);
  await rejectsWith(changePassphrase(vault, pass, utf8('other'), CHEAP), 'VAULT_BUSY');
  const reader = await openVault(vault, pass, CHEAP);
  assert.equal(reader.generation, 1);
  reader.lock();
  release();
  await first;
  assert.equal(existsSync(`${vault}.lock`), false, 'released after save');
  await withVaultWriter(vault, pass, (v) => v.add(bearer('second')), CHEAP);
  const v = await openVault(vault, pass, CHEAP);
  assert.deepEqual(v.list().map((m) => m.name), ['first', 'second']);
  v.lock();
});

test('a lock held by another live process → VAULT_BUSY, and the lock is left alone', async (t) => {
  const { vault } = tempHome(t);
  await createVault(vault, pass, CHEAP);
  const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
  t.after(() => other.kill('SIGKILL'));
  const content = `${other.pid} ${'cd'.repeat(16)}\n`;
  writeFileSync(`${vault}.lock`, content, { mode: 0o600 });
  const err = await rejectsWith(withVaultWriter(vault, pass, (v) => v.add(bearer('x')), CHEAP), 'VAULT_BUSY', /delete .*vault\.pvlt\.lock/);
  assert.equal(err.details.pid, other.pid);
  assert.equal(readFileSync(`${vault}.lock`, 'utf8'), content);
});

test('a stale lock from a dead pid is taken over', async (t) => {
  const { vault } = tempHome(t);
  await createVault(vault, pass, CHEAP);
  writeFileSync(`${vault}.lock`, `${deadPid()} ${'ab'.repeat(16)}\n`, { mode: 0o600 });
  await withVaultWriter(vault, pass, (v) => v.add(bearer('after-stale')), CHEAP);
  assert.equal(existsSync(`${vault}.lock`), false);
  const v = await openVault(vault, pass, CHEAP);
  assert.equal(v.generation, 2);
  v.lock();
});

test('an unreadable lock (garbage, empty, or a planted symlink) is treated as stale', async (t) => {
  const { dir, vault } = tempHome(t);
  await createVault(vault, pass, CHEAP);
  for (const plant of [
    () => writeFileSync(`${vault}.lock`, 'garbage', { mode: 0o600 }),
    () => writeFileSync(`${vault}.lock`, '', { mode: 0o600 }),
    () => symlinkSync(`${dir}/elsewhere`, `${vault}.lock`),
  ]) {
    plant();
    await withVaultWriter(vault, pass, () => undefined, CHEAP);
    assert.equal(existsSync(`${vault}.lock`), false);
  }
  assert.equal(existsSync(`${dir}/elsewhere`), false, 'nothing was written through the link');
});

test('the lock is released when the callback throws, and nothing is saved', async (t) => {
  const { vault } = tempHome(t);
  await createVault(vault, pass, CHEAP);
  const before = readFileSync(vault);
  await assert.rejects(
    withVaultWriter(vault, pass, (v) => {
      v.add(bearer('never'));
      throw new Error('callback failed');
    }, CHEAP),
    /callback failed/,
  );
  assert.equal(existsSync(`${vault}.lock`), false);
  assert.deepEqual(readFileSync(vault), before);
});

test('the lock is released when the open fails (wrong passphrase)', async (t) => {
  const { vault } = tempHome(t);
  await createVault(vault, pass, CHEAP);
  await rejectsWith(withVaultWriter(vault, utf8('wrong'), () => undefined, CHEAP), 'VAULT_AUTH');
  assert.equal(existsSync(`${vault}.lock`), false);
});
