/**
 * anchorVaultGeneration (src/cli/vault-write.ts): the anchor records a vault
 * generation the CLI saved — forward only, only over an anchor that
 * authenticates, never while a daemon holds the home.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { anchorVaultGeneration } from '../../../src/home/vault-write.js';
import { takeDaemonLock } from '../../../src/home/daemon-lock.js';
import { homePaths } from '../../../src/home/paths.js';
import { ANCHOR_FORMAT, readAnchor, sealAnchor, writeAnchor, type AnchorRecord } from '../../../src/journal/anchor/index.js';
import { ManualClock } from '../../helpers/clock.js';

function home(t: { after: (fn: () => void) => void }) {
  const dir = mkdtempSync(join(tmpdir(), 'postern-vw-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const h = join(dir, 'home');
  mkdirSync(h, { mode: 0o700 });
  return homePaths(h);
}

const record = (generation: number): AnchorRecord => ({
  format: ANCHOR_FORMAT,
  journal_id: 'J',
  counter: 3,
  activity: { seq: 2, hash: 'a'.repeat(64) },
  sessions: { seq: 1, hash: 'b'.repeat(64) },
  vault_generation: generation,
  catalog_digest: '0'.repeat(64),
  at: '2026-01-01T00:00:00.000Z',
});

describe('anchorVaultGeneration', () => {
  const clock = new ManualClock('2026-06-01T00:00:00Z');

  it('raises the generation with a new counter and time, and keeps the heads', async (t) => {
    const paths = home(t);
    const key = randomBytes(32);
    writeAnchor(paths.anchor, sealAnchor(key, record(4)), true);
    assert.equal(await anchorVaultGeneration(paths, key, 6, clock), 'recorded');
    const r = readAnchor(paths.anchor, key)?.record;
    assert.equal(r?.vault_generation, 6);
    assert.equal(r?.counter, 4);
    assert.equal(r?.at, '2026-06-01T00:00:00.000Z');
    assert.deepEqual([r?.activity, r?.sessions, r?.journal_id], [record(4).activity, record(4).sessions, 'J']);
  });

  it('never lowers it', async (t) => {
    const paths = home(t);
    const key = randomBytes(32);
    writeAnchor(paths.anchor, sealAnchor(key, record(9)), true);
    const before = readFileSync(paths.anchor);
    assert.equal(await anchorVaultGeneration(paths, key, 9, clock), 'current');
    assert.equal(await anchorVaultGeneration(paths, key, 2, clock), 'current');
    assert.deepEqual(readFileSync(paths.anchor), before);
  });

  it('does not bless an anchor that does not authenticate with the key', async (t) => {
    const paths = home(t);
    writeAnchor(paths.anchor, sealAnchor(randomBytes(32), record(1)), true);
    const before = readFileSync(paths.anchor);
    assert.equal(await anchorVaultGeneration(paths, randomBytes(32), 5, clock), 'not_authentic');
    assert.deepEqual(readFileSync(paths.anchor), before);
  });

  it('creates no anchor in a home that has none', async (t) => {
    const paths = home(t);
    assert.equal(await anchorVaultGeneration(paths, randomBytes(32), 5, clock), 'no_anchor');
    assert.equal(readAnchor(paths.anchor), undefined);
  });

  it('leaves the anchor to a daemon that holds the home', async (t) => {
    const paths = home(t);
    const key = randomBytes(32);
    writeAnchor(paths.anchor, sealAnchor(key, record(1)), true);
    const daemon = await takeDaemonLock(paths);
    try {
      assert.equal(await anchorVaultGeneration(paths, key, 5, clock), 'daemon_running');
    } finally {
      await daemon.release();
    }
    assert.equal(readAnchor(paths.anchor, key)?.record.vault_generation, 1);
  });
});
