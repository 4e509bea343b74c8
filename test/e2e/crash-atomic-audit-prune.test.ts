/**
 * A kill -9 at every file event of `postern audit prune` (each journal
 * commit, each anchor and checkpoint write) leaves a home that opens with
 * its one passphrase, whose daemon starts and replays a completed key, and
 * whose journals verify against their signed checkpoints: the signed prune
 * is the commit point, and a prune killed after it is finished by the next
 * open (journaled as such). The harness: test/helpers/crash-harness.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { crashHarness } from '../helpers/crash-harness.js';
import { PASSPHRASE } from '../helpers/daemon.js';

describe('a kill -9 at every file event of a multi-file command', () => {
  const h = crashHarness();

  it('postern audit prune: the rows, the bases, the anchor and the signed checkpoint move together', async () => {
    let finishedOnOpen = 0;
    let pruned = 0;
    const events = await h.killAtEveryEvent(
      'audit prune',
      () => Promise.resolve(),
      () => ['audit', 'prune', '--before', '0s', '--yes', '--passphrase-file', h.inst.passFile],
      [PASSPHRASE],
      async (at) => {
        const v = await h.inst.sb.run(['audit', 'verify', '--unlock', '--passphrase-file', h.inst.passFile]);
        assert.equal(v.code, 0, `after a kill at file event ${at}: ${v.stdout}${v.stderr}`);
        assert.doesNotMatch(v.stdout, /not finished/, `after a kill at file event ${at}, the daemon's start finished the signed prune`);
        const ev = await h.inst.sb.run(['audit', 'session', '--daemon', '--json']);
        assert.equal(ev.code, 0, ev.stderr);
        const prunes = (JSON.parse(ev.stdout) as { event_type?: string; type?: string; data?: Record<string, unknown> }[]).filter((e) => (e.event_type ?? e.type) === 'journal_pruned');
        assert.ok(prunes.length <= 1, `one prune journaled at most (${prunes.length})`);
        if (prunes.length === 1) pruned++;
        if (prunes.some((e) => typeof e.data?.['finished'] === 'string')) finishedOnOpen++;
        // The prune happened exactly when it was journaled.
        assert.equal(/pruned: starts after seq/.test(v.stdout), prunes.length === 1, `after a kill at file event ${at}: ${v.stdout}`);
      },
    );
    assert.ok(events >= 8, `audit prune made ${events} file events`);
    assert.ok(finishedOnOpen >= 1, 'some kill came after the signed prune and before its rows were gone');
    assert.ok(pruned > finishedOnOpen, 'the completed run pruned by itself');
  });
});
