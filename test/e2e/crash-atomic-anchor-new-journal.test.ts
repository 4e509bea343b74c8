/**
 * A kill -9 at every file event of `postern anchor new-journal` leaves the
 * home before the command (the old journal in place: the completed key
 * replays) or after it (the new journal, its anchor, its checkpoint and the
 * vault's record of it, the old journal kept aside with the key's entries):
 * either way it opens with its one passphrase and the daemon starts
 * (the harness: test/helpers/crash-harness.ts).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { crashHarness } from '../helpers/crash-harness.js';
import { PASSPHRASE } from '../helpers/daemon.js';
import { readAnchor } from '../../src/journal/anchor/index.js';
import { KILL_AT_FILE_EVENT } from '../../src/vault/file-events.js';

describe('a kill -9 at every file event of a multi-file command', () => {
  const h = crashHarness();
  const anchoredId = (): string => readAnchor(join(h.inst.sb.home, 'journal.anchor'))!.record.journal_id;

  it('postern anchor new-journal: the journal directories, the anchor, the checkpoint and the vault move together', async () => {
    let original = '';
    let switched = 0;
    const events = await h.killAtEveryEvent(
      'anchor new-journal',
      () => {
        original = anchoredId();
        return Promise.resolve();
      },
      () => ['anchor', 'new-journal', '--yes', '--reason', 'crash test', '--passphrase-file', h.inst.passFile],
      [PASSPHRASE],
      async (at) => {
        const home = h.inst.sb.home;
        assert.ok(readdirSync(home).filter((n) => n.startsWith('journal.staged-')).length <= 1, 'at most the one staged journal of the killed run');
        const status = await h.inst.sb.run(['anchor', 'status', '--passphrase-file', h.inst.passFile]);
        assert.equal(status.code, 0, `after a kill at file event ${at}: ${status.stdout}${status.stderr}`);
        if (anchoredId() === original) return;
        switched++;
        const aside = readdirSync(home).filter((n) => n.startsWith('journal.replaced-'));
        assert.equal(aside.length, 1, `after a kill at file event ${at}: the old journal is kept aside (${readdirSync(home).join(', ')})`);
        assert.ok(existsSync(join(home, aside[0]!, 'activity.db')), 'with its activity journal');
        const ev = await h.inst.sb.run(['audit', 'session', '--daemon', '--json']);
        assert.match(ev.stdout, /"journal_started"[^]*crash test/, 'the new journal records why it was started');
      },
      undefined,
      // After the switch the new journal does not know the key (the command says so): it is not replayed there.
      { replays: () => Promise.resolve(anchoredId() === original) },
    );
    assert.ok(events >= 8, `anchor new-journal made ${events} file events`);
    assert.ok(switched >= 2, 'some kills came after the change record was written');
    // A run killed before its change record leaves its staged journal, read by no one; the next run removes it.
    const args = ['anchor', 'new-journal', '--yes', '--passphrase-file', h.inst.passFile];
    const staged = (): string[] => readdirSync(h.inst.sb.home).filter((n) => n.startsWith('journal.staged-'));
    const killed = await h.inst.sb.run(args, { env: { [KILL_AT_FILE_EVENT]: '1' } });
    assert.equal(killed.code, null, 'killed');
    assert.equal(staged().length, 1, 'the killed run left its staged journal');
    const again = await h.inst.sb.run(args);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(staged(), [], 'the next run removed it');
  });
});
