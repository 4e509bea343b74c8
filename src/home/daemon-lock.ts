/**
 * One daemon per home: the lock file in the home's private run directory
 * (0700, ours), taken by the daemon for its lifetime and by the operator
 * commands that must not run beside it. A held lock is DAEMON_RUNNING.
 */
import { chmod, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { PosternError, isPosternError } from '../rules/errors.js';
import { acquireWriterLock, type WriterLock } from '../vault/writer-lock.js';
import { assertPrivateDir } from './permissions.js';
import type { HomePaths } from './paths.js';

/** Creates the run directory 0700 if needed, then insists it is ours and private. */
export async function ensureRunDir(dir: string): Promise<void> {
  const created = await mkdir(dir, { recursive: true, mode: 0o700 });
  if (created !== undefined) await chmod(dir, 0o700);
  await assertPrivateDir(dir);
}

/**
 * One daemon per home: the lock file in the private run directory. Taken by
 * the daemon for its lifetime, and by the operator commands that must not
 * run beside it. A held lock is DAEMON_RUNNING.
 */
export async function takeDaemonLock(paths: HomePaths): Promise<WriterLock> {
  await assertPrivateDir(paths.home);
  await ensureRunDir(paths.runDir);
  try {
    return await acquireWriterLock(join(paths.runDir, 'daemon'));
  } catch (e) {
    if (isPosternError(e, 'VAULT_BUSY')) throw new PosternError('DAEMON_RUNNING', `a daemon is running for ${paths.home}: stop it first`);
    throw e;
  }
}

/** Refuses early (DAEMON_RUNNING) when a daemon holds the home, so nothing is asked for in vain. */
export async function assertNoDaemon(paths: HomePaths): Promise<void> {
  await (await takeDaemonLock(paths)).release();
}
