// Malformed-file corpus (THREATS row 13): each row is a damaged or hostile
// vault, the error code it must produce and the reason it must give. Header
// rows must be rejected before any key derivation, quickly and without
// allocating anything sized by the header. Payload rows are authenticated
// (sealed with the right key) but do not match the v1 payload schema.
import assert from 'node:assert/strict';
import { open, writeFile } from 'node:fs/promises';
import { test } from 'node:test';
import { PosternError } from '../../../src/rules/errors.js';
import { openVault } from '../../../src/vault/index.js';
import { openVaultBytes } from '../../../src/vault/codec.js';
import { DEFAULT_KDF_BOUNDS, encodeHeader, HEADER_BYTES, HeaderOffsets, KDF_ARGON2ID13, MAGIC, MAX_FILE_BYTES } from '../../../src/vault/format.js';
import type { KdfBounds, KeyWrap } from '../../../src/vault/format.js';
import { kekDeriver } from '../../../src/vault/kdf.js';
import type { DeriveKek } from '../../../src/vault/kdf.js';
import { sodium } from '../../../src/vault/libsodium.js';
import { createKeyWrap, sealVault } from '../../../src/vault/seal.js';
import { CHEAP, CHEAP_BOUNDS, CHEAP_KDF, rejectsWith, tempHome, utf8 } from './helpers.js';

const pass = utf8('corpus');

/** A structurally valid header with the given KDF parameters and an arbitrary wrap. */
function header(over: { opslimit?: number; memlimit?: bigint; payloadLength?: number } = {}): Uint8Array {
  const wrap: KeyWrap = { kdf: { opslimit: 3, memlimit: 256 * 1024 * 1024 }, salt: new Uint8Array(16), wrapNonce: new Uint8Array(24), wrappedKey: new Uint8Array(48) };
  const h = encodeHeader(wrap, new Uint8Array(24), over.payloadLength ?? 32);
  const view = new DataView(h.buffer);
  if (over.opslimit !== undefined) view.setUint32(HeaderOffsets.opslimit, over.opslimit, true);
  if (over.memlimit !== undefined) view.setBigUint64(HeaderOffsets.memlimit, over.memlimit, true);
  return h;
}
const withPayload = (h: Uint8Array, n = 32): Uint8Array => Buffer.concat([h, new Uint8Array(n)]);
const patched = (bytes: Uint8Array, at: number, f: (v: DataView) => void): Uint8Array => {
  const copy = Uint8Array.from(bytes);
  f(new DataView(copy.buffer, at));
  return copy;
};

interface Row {
  readonly name: string;
  readonly bytes: Uint8Array;
  readonly reason: RegExp;
  readonly bounds?: KdfBounds;
}

