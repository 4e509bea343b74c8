// Staged adoption, pure half: file digest, acceptance record MAC, the state of
// a home judged against the vault's mark (THREATS 15: a deleted, forged,
// replayed or rolled-back record is an alarm, never a first run), the
// successor rule a running daemon follows, and the history chain.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  acceptanceMac, acceptanceRecord, catalogDigest, judgeAcceptance, judgeSuccessor, verifyAcceptance, verifyHistoryChain,
  type AcceptanceMark, type AnyAcceptanceRecord, type SignedRecord, type StoredRecord,
} from '../../../src/contracts/index.ts';

const key = new Uint8Array(32).fill(7);
const otherKey = new Uint8Array(32).fill(8);
const at = new Date('2026-01-02T03:04:05Z');
const d = (s: string): string => catalogDigest(s);
const A = d('tools: {a: 1}\n');
const B = d('tools: {b: 1}\n');
const C = d('tools: {c: 1}\n');
const rec = (sequence: number, digest: string, previousDigest: string | null) => acceptanceRecord({ sequence, digest, acceptedAt: at, previousDigest, forced: false, changes: 1 });
const signed = (r: AnyAcceptanceRecord, k = key): SignedRecord => ({ record: r, mac: acceptanceMac(k, r) });
const stored = (r: AnyAcceptanceRecord, k = key): StoredRecord => ({ kind: 'stored', ...signed(r, k) });
const legacy: AnyAcceptanceRecord = { format: 'postern.catalog-acceptance/1', digest: A, accepted_at: at.toISOString(), previous_digest: null };
const r1 = rec(1, A, null);
const r2 = rec(2, B, A);
const r3 = rec(3, C, B);
const mark = (sequence: number, digest: string): AcceptanceMark => ({ sequence, digest });

describe('catalog acceptance record', () => {
  it('digest is SHA-256 of the exact bytes', () => {
    const text = 'tools: {}\n';
    assert.equal(d(text), catalogDigest(new TextEncoder().encode(text)));
    assert.notEqual(d(text), catalogDigest('tools: {}\r\n'));
    assert.match(d(text), /^[0-9a-f]{64}$/);
  });

  it('record and MAC: the sequence and every other field are covered', () => {
    assert.deepEqual(r1, { format: 'postern.catalog-acceptance/2', sequence: 1, digest: A, accepted_at: '2026-01-02T03:04:05.000Z', previous_digest: null, forced: false, changes: 1 });
    const mac = acceptanceMac(key, r1);
    assert.deepEqual(verifyAcceptance(key, r1, mac), { kind: 'authentic' });
    assert.deepEqual(verifyAcceptance(otherKey, r1, mac), { kind: 'forged' });
    assert.deepEqual(verifyAcceptance(key, { ...r1, sequence: 9 }, mac), { kind: 'forged' });
    assert.deepEqual(verifyAcceptance(key, { ...r1, digest: B }, mac), { kind: 'forged' });
    assert.deepEqual(verifyAcceptance(key, r1, 'zz'), { kind: 'forged' });
    assert.notEqual(acceptanceMac(key, legacy), acceptanceMac(key, { ...r1, sequence: 0 }), 'formats have their own MAC domain');
  });
});

