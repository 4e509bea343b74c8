// Staged adoption, pure half: file digest, acceptance record MAC, and the
// decision whether a catalog file may be used (never silently when it changed).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { acceptanceMac, acceptanceRecord, catalogDigest, catalogState, verifyAcceptance } from '../../../src/contracts/index.ts';

describe('catalog acceptance', () => {
  const key = new Uint8Array(32).fill(7);
  const text = 'tools: {}\n';
  const digest = catalogDigest(text);
  const record = acceptanceRecord(digest, new Date('2026-01-02T03:04:05Z'), null);
  const mac = acceptanceMac(key, record);

  it('digest is SHA-256 of the exact bytes', () => {
    assert.equal(digest, catalogDigest(new TextEncoder().encode(text)));
    assert.notEqual(digest, catalogDigest('tools: {}\r\n'));
    assert.match(digest, /^[0-9a-f]{64}$/);
  });

  it('record and MAC', () => {
    assert.deepEqual(record, { format: 'postern.catalog-acceptance/1', digest, accepted_at: '2026-01-02T03:04:05.000Z', previous_digest: null });
    assert.deepEqual(verifyAcceptance(key, record, mac), { kind: 'authentic' });
    assert.deepEqual(verifyAcceptance(new Uint8Array(32).fill(8), record, mac), { kind: 'forged' });
    assert.deepEqual(verifyAcceptance(key, { ...record, digest: catalogDigest('x') }, mac), { kind: 'forged' });
    assert.deepEqual(verifyAcceptance(key, record, 'zz'), { kind: 'forged' });
  });

  const cases: [string, string | undefined, boolean, string][] = [
    ['no file, nothing accepted', undefined, false, 'no_catalog'],
    ['file never accepted', digest, false, 'unaccepted'],
    ['file equals the accepted one', digest, true, 'accepted'],
    ['file changed since acceptance', catalogDigest('tools: { x: {} }\n'), true, 'pending'],
    ['file missing, accepted copy used', undefined, true, 'accepted'],
  ];
  for (const [name, file, accepted, state] of cases) {
    it(name, () => assert.equal(catalogState(file, accepted ? { record, mac, key } : undefined).state, state));
  }
  it('a record with a bad MAC is unauthenticated, whatever the file', () => {
    assert.equal(catalogState(digest, { record, mac: mac.replace(/^./, (c) => (c === '0' ? '1' : '0')), key }).state, 'unauthenticated');
  });
});
