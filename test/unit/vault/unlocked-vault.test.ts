// @subject time: credential created/rotated/used times (run again a year ahead by .ci/run)
// The UnlockedVault contract the CLI and the daemon code against: validation
// of add/rotate, metadata, derived keys, lock() zeroing, save-only-if-changed,
// changePassphrase, and the worker KDF runner.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { PosternError } from '../../../src/rules/errors.js';
import { CredentialKinds, changePassphrase, createVault, openVault, withVaultWriter } from '../../../src/vault/index.js';
import type { UnlockedVault } from '../../../src/vault/index.js';
import { HeaderOffsets, parseHeader } from '../../../src/vault/format.js';
import { deriveKekInline, deriveKekInWorker } from '../../../src/vault/kdf.js';
import { CHEAP, CHEAP_BOUNDS, CHEAP_KDF, rejectsWith, tempHome, utf8 } from './helpers.js';
import { wallClock } from '../../helpers/clock.js';

const pass = utf8('unlocked vault');
const times = ['2025-01-01T00:00:00.000Z', '2025-01-02T00:00:00.000Z', '2025-01-03T00:00:00.000Z'];

async function withFresh(t: Parameters<typeof tempHome>[0], fn: (v: UnlockedVault) => void | Promise<void>) {
  const { vault } = tempHome(t);
  await createVault(vault, pass, CHEAP);
  await withVaultWriter(vault, pass, fn, CHEAP);
  return vault;
}

test('add validates name, kind, fields and secret parts', async (t) => {
  await withFresh(t, async (v) => {
    const ok = { name: 'gh', kind: 'http_bearer' as const, fields: {}, secret: { token: utf8('t') } };
    for (const name of ['', 'Upper', '-lead', 'a b', 'x'.repeat(65), 'ünï', 'a/b', '../x']) {
      await rejectsWith(() => v.add({ ...ok, name }), 'INPUT_INVALID', /credential name must match/);
    }
    await rejectsWith(() => v.add({ ...ok, kind: 'ftp' as never }), 'INPUT_INVALID', /unknown credential kind/);
    await rejectsWith(() => v.add({ ...ok, secret: {} }), 'INPUT_INVALID', /needs the secret part 'token'/);
    await rejectsWith(() => v.add({ ...ok, secret: { token: utf8('t'), pin: utf8('1') } }), 'INPUT_INVALID', /no secret part 'pin'/);
    await rejectsWith(() => v.add({ ...ok, secret: { token: 'text' as never } }), 'INPUT_INVALID', /must be a Uint8Array/);
    await rejectsWith(() => v.add({ ...ok, secret: { token: new Uint8Array(64 * 1024 + 1) } }), 'SECRET_INVALID');
    await rejectsWith(() => v.add({ ...ok, kind: 'http_basic', secret: { password: utf8('p') } }), 'INPUT_INVALID', /needs the field 'username'/);
    await rejectsWith(() => v.add({ ...ok, fields: { 'Bad-Key': 'x' } }), 'INPUT_INVALID', /field name/);
    await rejectsWith(() => v.add({ ...ok, fields: { note: 'a\r\nInjected: 1' } }), 'INPUT_INVALID', /control characters/);
    v.add({ name: 'key', kind: 'ssh_key', fields: {}, secret: { private_key: utf8('k') } }); // key_passphrase is optional
    v.add(ok);
    const err = await rejectsWith(() => v.add(ok), 'SECRET_EXISTS', /"gh" already exists/);
    assert.equal(err.requiredAction, 'use_rotate');
    assert.equal(Object.keys(CredentialKinds).length, 12);
    await rejectsWith(() => v.add({ name: 'aws', kind: 'aws_sigv4', fields: {}, secret: { secret_access_key: utf8('s') } }), 'INPUT_INVALID', /needs the field 'access_key_id'/);
    v.add({ name: 'aws', kind: 'aws_sigv4', fields: { access_key_id: 'AKIDEXAMPLE' }, secret: { secret_access_key: utf8('s') } }); // session_token is optional
  });
});

