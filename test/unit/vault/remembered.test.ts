// @subject time: how long retired values and minted tokens are remembered (run again a year ahead by .ci/run)
// The values a vault remembers for redaction (FORMAT.md §4, payload format 3):
// a rotate or rm keeps the value it replaces, `remember` keeps a minted
// token until it expires, every mutation prunes what no longer matters, the
// retention is the operator's, and a format-2 payload reads as a vault that
// remembers nothing and keeps retired values the default 30 days.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createVault, openVault, withVaultWriter, type VaultOptions } from '../../../src/vault/index.js';
import { decodePayload, encodePayload } from '../../../src/vault/payload.js';
import { DEFAULT_RETENTION_DAYS } from '../../../src/vault/types.js';
import { ManualClock } from '../../helpers/clock.js';
import { CHEAP, rejectsWith, tempHome, utf8 } from './helpers.js';

const pass = utf8('remembered values');
const DAY = 86_400_000;
const text = (b: Uint8Array | undefined): string => Buffer.from(b ?? new Uint8Array()).toString('utf8');

async function fresh(t: Parameters<typeof tempHome>[0]): Promise<{ vault: string; clock: ManualClock; opts: VaultOptions }> {
  const { vault } = tempHome(t);
  const clock = new ManualClock('2026-03-01T00:00:00.000Z');
  const opts: VaultOptions = { ...CHEAP, clock };
  await createVault(vault, pass, opts);
  await withVaultWriter(vault, pass, (v) => v.add({ name: 'api', kind: 'http_basic', fields: { username: 'ci' }, secret: { password: utf8('CANARY-old-password') } }), opts);
  return { vault, clock, opts };
}

test('a rotated or removed value is remembered, with its fields, across a reopen; the current one is not duplicated', async (t) => {
  const { vault, clock, opts } = await fresh(t);
  clock.advance(1000);
  await withVaultWriter(vault, pass, (v) => v.rotate('api', { password: utf8('CANARY-new-password') }, { username: 'ci2' }), opts);
  const v = await openVault(vault, pass, opts);
  const [r, ...more] = v.remembered();
  assert.equal(more.length, 0);
  assert.deepEqual(r?.meta, { name: 'api', kind: 'http_basic', source: 'retired', since: '2026-03-01T00:00:01.000Z', until: null, fields: { username: 'ci' } });
  assert.equal(text(r?.secret['password']), 'CANARY-old-password');
  assert.equal(text(v.get('api')?.secret['password']), 'CANARY-new-password');
  v.lock();
  await withVaultWriter(vault, pass, (w) => w.remove('api'), opts);
  const after = await openVault(vault, pass, opts);
  assert.deepEqual(after.remembered().map((x) => text(x.secret['password'])), ['CANARY-old-password', 'CANARY-new-password']);
  after.lock();
});

test('a minted token is remembered until it expires; a retired value for the retention; each save prunes', async (t) => {
  const { vault, clock, opts } = await fresh(t);
  await withVaultWriter(vault, pass, (v) => {
    v.remember({ name: 'api', kind: 'http_basic', fields: { username: 'ci' }, secret: { access_token: utf8('CANARY-minted') }, source: 'minted', until: new Date(clock.now().getTime() + 3600_000) });
    v.rotate('api', { password: utf8('CANARY-second') });
  }, opts);
  const names = async (): Promise<string[]> => {
    const v = await openVault(vault, pass, opts);
    const out = v.remembered().map((r) => `${r.meta.source}:${text(r.secret['access_token'] ?? r.secret['password'])}`);
    v.lock();
    return out;
  };
  assert.deepEqual(await names(), ['minted:CANARY-minted', 'retired:CANARY-old-password']);
  clock.advance(3600_000);
  assert.deepEqual(await names(), ['retired:CANARY-old-password'], 'an expired token no longer counts, even before a save prunes it');
  clock.advance(DEFAULT_RETENTION_DAYS * DAY - 3600_000 - 1);
  assert.deepEqual(await names(), ['retired:CANARY-old-password'], 'kept the default 30 days');
  clock.advance(2);
  assert.deepEqual(await names(), []);
  // The next save drops both from the file.
  await withVaultWriter(vault, pass, (v) => v.markUsed('api'), opts);
  const { readFileSync } = await import('node:fs');
  const { openVaultBytes } = await import('../../../src/vault/codec.js');
  const { DEFAULT_KDF_BOUNDS } = await import('../../../src/vault/format.js');
  const { kekDeriver } = await import('../../../src/vault/kdf.js');
  const opened = await openVaultBytes(readFileSync(vault), pass, { bounds: { ...DEFAULT_KDF_BOUNDS, min: { opslimit: 1, memlimit: 8192 } }, deriveKek: kekDeriver('inline') });
  assert.equal(opened.contents.remembered.length, 0, 'pruned from the file');
  opened.dataKey.fill(0);
});

