// @subject time: archive times (run again a year ahead by .ci/run)
/**
 * The catalog archive (src/home/catalog-store.ts): every accepted text is kept
 * by digest, the one being replaced too (a home from before the archive), and
 * a text is only ever read back when it hashes to the digest asked for.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { acceptanceMac, acceptanceRecord, catalogDigest } from '../../../src/contracts/catalog/acceptance.js';
import { readAcceptedText, stageAcceptance } from '../../../src/home/catalog-store.js';
import { HomeChange } from '../../../src/home/change-record.js';
import type { HomePaths } from '../../../src/home/paths.js';
import type { SignedRecord } from '../../../src/contracts/index.js';
import { homePaths } from '../../../src/home/paths.js';
import { ManualClock } from '../../helpers/clock.js';

async function writeAcceptance(paths: HomePaths, text: string, s: SignedRecord): Promise<void> {
  const change = new HomeChange(paths, 'catalog accept');
  await stageAcceptance(paths, change, text, s);
  await change.commit();
}

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const key = randomBytes(32);
const clock = new ManualClock('2026-03-01T12:00:00Z');
const signed = (sequence: number, text: string, previous: string | null) => {
  const record = acceptanceRecord({ sequence, digest: catalogDigest(text), acceptedAt: clock.now(), previousDigest: previous, forced: false, changes: 1 });
  return { record, mac: acceptanceMac(key, record) };
};

describe('the catalog archive', () => {
  it('keeps every accepted text by digest; an edited archive file is not found', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'postern-archive-'));
    dirs.push(dir);
    const paths = homePaths(dir);
    const first = 'tools: {}\n';
    const second = 'tools: {}\n# second\n';
    const third = 'tools: {}\n# third\n';
    // A home from before the archive: only the accepted copy of the first catalog.
    await writeFile(paths.acceptedCatalog, first, { mode: 0o600 });
    await writeAcceptance(paths, second, signed(2, second, catalogDigest(first)));
    await writeAcceptance(paths, third, signed(3, third, catalogDigest(second)));
    for (const t of [first, second, third]) assert.equal(await readAcceptedText(paths, catalogDigest(t)), t);
    assert.deepEqual((await readdir(paths.catalogArchive)).sort(), [first, second, third].map((t) => `${catalogDigest(t)}.yaml`).sort());
    assert.equal((await stat(paths.catalogArchive)).mode & 0o777, 0o700);
    assert.equal((await stat(join(paths.catalogArchive, `${catalogDigest(first)}.yaml`))).mode & 0o777, 0o600);
    await writeFile(join(paths.catalogArchive, `${catalogDigest(second)}.yaml`), `${second}# edited\n`);
    assert.equal(await readAcceptedText(paths, catalogDigest(second)), undefined);
    assert.equal(await readAcceptedText(paths, '../../etc/passwd'), undefined);
    assert.equal(await readAcceptedText(paths, 'f'.repeat(64)), undefined);
  });

  it('does not archive a replaced copy that is not the predecessor the record names', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'postern-archive-'));
    dirs.push(dir);
    const paths = homePaths(dir);
    const forged = 'tools: {}\n# written by someone else\n';
    const next = 'tools: {}\n# next\n';
    await writeFile(paths.acceptedCatalog, forged, { mode: 0o600 });
    await writeAcceptance(paths, next, signed(2, next, 'a'.repeat(64)));
    assert.deepEqual(await readdir(paths.catalogArchive), [`${catalogDigest(next)}.yaml`]);
  });
});