test('list is sorted metadata; get returns secrets; rotate, markUsed and remove update it', async (t) => {
  let clock = times[0]!;
  const now = wallClock(() => new Date(clock));
  const { vault } = tempHome(t);
  await createVault(vault, pass, CHEAP);
  const token = utf8('original');
  await withVaultWriter(vault, pass, (v) => {
    v.add({ name: 'zeta', kind: 'http_bearer', fields: {}, secret: { token } });
    v.add({ name: 'alpha', kind: 'http_header', fields: { header: 'X-Key' }, secret: { value: utf8('h') } });
  }, { ...CHEAP, clock: now });
  token.fill(0); // the vault copied it
  clock = times[1]!;
  await withVaultWriter(vault, pass, async (v) => {
    assert.deepEqual(v.list().map((m) => m.name), ['alpha', 'zeta']);
    assert.equal(Buffer.from(v.get('zeta')!.secret.token!).toString(), 'original');
    assert.equal(v.get('nope'), undefined);
    const old = v.get('zeta')!.secret.token!;
    v.rotate('zeta', { token: utf8('rotated') });
    assert.equal(Buffer.from(old).toString(), 'original', 'the replaced secret is remembered, not zeroed');
    assert.equal(v.remembered().at(-1)?.secret['token'], old, 'the replaced secret is remembered for redaction (zeroed by lock)');
    v.rotate('alpha', { value: utf8('h2') }, { header: 'X-Other' });
    v.markUsed('alpha');
    assert.equal(Object.isFrozen(v.list()[0]), true);
    for (const op of [() => v.rotate('nope', { token: utf8('x') }), () => v.remove('nope'), () => v.markUsed('nope')]) {
      await rejectsWith(op, 'SECRET_NOT_FOUND', /no secret named "nope"/);
    }
  }, { ...CHEAP, clock: now });
  const v = await openVault(vault, pass, CHEAP);
  const [alpha, zeta] = v.list();
  assert.deepEqual(alpha, {
    name: 'alpha', kind: 'http_header', created_at: times[0], rotated_at: times[1], last_used_at: times[1], fields: { header: 'X-Other' },
  });
  assert.equal(zeta!.rotated_at, times[1]);
  assert.equal(Buffer.from(v.get('zeta')!.secret.token!).toString(), 'rotated');
  assert.deepEqual(v.secretValues().map((b) => Buffer.from(b).toString()).sort(), ['h2', 'rotated']);
  v.lock();
  await withVaultWriter(vault, pass, (w) => w.remove('zeta'), CHEAP);
  const after = await openVault(vault, pass, CHEAP);
  assert.deepEqual(after.list().map((m) => m.name), ['alpha']);
  assert.equal(after.generation, 4);
  after.lock();
});

test('add and rotate copy Buffer inputs: the caller zeroing its Buffer before the save leaves the saved value intact', async (t) => {
  const vault = await withFresh(t, (v) => {
    const input = Buffer.from('first-value-in-a-buffer');
    v.add({ name: 'k', kind: 'http_bearer', fields: {}, secret: { token: input } });
    input.fill(0);
  });
  await withVaultWriter(vault, pass, (v) => {
    // Buffer.concat, as the CLI's stdin reader makes it; zeroed by the CLI before withVaultWriter saves.
    const input = Buffer.concat([Buffer.from('rotated-'), Buffer.from('value')]);
    v.rotate('k', { token: input });
    input.fill(0);
  }, CHEAP);
  const v = await openVault(vault, pass, CHEAP);
  assert.equal(Buffer.from(v.get('k')?.secret['token'] ?? new Uint8Array()).toString('utf8'), 'rotated-value');
  v.lock();
});

test('withVaultWriter saves only when something changed', async (t) => {
  const { vault } = tempHome(t);
  await createVault(vault, pass, CHEAP);
  const before = readFileSync(vault);
  const result = await withVaultWriter(vault, pass, (v) => v.list().length, CHEAP);
  assert.equal(result, 0);
  assert.deepEqual(readFileSync(vault), before, 'read-only use leaves the file byte-identical');
  const gen = await withVaultWriter(vault, pass, (v) => {
    v.add({ name: 'a', kind: 'ssh_password', fields: {}, secret: { password: utf8('p') } });
    return v.generation;
  }, CHEAP);
  assert.equal(gen, 1);
  const v = await openVault(vault, pass, CHEAP);
  assert.equal(v.generation, 2);
  v.lock();
  await rejectsWith(withVaultWriter(vault, pass, (w) => {
    w.markUsed('a');
    w.lock();
  }, CHEAP), 'VAULT_LOCKED', /nothing was written/);
});

