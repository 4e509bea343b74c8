/**
 * A kill -9 at every file event of `postern anchor restore-journal` leaves
 * the home before the restore or after it (the backup's journal in place
 * with its `journal_restored` entry, a new anchor and signed checkpoint, the
 * vault's record of it, the replaced journal kept aside): either way one
 * passphrase opens it, the daemon starts and the completed key, which the
 * backup holds, replays its stored result (the harness:
 * test/helpers/crash-harness.ts).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cp, rm } from 'node:fs/promises';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { crashHarness } from '../helpers/crash-harness.js';
import { PASSPHRASE } from '../helpers/daemon.js';

describe('a kill -9 at every file event of a multi-file command', () => {
  const h = crashHarness();

  it('postern anchor restore-journal: the journal directories, the anchor, the checkpoint and the vault move together', async () => {
    const backup = (): string => join(h.inst.sb.dir, 'journal-backup');
    let restored = 0;
    const events = await h.killAtEveryEvent(
      'anchor restore-journal',
      async () => {
        await rm(backup(), { recursive: true, force: true });
        await cp(join(h.inst.sb.home, 'journal'), backup(), { recursive: true });
      },
      () => ['anchor', 'restore-journal', backup(), '--yes', '--passphrase-file', h.inst.passFile],
      [PASSPHRASE],
      async (at) => {
        const status = await h.inst.sb.run(['anchor', 'status', '--passphrase-file', h.inst.passFile]);
        assert.equal(status.code, 0, `after a kill at file event ${at}: ${status.stdout}${status.stderr}`);
        const ev = await h.inst.sb.run(['audit', 'session', '--daemon', '--json']);
        const n = (JSON.parse(ev.stdout) as { type: string }[]).filter((e) => e.type === 'journal_restored').length;
        assert.ok(n <= 1);
        if (n === 1) {
          restored++;
          assert.equal(readdirSync(h.inst.sb.home).filter((f) => f.startsWith('journal.replaced-')).length, 1, 'the replaced journal is kept aside');
        }
      },
    );
    assert.ok(events >= 8, `anchor restore-journal made ${events} file events`);
    assert.ok(restored >= 2, 'some kills came after the change record was written');
  });
});
