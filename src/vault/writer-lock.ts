/**
 * One writer at a time: `<vault>.lock` beside the vault holds "<pid> <token>".
 *
 * Acquire: write our line to a private temp file, then hard-link it to the
 * lock path — link() fails if the lock exists, so the lock file is created
 * exclusively and is never seen empty or half-written. A lock whose pid is
 * alive (including our own process) → VAULT_BUSY. A lock whose pid is dead is
 * stale: it is renamed aside, and only deleted if what was moved is still the
 * very file judged stale (same inode, same content); otherwise it is put back.
 * Release removes the lock only if it still holds our token.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { link, lstat, open, readdir, rename, unlink, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { PosternError } from '../rules/errors.js';
import { ioError } from './files.js';

export interface WriterLock {
  readonly path: string;
  release(): Promise<void>;
}

const MAX_ATTEMPTS = 5;

function errnoOf(e: unknown): string | undefined {
  return typeof e === 'object' && e !== null && 'code' in e && typeof e.code === 'string' ? e.code : undefined;
}

/** True when a process with this pid exists (EPERM: it exists but is not ours). */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return errnoOf(e) === 'EPERM';
  }
}

interface LockSnapshot {
  readonly ino: number;
  readonly content: string;
  readonly pid: number | null;
}

async function readLock(lockPath: string): Promise<LockSnapshot | null> {
  let fh;
  try {
    fh = await open(lockPath, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    const code = errnoOf(e);
    if (code === 'ENOENT') return null;
    if (code === 'ELOOP') return { ino: (await lstat(lockPath)).ino, content: '', pid: null }; // a planted link: stale
    throw ioError('read the lock', lockPath, e);
  }
  try {
    const st = await fh.stat();
    const content = st.size <= 256 ? await fh.readFile('utf8') : '';
    const m = /^([1-9][0-9]{0,9}) [0-9a-f]{32}\n$/.exec(content);
    return { ino: st.ino, content, pid: m?.[1] === undefined ? null : Number(m[1]) };
  } finally {
    await fh.close().catch(() => undefined);
  }
}

function busyError(vaultPath: string, lockPath: string, pid: number | null): PosternError {
  const who = pid === null ? 'another process' : `process ${pid}`;
  return new PosternError(
    'VAULT_BUSY',
    `vault ${vaultPath} is being written by ${who}; if no Postern process is running, delete ${lockPath}`,
    { details: { path: vaultPath, lock: lockPath, pid } },
  );
}

/** Move a stale lock aside and delete it, unless it changed since it was judged stale. */
async function breakStaleLock(vaultPath: string, lockPath: string, judged: LockSnapshot): Promise<void> {
  const aside = `${lockPath}.stale-${process.pid}-${randomBytes(8).toString('hex')}`;
  try {
    await rename(lockPath, aside);
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') return; // someone else broke it first
    throw ioError('remove the stale lock', lockPath, e);
  }
  const moved = await readLock(aside);
  if (moved !== null && (moved.ino !== judged.ino || moved.content !== judged.content)) {
    // We moved a fresh lock taken by another writer in between: give it back.
    await link(aside, lockPath).catch(() => undefined);
    await unlink(aside).catch(() => undefined);
    throw busyError(vaultPath, lockPath, moved.pid);
  }
  await unlink(aside).catch(() => undefined);
}

/** Remove lock temp files and aside files left by processes that died. */
async function removeDeadLockLeftovers(lockPath: string): Promise<void> {
  const dir = dirname(lockPath);
  const base = basename(lockPath);
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const m = /^\.(?:tmp|stale)-([0-9]+)-[0-9a-f]{16}$/.exec(name.startsWith(base) ? name.slice(base.length) : '');
    if (m?.[1] !== undefined && !processAlive(Number(m[1]))) await unlink(join(dir, name)).catch(() => undefined);
  }
}

/** Take the writer lock for `vaultPath` or throw VAULT_BUSY. The directory was checked by the caller. */
export async function acquireWriterLock(vaultPath: string): Promise<WriterLock> {
  const lockPath = `${vaultPath}.lock`;
  const content = `${process.pid} ${randomBytes(16).toString('hex')}\n`;
  const temp = `${lockPath}.tmp-${process.pid}-${randomBytes(8).toString('hex')}`;
  try {
    await writeFile(temp, content, { flag: constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode: 0o600 });
  } catch (e) {
    throw ioError('create the lock for', vaultPath, e);
  }
  try {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      try {
        await link(temp, lockPath);
        await removeDeadLockLeftovers(lockPath);
        return { path: lockPath, release: () => releaseLock(lockPath, content) };
      } catch (e) {
        if (errnoOf(e) !== 'EEXIST') throw ioError('create the lock for', vaultPath, e);
      }
      const holder = await readLock(lockPath);
      if (holder === null) continue; // released meanwhile: try again
      if (holder.pid !== null && processAlive(holder.pid)) throw busyError(vaultPath, lockPath, holder.pid);
      await breakStaleLock(vaultPath, lockPath, holder);
    }
    throw busyError(vaultPath, lockPath, null);
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}

async function releaseLock(lockPath: string, content: string): Promise<void> {
  const current = await readLock(lockPath).catch(() => null);
  if (current?.content === content) await unlink(lockPath).catch(() => undefined);
}