test('the retention is the operator\'s: shortening it prunes, 0 keeps nothing across a save; out of range is refused', async (t) => {
  const { vault, clock, opts } = await fresh(t);
  await withVaultWriter(vault, pass, (v) => v.rotate('api', { password: utf8('CANARY-second') }), opts);
  clock.advance(5 * DAY);
  await withVaultWriter(vault, pass, async (v) => {
    assert.equal(v.retentionDays, 30);
    v.setRetentionDays(10);
    assert.equal(v.remembered().length, 1);
    v.setRetentionDays(4);
    assert.equal(v.remembered().length, 0, 'retired 5 days ago: past a 4-day retention');
    await rejectsWith(() => v.setRetentionDays(-1), 'INPUT_INVALID');
    await rejectsWith(() => v.setRetentionDays(1.5), 'INPUT_INVALID');
    await rejectsWith(() => v.setRetentionDays(100_000), 'INPUT_INVALID');
  }, opts);
  const v = await openVault(vault, pass, opts);
  assert.equal(v.retentionDays, 4);
  v.lock();
});

test('remember validates what it keeps, and copies it', async (t) => {
  const { vault, clock, opts } = await fresh(t);
  await withVaultWriter(vault, pass, async (v) => {
    const ok = { name: 'api', kind: 'http_basic' as const, fields: { username: 'ci' }, secret: { access_token: utf8('CANARY-x') }, source: 'minted' as const, until: null };
    await rejectsWith(() => v.remember({ ...ok, secret: { pin: utf8('1') } }), 'INPUT_INVALID', /no secret part 'pin'/);
    await rejectsWith(() => v.remember({ ...ok, secret: {} }), 'INPUT_INVALID');
    await rejectsWith(() => v.remember({ ...ok, name: 'Bad Name' }), 'INPUT_INVALID');
    await rejectsWith(() => v.remember({ ...ok, fields: {} }), 'INPUT_INVALID', /username/);
    const bytes = utf8('CANARY-copied');
    v.remember({ ...ok, secret: { access_token: bytes } });
    bytes.fill(0);
    assert.equal(text(v.remembered()[0]?.secret['access_token']), 'CANARY-copied');
    v.remember({ ...ok, until: new Date(clock.now().getTime() - 1) });
    assert.equal(v.remembered().length, 1, 'an already expired value is not kept');
  }, opts);
});

test('payload format 2 (no remembered values) still reads, with the default retention; saves write the current format', () => {
  const v2 = { format: 2, generation: 4, created_at: '2025-01-01T00:00:00.000Z', accepted_catalog: null, credentials: [] };
  const c = decodePayload(utf8(JSON.stringify(v2)));
  assert.equal(c.retentionDays, DEFAULT_RETENTION_DAYS);
  assert.deepEqual(c.remembered, []);
  const written = JSON.parse(Buffer.from(encodePayload(c)).toString()) as Record<string, unknown>;
  assert.equal(written['format'], 4);
  assert.deepEqual([written['retention_days'], written['remembered']], [30, []]);
  // A format-2 payload may not carry the new members; a format-3 one must.
  assert.throws(() => decodePayload(utf8(JSON.stringify({ ...v2, remembered: [] }))), /format 2/);
  assert.throws(() => decodePayload(utf8(JSON.stringify({ ...v2, format: 3 }))), /format 3/);
  const bad = { ...v2, format: 3, retention_days: 30, remembered: [{ name: 'x', kind: 'http_bearer', source: 'retired', since: v2.created_at, until: null, fields: {}, secret: { nope: 'AA==' } }] };
  assert.throws(() => decodePayload(utf8(JSON.stringify(bad))), (e: Error) => /remembered #0/.test(e.message) && !e.message.includes('AA=='));
});

test('lock zeroes the remembered values', async (t) => {
  const { vault, opts } = await fresh(t);
  await withVaultWriter(vault, pass, (v) => v.rotate('api', { password: utf8('CANARY-second') }), opts);
  const v = await openVault(vault, pass, opts);
  const held = v.remembered()[0]?.secret['password'];
  assert.ok(held !== undefined && held.some((b) => b !== 0));
  v.lock();
  assert.ok(held.every((b) => b === 0));
});