test('lock(): later calls → VAULT_LOCKED; secrets and derived keys handed out earlier are zeroed', async (t) => {
  const { vault } = tempHome(t);
  await createVault(vault, pass, CHEAP);
  await withVaultWriter(vault, pass, (v) => {
    v.add({ name: 'a', kind: 'ssh_key', fields: {}, secret: { private_key: utf8('PRIVATE'), key_passphrase: utf8('kp') } });
  }, CHEAP);
  const v = await openVault(vault, pass, CHEAP);
  const secret = v.get('a')!.secret;
  const values = v.secretValues();
  const derived = v.deriveKey('operator-auth');
  assert.ok(derived.some((b) => b !== 0));
  assert.equal(v.locked, false);
  v.lock();
  v.lock(); // idempotent
  assert.equal(v.locked, true);
  for (const bytes of [secret.private_key!, secret.key_passphrase!, ...values, derived]) {
    assert.ok(bytes.length > 0 && bytes.every((b) => b === 0), 'zeroed');
  }
  for (const call of [
    () => v.list(), () => v.get('a'), () => v.secretValues(), () => v.deriveKey('catalog-mac'), () => v.markUsed('a'), () => v.remove('a'),
    () => v.rotate('a', { private_key: utf8('x') }), () => v.add({ name: 'b', kind: 'ssh_password', fields: {}, secret: { password: utf8('p') } }),
  ]) {
    await rejectsWith(call, 'VAULT_LOCKED');
  }
});

test('changePassphrase: old → VAULT_AUTH, new opens, credentials kept, a new data key (every derived key changes), new salt', async (t) => {
  const vault = await withFresh(t, (v) => v.add({ name: 'gh', kind: 'http_bearer', fields: {}, secret: { token: utf8('tok') } }));
  const v1 = await openVault(vault, pass, CHEAP);
  const keys1 = [Buffer.from(v1.deriveKey('catalog-mac')), Buffer.from(v1.deriveKey('operator-auth'))];
  assert.notDeepEqual(keys1[0], keys1[1], 'purposes give distinct keys');
  v1.lock();
  const h1 = parseHeader(readFileSync(vault), { bounds: CHEAP_BOUNDS });
  const oldCopy = readFileSync(vault);
  const newPass = utf8('a new passphrase ✓');
  const stronger = { opslimit: 2, memlimit: 16 * 1024 };
  await rejectsWith(changePassphrase(vault, utf8('wrong'), newPass, CHEAP), 'VAULT_AUTH');
  await changePassphrase(vault, pass, newPass, { ...CHEAP, kdf: stronger });
  const h2 = parseHeader(readFileSync(vault), { bounds: CHEAP_BOUNDS });
  assert.notDeepEqual(h1.salt, h2.salt);
  assert.deepEqual(h2.kdf, stronger);
  const err = await rejectsWith(openVault(vault, pass, CHEAP), 'VAULT_AUTH');
  assert.equal(err.message, `wrong passphrase, or the vault file was modified: ${vault}`);
  const v2 = await openVault(vault, newPass, CHEAP);
  assert.equal(v2.generation, 3);
  assert.equal(Buffer.from(v2.get('gh')!.secret.token!).toString(), 'tok');
  const keys2 = [Buffer.from(v2.deriveKey('catalog-mac')), Buffer.from(v2.deriveKey('operator-auth'))];
  assert.notDeepEqual(keys2[0], keys1[0], 'the catalog-mac key changed');
  assert.notDeepEqual(keys2[1], keys1[1], 'the operator-auth key changed');
  v2.lock();
  // An old copy of the file still opens with the old passphrase, but only to what it held then, under the old keys.
  writeFileSync(vault, oldCopy);
  const old = await openVault(vault, pass, CHEAP);
  assert.deepEqual([Buffer.from(old.deriveKey('catalog-mac')), Buffer.from(old.deriveKey('operator-auth'))], keys1);
  old.lock();
});

