/**
 * The lock state on the operator channel: the daemon announces its unlock
 * (`daemon.unlocked`, at start, when the passphrase opened the vault) as the
 * counterpart of `daemon.locked`, so an operator client that attaches — now,
 * or later replaying with `since` — follows the lock state from events alone.
 * The real daemon, the real authenticated operator socket.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { OperatorEventEnvelope } from '../../src/protocol/operator/index.js';
import { install, type Installation } from '../helpers/daemon.js';

describe('daemon lock events', () => {
  let inst: Installation;

  before(async () => {
    inst = await install({ secrets: [] });
    await inst.startDaemon();
  });
  after(() => inst.cleanup());

  it('an attached operator sees daemon.unlocked (replayed from the start) before daemon.locked', async () => {
    const op = await inst.operator();
    const events: OperatorEventEnvelope[] = [];
    let wake: () => void = () => undefined;
    const locked = new Promise<void>((resolve) => (wake = resolve));
    const snap = await op.subscribe(
      (env) => {
        events.push(env);
        if (env.event.type === 'daemon.locked') wake();
      },
      { since: 0 },
    );
    assert.equal(snap.status.locked, false);
    assert.equal(snap.gap, false);
    await op.request('lock', {});
    await locked;
    const types = events.map((e) => e.event.type);
    const unlockedAt = types.indexOf('daemon.unlocked');
    assert.ok(unlockedAt !== -1, `no daemon.unlocked among ${types.join(', ')}`);
    assert.equal(types.filter((t) => t === 'daemon.unlocked').length, 1, 'announced once');
    assert.ok(unlockedAt < types.indexOf('daemon.locked'), types.join(', '));
    assert.ok(events[unlockedAt]!.seq <= snap.last_seq, 'it happened before this client attached: replayed');
    op.close();
  });
});
