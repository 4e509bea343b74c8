// @subject time: idle close of pooled connections (run again a year ahead by .ci/run)
/**
 * SshPool against the in-process ssh2 server: connection reuse and keys,
 * idle close, the channel limit, reconnect before exec and never after,
 * host key pinning, timeout, cancellation, close(). Every error a test
 * expects is also checked for the password canary and key material.
 *
 * Commands that must stay running wait for a file (`blocker`), so the tests
 * wait for states, never for durations; timeouts are only hang guards.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isPosternError } from '../../../../src/rules/errors.js';
import type { PosternError } from '../../../../src/rules/errors.js';
import { SshPool } from '../../../../src/executors/ssh/index.js';
import type { SshPoolOptions } from '../../../../src/executors/ssh/index.js';
import type { TestSshServer, TestSshServerOptions } from './support.js';
import { CLIENT_KEY, PASSWORD, action, keyCredential, keyPair, passwordCredential, rejection, startSshServer } from './support.js';
import { pause, waitFor } from '../../../helpers/wait.js';

/** Checks the code, and that nothing shown of the error carries the password or key material. */
function failure(e: unknown, code: PosternError['code']): PosternError {
  assert.ok(isPosternError(e, code), `expected ${code}, got ${String(e)}`);
  const shown = JSON.stringify({ ...e, message: e.message, cause: String(e.cause) });
  assert.ok(!shown.includes(PASSWORD), shown);
  assert.ok(!shown.includes('PRIVATE KEY'), shown);
  return e;
}

/**
 * How long a negative with no event to wait for is given to go wrong: the pool
 * offers no event for "this call is queued", and nothing marks the moment a
 * third exec would have reached the server, so "still two" is checked after
 * this window. It can only miss a broken pool, never fail a working one.
 */
const SETTLE_MS = 100;