const rows: Row[] = [
  { name: 'zero-length file', bytes: new Uint8Array(0), reason: /empty file/ },
  { name: 'unknown magic', bytes: withPayload(patched(header(), 0, (v) => v.setUint8(1, 0x51))), reason: /bad magic/ },
  { name: 'text file', bytes: utf8('{"format":1}\n'), reason: /bad magic/ },
  { name: 'magic mangled by CRLF conversion', bytes: Buffer.concat([MAGIC.subarray(0, 5), Uint8Array.of(0x0d, 0x0d, 0x0a)]), reason: /bad magic/ },
  { name: 'only part of the magic', bytes: MAGIC.subarray(0, 5), reason: /truncated header \(5 of 139/ },
  { name: 'unknown version 2', bytes: withPayload(patched(header(), HeaderOffsets.version, (v) => v.setUint16(0, 2, true))), reason: /unsupported format version 2/ },
  { name: 'version 0', bytes: withPayload(patched(header(), HeaderOffsets.version, (v) => v.setUint16(0, 0, true))), reason: /unsupported format version 0/ },
  { name: 'future version with a short header', bytes: Buffer.concat([MAGIC, Uint8Array.of(9, 0)]), reason: /unsupported format version 9/ },
  { name: 'unknown KDF id', bytes: withPayload(patched(header(), HeaderOffsets.kdfId, (v) => v.setUint8(0, KDF_ARGON2ID13 + 1))), reason: /unknown KDF id 2/ },
  { name: 'memlimit 2^40', bytes: withPayload(header({ memlimit: 2n ** 40n })), reason: /memlimit 1099511627776 bytes exceeds the maximum/ },
  { name: 'memlimit 2^64-1', bytes: withPayload(header({ memlimit: 2n ** 64n - 1n })), reason: /memlimit 18446744073709551615 bytes exceeds/ },
  { name: 'memlimit below the MODERATE floor', bytes: withPayload(header({ memlimit: 8192n })), reason: /memlimit 8192 bytes is below the minimum 268435456/ },
  { name: 'memlimit not a multiple of 1024', bytes: withPayload(header({ memlimit: 256n * 1024n * 1024n + 1n })), reason: /not a multiple of 1024/ },
  { name: 'opslimit 0', bytes: withPayload(header({ opslimit: 0 })), reason: /opslimit 0 is below the minimum/ },
  { name: 'opslimit 0 even with the lowest floor', bytes: withPayload(header({ opslimit: 0, memlimit: 8192n })), reason: /opslimit 0 is below the minimum 1/, bounds: CHEAP_BOUNDS },
  { name: 'opslimit 2^32-1', bytes: withPayload(header({ opslimit: 2 ** 32 - 1 })), reason: /opslimit 4294967295 exceeds the maximum 16/ },
  { name: 'opslimit below the MODERATE floor', bytes: withPayload(header({ opslimit: 2 })), reason: /opslimit 2 is below the minimum 3/ },
  { name: 'payload length larger than the file', bytes: withPayload(header({ payloadLength: 64 })), reason: /truncated payload \(file has 171 bytes, header declares 203\)/ },
  { name: 'payload length 4 GiB - 1', bytes: withPayload(header({ payloadLength: 2 ** 32 - 1 })), reason: /payload length 4294967295 exceeds the maximum/ },
  { name: 'payload length shorter than the tag', bytes: withPayload(header({ payloadLength: 15 }), 15), reason: /shorter than the 16-byte tag/ },
  { name: 'lengths mismatch: trailing bytes', bytes: withPayload(header({ payloadLength: 16 }), 32), reason: /16 trailing bytes/ },
  { name: 'header only', bytes: header(), reason: /truncated payload \(file has 139 bytes/ },
  { name: 'truncated header', bytes: header().subarray(0, 100), reason: /truncated header \(100 of 139/ },
];

function spyKek(): { derive: DeriveKek; calls: () => number } {
  let calls = 0;
  return {
    derive: () => {
      calls++;
      return Promise.reject(new Error('the KDF must not run for a malformed header'));
    },
    calls: () => calls,
  };
}

for (const row of rows) {
  test(`header corpus: ${row.name} → VAULT_CORRUPT`, async () => {
    const spy = spyKek();
    const before = process.memoryUsage().arrayBuffers;
    const started = performance.now();
    const err = await rejectsWith(openVaultBytes(row.bytes, pass, { bounds: row.bounds ?? DEFAULT_KDF_BOUNDS, deriveKek: spy.derive }), 'VAULT_CORRUPT', row.reason);
    // The guarantees are structural (no KDF, no big allocation); the time bound is generous so a
    // loaded machine never fails it, yet far below what an Argon2id run or a large read would cost.
    assert.ok(performance.now() - started < 5000, 'rejected in bounded time');
    assert.ok(process.memoryUsage().arrayBuffers - before < 16 * 1024 * 1024, 'no large allocation');
    assert.equal(spy.calls(), 0, 'no key derivation');
    assert.match(String(err.details.reason), row.reason);
  });
}

test('on disk: an empty file, a header-only file and a sparse 5 GiB file are VAULT_CORRUPT without reading them', async (t) => {
  const { vault } = tempHome(t);
  await writeFile(vault, new Uint8Array(0), { mode: 0o600 });
  await rejectsWith(openVault(vault, pass, CHEAP), 'VAULT_CORRUPT', /empty file/);
  await writeFile(vault, header({ payloadLength: 2 ** 32 - 1 }), { mode: 0o600 });
  await rejectsWith(openVault(vault, pass, CHEAP), 'VAULT_CORRUPT', /payload length 4294967295/);
  const fh = await open(vault, 'r+');
  await fh.truncate(5 * 1024 ** 3);
  await fh.close();
  const before = process.memoryUsage().arrayBuffers;
  const started = performance.now();
  const err = await rejectsWith(openVault(vault, pass, CHEAP), 'VAULT_CORRUPT', /larger than any version 1 vault/);
  assert.ok(performance.now() - started < 5000, 'a 5 GiB file is refused without reading it');
  assert.ok(process.memoryUsage().arrayBuffers - before < 16 * 1024 * 1024);
  assert.ok(err.message.includes(vault));
  assert.ok(MAX_FILE_BYTES < 5 * 1024 ** 3);
});

// Authenticated payloads that are not valid v1 contents.
const dataKey = sodium.randombytes_buf(32);
let keyWrap: KeyWrap | undefined;
async function sealed(payload: string | Uint8Array): Promise<Uint8Array> {
  keyWrap ??= await createKeyWrap(pass, dataKey, CHEAP_KDF, kekDeriver('inline'));
  return sealVault(dataKey, keyWrap, typeof payload === 'string' ? utf8(payload) : payload);
}
const cred = (over: Record<string, unknown> = {}) => ({
  name: 'gh', kind: 'http_bearer', created_at: '2025-01-01T00:00:00.000Z', rotated_at: null, last_used_at: null, fields: {}, secret: { token: 'dG9r' }, ...over,
});
const doc = (over: Record<string, unknown> = {}, creds: unknown[] = [cred()]) =>
  JSON.stringify({ format: 1, generation: 1, created_at: '2025-01-01T00:00:00.000Z', credentials: creds, ...over });

const payloadRows: Array<[string, string | Uint8Array, RegExp]> = [
  ['invalid UTF-8', Uint8Array.of(0x7b, 0xff, 0x7d), /not valid UTF-8/],
  ['not JSON', 'format=1', /not valid JSON/],
  ['format 2 without its accepted_catalog member', doc({ format: 2 }), /does not match format 2 at 'accepted_catalog'/],
  ['format 5 (from a later Postern)', doc({ format: 5 }), /unsupported payload format 5/],
  ['format 4 without its journal member', doc({ format: 4, accepted_catalog: null, retention_days: 30, remembered: [] }), /does not match format 4 at 'journal'/],
  ['format 4, a journal head hash not hex', doc({ format: 4, accepted_catalog: null, retention_days: 30, remembered: [], journal: { id: 'j', activity: { seq: 1, hash: 'x' }, sessions: { seq: 0, hash: '0'.repeat(64) } } }), /journal\.activity\.hash/],
  ['format 3 with a journal member', doc({ format: 3, accepted_catalog: null, retention_days: 30, remembered: [], journal: null }), /does not match format 3/],
  ['format 0', doc({ format: 0 }), /at 'format'/],
  ['format 1 with an accepted_catalog member', doc({ accepted_catalog: null }), /does not match format 1/],
  ['format 2, acceptance #0', doc({ format: 2, accepted_catalog: { sequence: 0, digest: 'a'.repeat(64) } }), /accepted_catalog\.sequence/],
  ['format 2, digest not hex', doc({ format: 2, accepted_catalog: { sequence: 1, digest: 'x' } }), /accepted_catalog\.digest/],
  ['unknown member', doc({ extra: true }), /does not match format 1/],
  ['generation 0', doc({ generation: 0 }), /at 'generation'/],
  ['bad timestamp', doc({}, [cred({ created_at: 'yesterday' })]), /credentials\.0\.created_at/],
  ['invalid name', doc({}, [cred({ name: 'Bad Name' })]), /credential #0: a credential name must match/],
  ['unknown kind', doc({}, [cred({ kind: 'ftp' })]), /unknown credential kind/],
  ['missing secret part', doc({}, [cred({ secret: {} })]), /needs the secret part 'token'/],
  ['foreign secret part', doc({}, [cred({ secret: { token: 'dG9r', pin: 'MTIz' } })]), /no secret part 'pin'/],
  ['missing required field', doc({}, [cred({ kind: 'http_basic', secret: { password: 'cA==' } })]), /needs the field 'username'/],
  ['bad base64', doc({}, [cred({ secret: { token: 'not base64!' } })]), /not valid base64/],
  ['non-canonical base64', doc({}, [cred({ secret: { token: 'dG9=' } })]), /not valid base64/],
  ['duplicate name', doc({}, [cred(), cred()]), /duplicate name 'gh'/],
  ['__proto__ key', doc().replace('"fields":{}', '"fields":{"__proto__":{"polluted":"yes"}}'), /member named '__proto__'/],
];

for (const [name, payload, reason] of payloadRows) {
  test(`payload corpus: ${name} → VAULT_CORRUPT`, async () => {
    const file = await sealed(payload);
    await rejectsWith(openVaultBytes(file, pass, { bounds: CHEAP_BOUNDS, deriveKek: kekDeriver('inline') }), 'VAULT_CORRUPT', reason);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });
}

test('payload corpus sanity: the well-formed documents (format 1 and 2) open', async () => {
  const opened = await openVaultBytes(await sealed(doc()), pass, { bounds: CHEAP_BOUNDS, deriveKek: kekDeriver('inline') });
  assert.deepEqual([...opened.contents.credentials.keys()], ['gh']);
  assert.equal(opened.contents.acceptedCatalog, null, 'format 1 has no acceptance mark');
  const mark = { sequence: 4, digest: 'b'.repeat(64) };
  const v2 = await openVaultBytes(await sealed(doc({ format: 2, accepted_catalog: mark })), pass, { bounds: CHEAP_BOUNDS, deriveKek: kekDeriver('inline') });
  assert.deepEqual(v2.contents.acceptedCatalog, mark);
  assert.ok(HEADER_BYTES > 0 && !(opened instanceof PosternError));
});
