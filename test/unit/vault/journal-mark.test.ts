// The journal a vault records (FORMAT.md §4, payload format 4, `journal`):
// another journal is saved at once, the same journal's later heads ride
// along with the next save (given by the writer's `journalMark`) and never
// move back; a format-3 payload reads as a vault that recorded no journal,
// with its remembered values intact.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createVault, openVault, withVaultWriter, type JournalMark, type VaultOptions } from '../../../src/vault/index.js';
import { decodePayload, encodePayload } from '../../../src/vault/payload.js';
import { CHEAP, tempHome, utf8 } from './helpers.js';

const pass = utf8('journal mark');
const head = (seq: number, c: string) => ({ seq, hash: c.repeat(64) });
const mark = (id: string, a: number, s: number): JournalMark => ({ id, activity: head(a, 'a'), sessions: head(s, 'b') });

test('another journal is saved at once; later heads of the same journal ride along with the next save, never back', async (t) => {
  const { vault } = tempHome(t);
  const opts: VaultOptions = { ...CHEAP };
  await createVault(vault, pass, opts);
  assert.equal((await openVault(vault, pass, opts)).journal, null, 'a new vault records no journal');
  await withVaultWriter(vault, pass, (v) => v.recordJournal(mark('J1', 2, 1)), opts);
  const g = (await openVault(vault, pass, opts)).generation;
  assert.deepEqual((await openVault(vault, pass, opts)).journal, mark('J1', 2, 1));
  // The same journal further on is not a change by itself...
  await withVaultWriter(vault, pass, (v) => v.recordJournal(mark('J1', 9, 3)), opts);
  assert.equal((await openVault(vault, pass, opts)).generation, g, 'no save for heads alone');
  // ...it is written by the next save, from the writer's journalMark.
  await withVaultWriter(vault, pass, (v) => v.setRetentionDays(7), { ...opts, journalMark: () => mark('J1', 9, 3) });
  assert.deepEqual((await openVault(vault, pass, opts)).journal, mark('J1', 9, 3));
  await withVaultWriter(vault, pass, (v) => v.setRetentionDays(8), { ...opts, journalMark: () => mark('J1', 4, 3) });
  assert.deepEqual((await openVault(vault, pass, opts)).journal, mark('J1', 9, 3), 'never back');
  await withVaultWriter(vault, pass, (v) => v.recordJournal(mark('J2', 0, 1)), opts);
  assert.deepEqual((await openVault(vault, pass, opts)).journal, mark('J2', 0, 1));
});

test('payload format 3 reads as no journal recorded, its remembered values kept; saves write format 4 with the journal', () => {
  const v3 = {
    format: 3,
    generation: 4,
    created_at: '2025-01-01T00:00:00.000Z',
    accepted_catalog: null,
    retention_days: 12,
    remembered: [{ name: 'x', kind: 'http_bearer', source: 'retired', since: '2025-01-02T00:00:00.000Z', until: null, fields: {}, secret: { token: 'AA==' } }],
    credentials: [],
  };
  const c = decodePayload(utf8(JSON.stringify(v3)));
  assert.equal(c.journal, null);
  assert.equal(c.retentionDays, 12);
  assert.equal(c.remembered.length, 1);
  const written = JSON.parse(Buffer.from(encodePayload({ ...c, journal: mark('J', 3, 2) })).toString()) as Record<string, unknown>;
  assert.equal(written['format'], 4);
  assert.deepEqual(written['journal'], mark('J', 3, 2));
  assert.deepEqual(decodePayload(utf8(JSON.stringify(written))).journal, mark('J', 3, 2));
});

test('journal_gap: a new vault records none, a recorded gap survives every later save, a vault saved before it was kept reads as never recorded', async (t) => {
  const { vault } = tempHome(t);
  const opts: VaultOptions = { ...CHEAP };
  await createVault(vault, pass, opts);
  assert.equal((await openVault(vault, pass, opts)).journalGap, null, 'a new vault: no gap held');
  const gap = { held: [{ tool: 'quick_write', key: 'k-1' }], released: [], unread: false };
  await withVaultWriter(vault, pass, (v) => v.recordJournalGap(gap), opts);
  assert.deepEqual((await openVault(vault, pass, opts)).journalGap, gap);
  await withVaultWriter(vault, pass, (v) => v.setRetentionDays(9), opts);
  assert.deepEqual((await openVault(vault, pass, opts)).journalGap, gap, 'carried by an unrelated save');
  const legacy = decodePayload(utf8(JSON.stringify({ format: 4, generation: 2, created_at: '2025-01-01T00:00:00.000Z', accepted_catalog: null, journal: null, retention_days: 30, remembered: [], credentials: [] })));
  assert.equal(legacy.journalGap, undefined, 'never recorded');
  assert.equal('journal_gap' in (JSON.parse(Buffer.from(encodePayload(legacy)).toString()) as object), false, 'and still not, until a restore records it');
  assert.throws(() => decodePayload(utf8(JSON.stringify({ format: 4, generation: 2, created_at: '2025-01-01T00:00:00.000Z', accepted_catalog: null, journal: null, journal_gap: { held: [{ tool: '', key: 'x' }], released: [], unread: false }, retention_days: 30, remembered: [], credentials: [] }))), /VAULT_CORRUPT|journal_gap/);
});