describe('ssh pool', () => {
  let srv: TestSshServer;
  let pool: SshPool;
  let dir: string;
  let blockers = 0;

  const setup = async (poolOpts: SshPoolOptions = {}, srvOpts: TestSshServerOptions = {}): Promise<void> => {
    srv = await startSshServer(undefined, srvOpts);
    pool = new SshPool(poolOpts);
  };

  /** A command that runs until `release()`; each one's exec line is unique. */
  const blocker = (): { argv: string[]; line: string; release: () => void } => {
    blockers += 1;
    const flag = join(dir, `go-${blockers}`);
    const argv = ['sh', '-c', 'while [ ! -e "$0" ]; do sleep 0.02; done; echo released', flag];
    return { argv, line: action(srv, argv).command, release: () => writeFileSync(flag, '') };
  };
  const execCount = (line: string): number => srv.execs.filter((c) => c === line).length;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'postern-pool-'));
  });
  afterEach(async () => {
    await pool.close();
    await srv.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('sequential calls share one connection; onExecSent runs once, before the server sees the exec', async () => {
    await setup();
    const notes: number[] = [];
    for (const word of ['one', 'two']) {
      const res = await pool.exec(action(srv, ['echo', word]), passwordCredential(), { onExecSent: () => notes.push(srv.execs.length) });
      assert.equal(res.stdout, `${word}\n`);
      assert.equal(res.exit_code, 0);
      assert.equal(res.host_key_fingerprint, srv.hostKey.fingerprint);
    }
    assert.deepEqual(notes, [0, 1]);
    assert.equal(srv.accepted, 1);
    assert.equal(pool.size, 1);
  });

  it('concurrent first calls share one connection attempt', async () => {
    await setup();
    const results = await Promise.all(['a', 'b', 'c'].map((w) => pool.exec(action(srv, ['echo', w]), keyCredential())));
    assert.deepEqual(
      results.map((r) => r.stdout),
      ['a\n', 'b\n', 'c\n'],
    );
    assert.equal(srv.accepted, 1);
  });

  it('another credential, or a rotated secret, gets its own connection; the old one closes when idle', async () => {
    await setup({ idleMs: 200 });
    await pool.exec(action(srv, ['true']), keyCredential());
    await pool.exec(action(srv, ['true']), passwordCredential());
    assert.equal(srv.accepted, 2);
    // Same name, other secret bytes (the same key with one more newline): a rotation.
    await pool.exec(action(srv, ['true']), keyCredential(`${CLIENT_KEY.private}\n`));
    assert.equal(srv.accepted, 3);
    await waitFor(() => pool.size === 0 && srv.openConnections === 0, 'idle close');
  });

  it('a live connection spares only the re-check of its own bytes: other bytes under the same name are checked in full (SECRET_INVALID, nothing sent)', async () => {
    await setup();
    await pool.exec(action(srv, ['true']), keyCredential());
    const before = srv.execs.length;
    const broken = keyCredential('-----BEGIN OPENSSH PRIVATE KEY-----\nbm90IGEga2V5\n-----END OPENSSH PRIVATE KEY-----\n');
    const e = failure(await rejection(pool.exec(action(srv, ['true']), broken)), 'SECRET_INVALID');
    assert.equal(e.sideEffectStarted, false);
    assert.equal(srv.execs.length, before);
    // The live connection still serves the credential it was opened with.
    assert.equal((await pool.exec(action(srv, ['echo', 'ok']), keyCredential())).stdout, 'ok\n');
    assert.equal(srv.accepted, 1);
  });

  it('retire (rotate, rm): idle connections of that credential end now; a busy one finishes its command, takes no new call, then ends', async () => {
    await setup({ idleMs: 60_000 });
    await pool.exec(action(srv, ['true']), keyCredential());
    await pool.exec(action(srv, ['true']), passwordCredential());
    assert.equal(srv.openConnections, 2);
    assert.equal(pool.retire('deploy-key'), 1);
    await waitFor(() => srv.openConnections === 1 && pool.size === 1, 'the retired idle connection ends');

    const job = blocker();
    const running = pool.exec(action(srv, job.argv), passwordCredential(), { timeoutMs: 30_000 });
    await waitFor(() => execCount(job.line) === 1, 'the command runs');
    assert.equal(pool.retire('deploy-pw'), 1);
    assert.equal(pool.size, 0, 'out of the pool at once');
    // A call after the retirement opens a new connection, even with the same bytes.
    const after = await pool.exec(action(srv, ['echo', 'fresh']), passwordCredential());
    assert.equal(after.stdout, 'fresh\n');
    assert.equal(srv.accepted, 3);
    assert.equal(srv.openConnections, 2, 'the busy one is still open for its command');
    job.release();
    const res = await running;
    assert.equal(res.stdout, 'released\n', 'the running command finished with the secret it started with');
    await waitFor(() => srv.openConnections === 1, 'the retired connection ends once its command is done');
    assert.equal(pool.retire('unknown'), 0);
  });

  it('idle close ends the connection; the next call reconnects', async () => {
    await setup({ idleMs: 100 });
    await pool.exec(action(srv, ['true']), passwordCredential());
    await waitFor(() => pool.size === 0 && srv.openConnections === 0, 'idle close');
    const res = await pool.exec(action(srv, ['echo', 'again']), passwordCredential());
    assert.equal(res.stdout, 'again\n');
    assert.equal(srv.accepted, 2);
  });

  it('channel limit: 4 calls on 2 channels, the others wait their turn', async () => {
    await setup({ maxChannelsPerConnection: 2 });
    const jobs = [blocker(), blocker(), blocker(), blocker()];
    const calls = jobs.map((j) => pool.exec(action(srv, j.argv), passwordCredential(), { timeoutMs: 30_000 }));
    await waitFor(() => srv.execs.length === 2, 'two running commands');
    // Two run; the two others must still be queued on the client side (a negative: see SETTLE_MS).
    await pause(SETTLE_MS);
    assert.equal(srv.execs.length, 2);
    for (const j of jobs) j.release();
    const results = await Promise.all(calls);
    assert.ok(results.every((r) => r.exit_code === 0 && r.stdout === 'released\n'));
    assert.equal(srv.execs.length, 4);
    assert.equal(srv.peakExecsPerConnection, 2);
    assert.equal(srv.accepted, 1);
  });

  it('connection dropped between calls: the next call reconnects and runs once', async () => {
    await setup();
    await pool.exec(action(srv, ['true']), passwordCredential());
    srv.dropConnections();
    const a = action(srv, ['echo', 'after-drop']);
    const res = await pool.exec(a, passwordCredential());
    assert.equal(res.stdout, 'after-drop\n');
    assert.equal(execCount(a.command), 1);
    assert.equal(srv.accepted, 2);
  });

  it('connection lost at the channel request: tried once more on a fresh connection, runs once', async () => {
    await setup();
    await pool.exec(action(srv, ['true']), passwordCredential());
    srv.dropAtNextSessions(1);
    let notified = 0;
    const a = action(srv, ['echo', 'retried']);
    const res = await pool.exec(a, passwordCredential(), { onExecSent: () => (notified += 1) });
    assert.equal(res.stdout, 'retried\n');
    assert.equal(execCount(a.command), 1);
    assert.equal(notified, 1);
    assert.equal(srv.accepted, 2);
  });

  it('lost again on the retry: TARGET_ERROR, nothing sent, nothing ran', async () => {
    await setup();
    await pool.exec(action(srv, ['true']), passwordCredential());
    srv.dropAtNextSessions(2);
    let notified = 0;
    const a = action(srv, ['echo', 'never']);
    const e = failure(await rejection(pool.exec(a, passwordCredential(), { onExecSent: () => (notified += 1) })), 'TARGET_ERROR');
    assert.equal(e.sideEffectStarted, false);
    assert.equal(notified, 0);
    assert.equal(execCount(a.command), 0);
  });

  it('connection dropped while the command runs: TARGET_ERROR, side effect started, never re-run', async () => {
    await setup();
    const job = blocker();
    const call = rejection(pool.exec(action(srv, job.argv), passwordCredential(), { timeoutMs: 30_000 }));
    await waitFor(() => execCount(job.line) === 1, 'the command to start');
    srv.dropConnections();
    const e = failure(await call, 'TARGET_ERROR');
    assert.equal(e.sideEffectStarted, true);
    assert.equal(e.details.reason, 'connection_closed');
    job.release();
    assert.equal(execCount(job.line), 1);
    const res = await pool.exec(action(srv, ['echo', 'next']), passwordCredential());
    assert.equal(res.stdout, 'next\n');
  });

  it('changed host key → HOST_KEY_MISMATCH with both fingerprints; no exec, nothing kept', async () => {
    await setup();
    const pinned = keyPair().fingerprint;
    const e = failure(await rejection(pool.exec(action(srv, ['touch', join(dir, 'nope')], pinned), passwordCredential())), 'HOST_KEY_MISMATCH');
    assert.equal(e.sideEffectStarted, false);
    assert.equal(e.details.pinned_fingerprint, pinned);
    assert.equal(e.details.offered_fingerprint, srv.hostKey.fingerprint);
    assert.equal(srv.execs.length, 0);
    assert.equal(srv.authFailures, 0);
    assert.equal(pool.size, 0);
  });

  it('auth failure → TARGET_ERROR auth_failed, nothing kept; the right secret then works', async () => {
    await setup();
    const wrong = passwordCredential(`${PASSWORD}-old`);
    const calls = [1, 2].map(() => rejection(pool.exec(action(srv, ['echo', 'x']), wrong)));
    for (const e of await Promise.all(calls)) {
      const err = failure(e, 'TARGET_ERROR');
      assert.equal(err.details.reason, 'auth_failed');
      assert.equal(err.sideEffectStarted, false);
    }
    assert.equal(srv.accepted, 1);
    assert.equal(pool.size, 0);
    const e2 = failure(await rejection(pool.exec(action(srv, ['true']), keyCredential(keyPair().private))), 'TARGET_ERROR');
    assert.equal(e2.details.reason, 'auth_failed');
    assert.equal((await pool.exec(action(srv, ['echo', 'ok']), passwordCredential())).stdout, 'ok\n');
    assert.equal(srv.execs.length, 1);
  });

  it('server refuses the channel → TARGET_ERROR channel_refused, exec never sent', async () => {
    await setup({ maxChannelsPerConnection: 2 }, { maxSessions: 1 });
    const job = blocker();
    const running = pool.exec(action(srv, job.argv), passwordCredential(), { timeoutMs: 30_000 });
    await waitFor(() => execCount(job.line) === 1, 'the command to start');
    let notified = 0;
    const e = failure(await rejection(pool.exec(action(srv, ['echo', 'x']), passwordCredential(), { onExecSent: () => (notified += 1) })), 'TARGET_ERROR');
    assert.equal(e.details.reason, 'channel_refused');
    assert.equal(e.sideEffectStarted, false);
    assert.equal(notified, 0);
    job.release();
    assert.equal((await running).exit_code, 0);
  });

  it('timeout after exec: TERM, TARGET_TIMEOUT; the connection keeps serving', async () => {
    await setup();
    await pool.exec(action(srv, ['true']), passwordCredential());
    const e = failure(await rejection(pool.exec(action(srv, ['sleep', '30']), passwordCredential(), { timeoutMs: 1500 })), 'TARGET_TIMEOUT');
    assert.equal(e.sideEffectStarted, true);
    assert.equal(e.details.phase, 'command');
    await waitFor(() => srv.signals.includes('TERM'), 'TERM at the server');
    const res = await pool.exec(action(srv, ['echo', 'still']), passwordCredential());
    assert.equal(res.stdout, 'still\n');
    assert.equal(srv.accepted, 1);
  });

  it('timeout while queued: TARGET_TIMEOUT in phase queue, nothing sent', async () => {
    await setup({ maxChannelsPerConnection: 1 });
    const job = blocker();
    const running = pool.exec(action(srv, job.argv), passwordCredential(), { timeoutMs: 30_000 });
    await waitFor(() => execCount(job.line) === 1, 'the command to start');
    const a = action(srv, ['echo', 'queued']);
    const e = failure(await rejection(pool.exec(a, passwordCredential(), { timeoutMs: 300 })), 'TARGET_TIMEOUT');
    assert.equal(e.sideEffectStarted, false);
    assert.equal(e.details.phase, 'queue');
    job.release();
    await running;
    assert.equal(execCount(a.command), 0);
  });

  it('abort before exec → CALL_CANCELLED, nothing sent (already aborted, or while queued)', async () => {
    await setup({ maxChannelsPerConnection: 1 });
    const e1 = failure(await rejection(pool.exec(action(srv, ['echo', 'x']), passwordCredential(), { signal: AbortSignal.abort() })), 'CALL_CANCELLED');
    assert.equal(e1.sideEffectStarted, false);
    assert.equal(srv.accepted, 0);

    const job = blocker();
    const running = pool.exec(action(srv, job.argv), passwordCredential(), { timeoutMs: 30_000 });
    await waitFor(() => execCount(job.line) === 1, 'the command to start');
    const ctl = new AbortController();
    const a = action(srv, ['echo', 'cancelled']);
    const queued = rejection(pool.exec(a, passwordCredential(), { signal: ctl.signal }));
    ctl.abort();
    const e2 = failure(await queued, 'CALL_CANCELLED');
    assert.equal(e2.sideEffectStarted, false);
    assert.equal(e2.details.phase, 'queue');
    job.release();
    await running;
    assert.equal(execCount(a.command), 0);
  });

  it('abort after exec → TERM, CALL_CANCELLED with side effect started; the connection keeps serving', async () => {
    await setup();
    const ctl = new AbortController();
    const a = action(srv, ['sleep', '30']);
    const call = rejection(pool.exec(a, passwordCredential(), { signal: ctl.signal }));
    await waitFor(() => execCount(a.command) === 1, 'the command to start');
    ctl.abort();
    const e = failure(await call, 'CALL_CANCELLED');
    assert.equal(e.sideEffectStarted, true);
    assert.equal(e.details.phase, 'command');
    await waitFor(() => srv.signals.includes('TERM'), 'TERM at the server');
    assert.equal((await pool.exec(action(srv, ['echo', 'on']), passwordCredential())).stdout, 'on\n');
    assert.equal(srv.accepted, 1);
  });

  it('close() fails running and waiting calls, ends the connections; later calls reconnect', async () => {
    await setup({ maxChannelsPerConnection: 1 });
    const job = blocker();
    const running = rejection(pool.exec(action(srv, job.argv), passwordCredential(), { timeoutMs: 30_000 }));
    await waitFor(() => execCount(job.line) === 1, 'the command to start');
    const waiting = rejection(pool.exec(action(srv, ['echo', 'waiting']), passwordCredential()));
    await pool.close();
    const e1 = failure(await running, 'TARGET_ERROR');
    assert.equal(e1.sideEffectStarted, true);
    assert.equal(e1.details.reason, 'pool_closed');
    const e2 = failure(await waiting, 'TARGET_ERROR');
    assert.equal(e2.sideEffectStarted, false);
    assert.equal(e2.details.reason, 'pool_closed');
    assert.equal(pool.size, 0);
    await waitFor(() => srv.openConnections === 0, 'the server to see the close');
    assert.equal(execCount(action(srv, ['echo', 'waiting']).command), 0);
    assert.equal((await pool.exec(action(srv, ['echo', 'later']), passwordCredential())).stdout, 'later\n');
  });

  it('bad options are refused before connecting', async () => {
    await setup();
    failure(await rejection(pool.exec(action(srv, ['true']), passwordCredential(), { timeoutMs: 0 })), 'INPUT_INVALID');
    failure(await rejection(pool.exec(action(srv, ['true']), null)), 'CREDENTIAL_MISSING');
    assert.throws(() => new SshPool({ maxChannelsPerConnection: 0 }), (e) => isPosternError(e, 'INPUT_INVALID'));
    assert.equal(srv.accepted, 0);
  });
});
