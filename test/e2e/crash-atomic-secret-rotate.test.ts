/**
 * A kill -9 at every file event of `postern secret rotate` leaves a home that opens with
 * exactly one passphrase, whose daemon starts and replays a completed key
 * (the harness: test/helpers/crash-harness.ts).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { crashHarness } from '../helpers/crash-harness.js';
import { PASSPHRASE } from '../helpers/daemon.js';

describe('a kill -9 at every file event of a multi-file command', () => {
  const h = crashHarness();

  it('postern secret rotate: the vault and the anchor move together', async () => {
    const events = await h.killAtEveryEvent('secret rotate', () => Promise.resolve(), () => ['secret', 'rotate', 'api-token', '--stdin', '--passphrase-file', h.inst.passFile], [PASSPHRASE], () => undefined, `ROTATED-${randomBytes(8).toString('hex')}`);
    assert.ok(events >= 4, `secret rotate made ${events} file events`);
  });
});
