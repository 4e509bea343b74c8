// Mutation sweep (THREATS row 13): every single-bit flip, every truncation
// and appended bytes on a small vault give VAULT_AUTH or VAULT_CORRUPT —
// never another exception and never any data. Runs the exact in-memory path
// openVault uses (openVaultBytes) with a cheap inline KDF; a sample also goes
// through openVault on disk.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { PosternError } from '../../../src/rules/errors.js';
import { createVault, openVault, withVaultWriter } from '../../../src/vault/index.js';
import { openVaultBytes } from '../../../src/vault/codec.js';
import { HEADER_BYTES } from '../../../src/vault/format.js';
import type { KdfBounds } from '../../../src/vault/format.js';
import { kekDeriver } from '../../../src/vault/kdf.js';
import { CHEAP, CHEAP_KDF, tempHome, utf8 } from './helpers.js';

const pass = utf8('sweep passphrase');
// A low ceiling too, so flipped cost bits stay cheap: every in-bounds value still runs Argon2id.
const bounds: KdfBounds = { min: CHEAP_KDF, max: { opslimit: 3, memlimit: 32 * 1024 } };
const deriveKek = kekDeriver('inline');

async function smallVault(t: Parameters<typeof tempHome>[0]): Promise<{ vault: string; file: Buffer }> {
  const { vault } = tempHome(t);
  await createVault(vault, pass, CHEAP);
  await withVaultWriter(vault, pass, (v) => {
    v.add({ name: 'gh', kind: 'http_bearer', fields: {}, secret: { token: utf8('ghp_sweep') } });
    v.add({ name: 'box', kind: 'ssh_key', fields: { key_type: 'ed25519' }, secret: { private_key: Uint8Array.of(0, 1, 2, 255) } });
  }, CHEAP);
  return { vault, file: readFileSync(vault) };
}

/** Open mutated bytes; return the error code, failing the test on success or a foreign exception. */
async function codeOf(bytes: Uint8Array, what: string): Promise<string> {
  let result: unknown;
  try {
    result = await openVaultBytes(bytes, pass, { bounds, deriveKek, source: 'sweep' });
  } catch (e) {
    if (!(e instanceof PosternError)) assert.fail(`${what}: non-Postern exception ${String(e)}`);
    if (e.code !== 'VAULT_AUTH' && e.code !== 'VAULT_CORRUPT') assert.fail(`${what}: unexpected code ${e.code}: ${e.message}`);
    assert.doesNotMatch(e.message, /sweep passphrase|ghp_sweep/);
    return e.code;
  }
  assert.fail(`${what}: mutated vault opened and returned data (${typeof result})`);
}

test('the unmodified vault opens (sanity for the sweep)', async (t) => {
  const { file } = await smallVault(t);
  const opened = await openVaultBytes(file, pass, { bounds, deriveKek });
  assert.equal(opened.contents.credentials.size, 2);
});

test('every single-bit flip is VAULT_AUTH or VAULT_CORRUPT', async (t) => {
  const { file } = await smallVault(t);
  const counts = { VAULT_AUTH: 0, VAULT_CORRUPT: 0 } as Record<string, number>;
  for (let byte = 0; byte < file.length; byte++) {
    for (let bit = 0; bit < 8; bit++) {
      const m = Uint8Array.from(file);
      m[byte]! ^= 1 << bit;
      const code = await codeOf(m, `flip byte ${byte} bit ${bit}`);
      counts[code]!++;
      // Payload bits can only fail authentication; structure is checked first.
      if (byte >= HEADER_BYTES) assert.equal(code, 'VAULT_AUTH', `payload byte ${byte}`);
    }
  }
  assert.equal(counts.VAULT_AUTH! + counts.VAULT_CORRUPT!, file.length * 8);
  assert.ok(counts.VAULT_CORRUPT! > 0 && counts.VAULT_AUTH! > 0);
});

test('every truncation is VAULT_CORRUPT', async (t) => {
  const { file } = await smallVault(t);
  for (let len = 0; len < file.length; len++) {
    assert.equal(await codeOf(file.subarray(0, len), `truncate to ${len}`), 'VAULT_CORRUPT');
  }
});

test('appended bytes are VAULT_CORRUPT', async (t) => {
  const { file } = await smallVault(t);
  for (const extra of [Uint8Array.of(0), Uint8Array.of(0x0a), new Uint8Array(16), new Uint8Array(4096).fill(0x41), file]) {
    assert.equal(await codeOf(Buffer.concat([file, extra]), `append ${extra.length}`), 'VAULT_CORRUPT');
  }
});

test('a sample of flips through openVault on disk: typed error, the file opens again once restored', async (t) => {
  const { vault, file } = await smallVault(t);
  const positions = [0, 8, 10, 11, 15, 23, 40, 70, 115, 135, HEADER_BYTES, Math.floor(file.length / 2), file.length - 1];
  for (const byte of positions) {
    const m = Uint8Array.from(file);
    m[byte]! ^= 0x10;
    writeFileSync(vault, m, { mode: 0o600 });
    let caught: unknown;
    await openVault(vault, pass, CHEAP).then(
      () => assert.fail(`byte ${byte}: opened`),
      (e: unknown) => (caught = e),
    );
    assert.ok(caught instanceof PosternError && (caught.code === 'VAULT_AUTH' || caught.code === 'VAULT_CORRUPT'), `byte ${byte}: ${String(caught)}`);
    assert.ok(caught.message.includes(vault), 'the message names the vault');
  }
  writeFileSync(vault, file);
  const v = await openVault(vault, pass, CHEAP);
  assert.equal(v.list().length, 2);
  v.lock();
});