describe('judgeAcceptance: what the home holds, against the vault', () => {
  const none: StoredRecord = { kind: 'missing' };
  const cases: [string, string | undefined, StoredRecord, AcceptanceMark | null, boolean, string][] = [
    ['no file, nothing ever accepted', undefined, none, null, false, 'no_catalog'],
    ['a first catalog', A, none, null, false, 'unaccepted'],
    ['accepted, file unchanged', A, stored(r1), mark(1, A), true, 'accepted'],
    ['accepted, file removed: the copy is used', undefined, stored(r1), mark(1, A), true, 'accepted'],
    ['accepted, file edited', B, stored(r1), mark(1, A), true, 'pending'],
    ['a legacy (0.1) record in a vault without a mark', A, stored(legacy), null, true, 'accepted'],
    ['record deleted, the vault remembers an acceptance', B, none, mark(2, B), true, 'alarm:record_missing'],
    ['record and history deleted, the vault remembers an acceptance', B, none, mark(2, B), false, 'alarm:record_missing'],
    ['record deleted, history kept (vault from 0.1)', B, none, null, true, 'alarm:record_missing'],
    ['record forged (other key)', A, stored(r1, otherKey), mark(1, A), true, 'alarm:record_forged'],
    ['record malformed', A, { kind: 'malformed', why: 'x' }, null, false, 'alarm:record_forged'],
    ['older record replayed', A, stored(r1), mark(2, B), true, 'alarm:rolled_back'],
    ['legacy record replayed after an acceptance with a sequence', A, stored(legacy), mark(1, B), true, 'alarm:rolled_back'],
    ['same sequence, other catalog (vault and record disagree)', A, stored(rec(2, A, null)), mark(2, B), true, 'alarm:rolled_back'],
    ['record newer than the vault', C, stored(r3), mark(2, B), true, 'alarm:vault_behind'],
    ['record with a sequence, vault without a mark', A, stored(r1), null, true, 'alarm:vault_behind'],
  ];
  for (const [name, file, s, m, history, want] of cases) {
    it(name, () => {
      const st = judgeAcceptance({ fileDigest: file, stored: s, key, mark: m, historyExists: history });
      assert.equal(st.state === 'alarm' ? `alarm:${st.alarm}` : st.state, want);
      if (st.state === 'alarm') assert.doesNotMatch(st.message, /\n/);
    });
  }
});

describe('judgeSuccessor: what a running daemon may adopt', () => {
  const inUse = { sequence: 1, digest: A };
  const cases: [string, StoredRecord, SignedRecord[], string][] = [
    ['the record in use', stored(r1), [], 'same'],
    ['the next acceptance, chained', stored(r2), [], 'adopt'],
    ['two acceptances at once, chained through the history', stored(r3), [signed(r1), signed(r2)], 'adopt'],
    ['a gap the history cannot fill', stored(r3), [signed(r1)], 'refuse'],
    ['a gap filled by a forged history entry', stored(r3), [signed(r1), signed(r2, otherKey)], 'refuse'],
    ['a next acceptance that names another predecessor', stored(rec(2, B, C)), [], 'refuse'],
    ['the record deleted', { kind: 'missing' }, [], 'refuse'],
    ['the record forged', stored(r2, otherKey), [], 'refuse'],
    ['a legacy record put back', stored(legacy), [], 'refuse'],
  ];
  for (const [name, next, history, want] of cases) {
    it(name, () => assert.equal(judgeSuccessor(key, inUse, next, history).kind, want));
  }
  it('an older record while a newer one is in use is refused with a reason naming both sequences', () => {
    const j = judgeSuccessor(key, { sequence: 3, digest: C }, stored(r2), []);
    assert.equal(j.kind, 'refuse');
    assert.match(j.kind === 'refuse' ? j.reason : '', /#2, not newer than #3/);
  });
  it('from nothing accepted, no record yet is no change (a first start raises no alarm)', () => {
    assert.equal(judgeSuccessor(key, { sequence: 0, digest: null }, { kind: 'missing' }, []).kind, 'same');
  });
  it('from nothing accepted, the first acceptance is adopted', () => {
    assert.equal(judgeSuccessor(key, { sequence: 0, digest: null }, stored(r1), []).kind, 'adopt');
  });
});

describe('verifyHistoryChain', () => {
  it('accepts a chain that ends at the vault mark, after legacy lines', () => {
    assert.deepEqual(verifyHistoryChain(key, ['legacy', signed(r1), signed(r2)], mark(2, B)), { ok: true, entries: 2, legacy: 1 });
  });
  const bad: [string, (SignedRecord | 'legacy' | 'malformed')[], AcceptanceMark | null][] = [
    ['a line removed', [signed(r1), signed(r3)], mark(3, C)],
    ['the last lines removed', [signed(r1)], mark(2, B)],
    ['a forged line', [signed(r1), signed(r2, otherKey)], mark(2, B)],
    ['a malformed line', [signed(r1), 'malformed'], mark(1, A)],
    ['a broken link', [signed(r1), signed(rec(2, B, C))], mark(2, B)],
  ];
  for (const [name, lines, m] of bad) it(`refuses ${name}`, () => assert.equal(verifyHistoryChain(key, lines, m).ok, false));
});
