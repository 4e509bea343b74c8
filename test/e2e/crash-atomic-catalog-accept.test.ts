/**
 * A kill -9 at every file event of `postern catalog accept` leaves a home that opens with
 * exactly one passphrase, whose daemon starts and replays a completed key
 * (the harness: test/helpers/crash-harness.ts).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { crashHarness, catalogFor } from '../helpers/crash-harness.js';
import { PASSPHRASE } from '../helpers/daemon.js';

describe('a kill -9 at every file event of a multi-file command', () => {
  const h = crashHarness();

  it('postern catalog accept: the vault mark, copy, record, history and archive move together', async () => {
    const text = stringify(catalogFor(h.http.origin, true));
    const digest = createHash('sha256').update(text).digest('hex');
    const events = await h.killAtEveryEvent(
      'catalog accept',
      () => writeFile(join(h.inst.sb.home, 'catalog.yaml'), text, { mode: 0o600 }),
      () => ['catalog', 'accept', '--digest', digest, '--passphrase-file', h.inst.passFile],
      [PASSPHRASE],
      () => undefined,
    );
    assert.ok(events >= 8, `catalog accept made ${events} file events`);
  });
});