test('changePassphrase re-authenticates through the hook: old keys before the save, new keys written after it', async (t) => {
  const vault = await withFresh(t, () => undefined);
  const v1 = await openVault(vault, pass, CHEAP);
  const oldKey = Buffer.from(v1.deriveKey('catalog-mac'));
  v1.lock();
  const seen: string[] = [];
  const out = await changePassphrase(vault, pass, utf8('another passphrase'), CHEAP, (keys) => {
    assert.deepEqual(Buffer.from(keys.old('catalog-mac')), oldKey);
    const fresh = Buffer.from(keys.new('catalog-mac'));
    assert.notDeepEqual(fresh, oldKey);
    seen.push('prepared');
    return Promise.resolve(async () => {
      seen.push('committed');
      const v = await openVault(vault, utf8('another passphrase'), CHEAP);
      try {
        assert.deepEqual(Buffer.from(v.deriveKey('catalog-mac')), fresh, 'the vault on disk already holds the new data key');
      } finally {
        v.lock();
      }
      return 42;
    });
  });
  assert.equal(out, 42);
  assert.deepEqual(seen, ['prepared', 'committed']);
  // A hook that fails before the save leaves the vault as it was.
  await rejectsWith(changePassphrase(vault, utf8('another passphrase'), utf8('third passphrase!'), CHEAP, () => Promise.reject(new PosternError('CATALOG_UNAUTHENTICATED', 'no'))), 'CATALOG_UNAUTHENTICATED');
  (await openVault(vault, utf8('another passphrase'), CHEAP)).lock();
});

test('the catalog acceptance mark: null at first, one step up at a time, kept across saves and passphrase changes', async (t) => {
  const d = (c: string): string => c.repeat(64);
  const vault = await withFresh(t, (v) => {
    assert.equal(v.acceptedCatalog, null);
    v.recordAcceptedCatalog({ sequence: 1, digest: d('a') });
  });
  await rejectsWith(withVaultWriter(vault, pass, (v) => v.recordAcceptedCatalog({ sequence: 3, digest: d('b') }), CHEAP), 'INPUT_INVALID', /#2/);
  await rejectsWith(withVaultWriter(vault, pass, (v) => v.recordAcceptedCatalog({ sequence: 1, digest: d('b') }), CHEAP), 'INPUT_INVALID', /#2/);
  await withVaultWriter(vault, pass, (v) => v.recordAcceptedCatalog({ sequence: 2, digest: d('b') }), CHEAP);
  await changePassphrase(vault, pass, utf8('another passphrase'), CHEAP);
  const v = await openVault(vault, utf8('another passphrase'), CHEAP);
  assert.deepEqual(v.acceptedCatalog, { sequence: 2, digest: d('b') });
  v.lock();
});

test('wrong passphrase and a tampered byte give the same VAULT_AUTH message', async (t) => {
  const vault = await withFresh(t, () => undefined);
  const wrong = await rejectsWith(openVault(vault, utf8('nope'), CHEAP), 'VAULT_AUTH');
  const file = readFileSync(vault);
  file[HeaderOffsets.payloadLength + 10]! ^= 1;
  writeFileSync(vault, file);
  const tampered = await rejectsWith(openVault(vault, pass, CHEAP), 'VAULT_AUTH');
  assert.equal(wrong.message, tampered.message);
  assert.deepEqual(wrong.details, tampered.details);
});

test('KDF parameters outside the accepted range are refused when creating', async (t) => {
  const { vault } = tempHome(t);
  await rejectsWith(createVault(vault, pass, { ...CHEAP, kdf: { opslimit: 17, memlimit: 8192 } }), 'INPUT_INVALID', /opslimit 17 exceeds/);
  await rejectsWith(createVault(vault, pass, { ...CHEAP, kdf: { opslimit: 1, memlimit: 9000 } }), 'INPUT_INVALID', /multiple of 1024/);
  await rejectsWith(createVault(vault, pass, { kdf: CHEAP_KDF, kdfRunner: 'inline' }), 'INPUT_INVALID', /below the minimum/);
  await rejectsWith(createVault(vault, 'text' as never, CHEAP), 'INPUT_INVALID', /passphrase must be a Uint8Array/);
});

test('the worker KDF runner matches the inline one and leaves the caller’s passphrase intact', async () => {
  const passphrase = utf8('worker ⚙');
  const salt = new Uint8Array(16).fill(9);
  const [a, b] = await Promise.all([deriveKekInWorker(passphrase, salt, CHEAP_KDF), deriveKekInline(passphrase, salt, CHEAP_KDF)]);
  assert.deepEqual(Buffer.from(a), Buffer.from(b));
  assert.equal(a.length, 32);
  assert.equal(Buffer.from(passphrase).toString(), 'worker ⚙');
});
