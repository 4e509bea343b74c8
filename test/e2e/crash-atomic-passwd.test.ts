/**
 * A kill -9 at every file event of `postern passwd` leaves a home that opens with
 * exactly one passphrase, whose daemon starts and replays a completed key
 * (the harness: test/helpers/crash-harness.ts).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { crashHarness, NEW_PASSPHRASE } from '../helpers/crash-harness.js';
import { PASSPHRASE } from '../helpers/daemon.js';

describe('a kill -9 at every file event of a multi-file command', () => {
  const h = crashHarness();

  it('postern passwd: the home is keyed by the old passphrase or the new one, never a mix', async () => {
    const newFile = await h.inst.sb.file('new-pass', `${NEW_PASSPHRASE}\n`);
    const seen = new Set<string>();
    const events = await h.killAtEveryEvent('passwd', () => Promise.resolve(), () => ['passwd', '--passphrase-file', h.inst.passFile, '--new-passphrase-file', newFile], [NEW_PASSPHRASE, PASSPHRASE], (_at, working) => seen.add(working));
    assert.ok(events >= 8, `passwd made ${events} file events`);
    assert.deepEqual([...seen].sort(), [NEW_PASSPHRASE, PASSPHRASE].sort(), 'some kills land before the change record, some after');
  });
});
