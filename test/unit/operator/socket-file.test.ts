/**
 * THREATS row 12 (local access): the operator socket is 0600 in a private
 * directory, never created over a symlink, a foreign file or a live daemon;
 * a stale socket is replaced; close removes only our own socket.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, lstatSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startOperatorServer } from '../../../src/daemon/operator/index.js';
import { connectOperator } from '../../../src/protocol/operator/connect.js';
import { ApprovalQueue } from '../../../src/approvals/queue.js';
import { rejectsWith, startHarness, tempRun } from './helpers.js';
import { systemClock } from '../../../src/clock/index.js';
import { createBackend } from '../../../src/daemon/operator/backend.js';
import { EventBus } from '../../../src/daemon/services/events.js';
import { GrantStore } from '../../../src/approvals/grants.js';

const base = (socketPath: string) => {
  const queue = new ApprovalQueue(systemClock);
  const backend = createBackend({
    queue,
    grants: new GrantStore(),
    journals: null,
    operatorName: 'operator-cli',
    live: new Map(),
    status: () => ({ pid: 1, locked: false, lock_reason: null, started_at: 'x', catalog: { digest: 'd', sequence: 0, accepted_at: null, tools: 0 }, catalog_pending: false, approval_timeout_seconds: 1, vault_kdf: { opslimit: 3, memlimit: 268435456, below_floor: false } }),
    catalogPending: () => null,
    lock: () => undefined,
  });
  return { socketPath, key: () => new Uint8Array(32).fill(7), backend, bus: new EventBus(systemClock) };
};

/** Leaves a socket file nobody listens on, as a crashed daemon would. */
function staleSocket(path: string): void {
  const r = spawnSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(path)}, () => process.exit(0))`]);
  assert.equal(r.status, 0);
  assert.ok(lstatSync(path).isSocket());
}

describe('operator socket file', () => {
  it('is created 0600 even under a permissive umask', async (t) => {
    const old = process.umask(0);
    try {
      const h = await startHarness(t);
      assert.equal(lstatSync(h.socket).mode & 0o777, 0o600);
    } finally {
      process.umask(old);
    }
  });

  it('refuses a symlink planted at the socket path and leaves its target alone', async (t) => {
    const { dir, socket } = tempRun(t);
    const target = join(dir, 'target');
    writeFileSync(target, 'keep me');
    symlinkSync(target, socket);
    await rejectsWith(startOperatorServer(base(socket)), 'HOME_UNSAFE', /symbolic link/);
    assert.ok(lstatSync(socket).isSymbolicLink());
    assert.equal(readFileSync(target, 'utf8'), 'keep me');
  });

  it('refuses a regular file, a foreign owner and an unsafe directory', async (t) => {
    const { socket, runDir } = tempRun(t);
    writeFileSync(socket, 'not a socket');
    await rejectsWith(startOperatorServer(base(socket)), 'HOME_UNSAFE', /not a socket/);
    if (process.getuid?.() === 0) {
      chownSync(socket, 65534, 65534);
      await rejectsWith(startOperatorServer(base(socket)), 'HOME_UNSAFE', /owned by uid 65534/);
    }
    chmodSync(runDir, 0o755);
    await rejectsWith(startOperatorServer(base(socket)), 'HOME_UNSAFE', /mode 755/);
  });

  it('refuses to start over a live daemon, and replaces a stale socket', async (t) => {
    const h = await startHarness(t);
    await rejectsWith(startOperatorServer(base(h.socket)), 'DAEMON_RUNNING');
    const c = await connectOperator(h.socket, h.key);
    assert.equal((await c.request('approvals.list', {})).length, 0, 'the live daemon still serves');
    c.close();

    const { socket } = tempRun(t);
    staleSocket(socket);
    await rejectsWith(connectOperator(socket, new Uint8Array(32)), 'DAEMON_UNAVAILABLE');
    const h2 = await startHarness(t, { socket });
    const c2 = await connectOperator(socket, h2.key);
    assert.equal((await c2.request('approvals.list', {})).length, 0);
    c2.close();
  });

  it('close removes our socket but not a file that replaced it', async (t) => {
    const { dir, socket } = tempRun(t);
    const h = await startHarness(t, { socket });
    await h.close();
    assert.equal(existsSync(socket), false);

    const h2 = await startHarness(t, { socket });
    renameSync(socket, join(dir, 'moved.sock'));
    staleSocket(socket); // someone else's socket now sits at the path
    const ino = lstatSync(socket).ino;
    await h2.close();
    assert.equal(lstatSync(socket).ino, ino);
  });
});
