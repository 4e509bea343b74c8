/**
 * A gap outlives the journal it was journaled in (docs/audit.md, "Restoring
 * an older journal"): the record of a restore's gap lived in the journal a
 * second restore replaces, so it is kept in the vault and carried into each
 * new journal. Through the built CLI and a real daemon, agents over stdio and
 * the HTTP listener, a loopback target logging every Idempotency-Key:
 * restore → restore, restore → release a key → restore (that key stays
 * released, the others held), restore → new journal → restore.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Home } from '../helpers/restore-home.js';

const k = (name: string): string => `${name}-${randomBytes(6).toString('hex')}`;

describe('a gap outlives the journal it was journaled in', () => {
  const home = new Home();
  let backup = '';
  const gap = [k('gap-a'), k('gap-b'), k('gap-c')];
  before(async () => {
    await home.setUp();
    backup = home.backup();
    await home.runKeys(gap);
  });
  after(() => home.tearDown());

  it('restore → restore: the first gap\'s keys stay refused', async () => {
    await home.restore(backup);
    await home.refused(gap);
    const out = await home.restore(backup);
    await home.refused(gap);
    for (const key of gap) assert.equal(home.hits(key), 1);
    for (const key of gap) assert.match(out, new RegExp(`quick_write ${key}`), 'the second restore names the keys it still holds');
  });

  it('restore → release a key → restore: the released key stays released, the others refused', async () => {
    await home.release(gap[0]!);
    await home.restore(backup);
    await home.refused(gap.slice(1));
    await home.withDaemon(async (stdio) => assert.equal((await home.call(stdio, gap[0]!)).isError, undefined));
    assert.equal(home.hits(gap[0]!), 2, 'the operator released it, so it runs');
  });

  it('restore → new journal → restore: the held keys stay refused in the new journal and after its own restore', async () => {
    const r = await home.inst.sb.run(['anchor', 'new-journal', '--yes', ...home.pass()]);
    assert.equal(r.code, 0, r.stderr);
    await home.refused(gap.slice(1));
    const n1 = k('new-1');
    await home.runKeys([n1]);
    const second = home.backup();
    const n2 = k('new-2');
    await home.runKeys([n2]);
    await home.restore(second);
    await home.refused([...gap.slice(1), n2]);
    for (const key of [...gap.slice(1), n2]) assert.equal(home.hits(key), 1);
    await home.withDaemon(async (stdio) => assert.equal((await home.call(stdio, n1)).structuredContent?.['replayed'], true));
  });
});
