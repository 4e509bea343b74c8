/**
 * Creating and removing the daemon's socket files (agent and operator) safely,
 * in the private run directory (home/daemon-lock.ts makes it). The one home of
 * this rule.
 *
 * Invariants: the parent directory must be ours, a real directory and closed
 * to group and others (making it so is the daemon's job; we only refuse). An
 * existing path is replaced only when it is a socket we own that nothing
 * answers on (stale); a symlink, a foreign owner, a non-socket or a live
 * socket is refused. The socket is bound under a temporary name, chmod'ed to
 * 0600 and renamed into place (no process-wide umask change, which workers
 * forbid), and on close it is unlinked only if it is still the file we created.
 */
import { connect, type Server } from 'node:net';
import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, rename, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Stats } from 'node:fs';
import { checkPrivateDir } from '../../home/permissions.js';
import { PosternError } from '../../rules/errors.js';

interface SocketIdentity {
  readonly dev: number;
  readonly ino: number;
}

const myUid = (): number | undefined => (typeof process.getuid === 'function' ? process.getuid() : undefined);

async function lstatOrNull(path: string): Promise<Stats | null> {
  try {
    return await lstat(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new PosternError('HOME_UNSAFE', `cannot inspect ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`, { cause: e });
  }
}

/** Does anything accept a connection on this socket path? */
function answers(path: string, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(path);
    const done = (v: boolean): void => {
      clearTimeout(t);
      s.destroy();
      resolve(v);
    };
    const t = setTimeout(() => done(true), timeoutMs); // a hung listener is still a listener
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

/**
 * Makes (or checks) the shared agent socket's directory beside the home
 * (docs/agent-users.md): a real directory, ours, 0711 — others may reach a
 * socket in it by name but not list or change it.
 */
export async function prepareSharedDir(dir: string): Promise<void> {
  try {
    await mkdir(dir, { mode: 0o711 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw new PosternError('HOME_UNSAFE', `cannot create ${dir}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`, { cause: e });
  }
  const st = await lstatOrNull(dir);
  const uid = myUid();
  if (st === null || !st.isDirectory() || (uid !== undefined && st.uid !== uid)) throw new PosternError('HOME_UNSAFE', `${dir} is not a directory of yours; move it away`);
  if ((st.mode & 0o777) !== 0o711) await chmod(dir, 0o711);
  await checkSharedDir(dir);
}

async function checkSharedDir(dir: string): Promise<void> {
  const st = await lstatOrNull(dir);
  const uid = myUid();
  if (st === null || !st.isDirectory() || (uid !== undefined && st.uid !== uid) || (st.mode & 0o777) !== 0o711) {
    throw new PosternError('HOME_UNSAFE', `${dir} must be a directory of yours with mode 0711`, { details: { path: dir } });
  }
}

/** Checks the directory and clears a stale socket; throws HOME_UNSAFE or DAEMON_RUNNING. */
export async function prepareSocketPath(path: string, shared = false): Promise<void> {
  if (shared) await checkSharedDir(dirname(path));
  else {
    const dir = await checkPrivateDir(dirname(path));
    if (!dir.ok) throw new PosternError('HOME_UNSAFE', `${dir.path} ${dir.problem}; ${dir.fix}`, { details: { path: dir.path } });
  }
  const st = await lstatOrNull(path);
  if (st === null) return;
  if (st.isSymbolicLink()) throw new PosternError('HOME_UNSAFE', `${path} is a symbolic link; remove it (something may be impersonating the daemon)`);
  const uid = myUid();
  if (uid !== undefined && st.uid !== uid) throw new PosternError('HOME_UNSAFE', `${path} is owned by uid ${st.uid}, not by you`);
  if (!st.isSocket()) throw new PosternError('HOME_UNSAFE', `${path} exists and is not a socket; move it away`);
  if (await answers(path)) throw new PosternError('DAEMON_RUNNING', `something is already serving ${path}`);
  await unlink(path).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'ENOENT') throw new PosternError('HOME_UNSAFE', `cannot remove the stale socket ${path}: ${e.code ?? 'error'}`, { cause: e });
  });
}

/**
 * Listens on a fresh private name beside `path`, makes it 0600, checks it, and
 * renames it into place, so the socket appears at `path` already closed to
 * others. (It also keeps libuv, which unlinks the name it bound on close, from
 * ever unlinking whatever sits at `path` then.)
 */
export async function listenPrivate(server: Server, path: string, mode = 0o600): Promise<SocketIdentity> {
  const temp = join(dirname(path), `.new-${randomBytes(6).toString('hex')}.sock`);
  await new Promise<void>((resolve, reject) => {
    const onError = (e: NodeJS.ErrnoException): void => {
      reject(new PosternError('HOME_UNSAFE', `cannot listen on ${path}: ${e.code ?? 'error'}`, { cause: e }));
    };
    server.once('error', onError);
    server.listen(temp, () => {
      server.off('error', onError);
      resolve();
    });
  });
  try {
    await chmod(temp, mode);
    const st = await lstat(temp);
    const uid = myUid();
    if (!st.isSocket() || (uid !== undefined && st.uid !== uid) || (st.mode & 0o777) !== mode) {
      throw new PosternError('HOME_UNSAFE', `${temp} was replaced while the daemon was creating it`);
    }
    await rename(temp, path);
    return { dev: st.dev, ino: st.ino };
  } catch (e) {
    await new Promise<void>((r) => server.close(() => r()));
    await unlink(temp).catch(() => undefined);
    if (e instanceof PosternError) throw e;
    throw new PosternError('HOME_UNSAFE', `cannot create ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`, { cause: e });
  }
}

/** Unlinks the socket if it is still the file we created (never someone else's replacement). */
export async function removeIfOurs(path: string, id: SocketIdentity): Promise<void> {
  const st = await lstat(path).catch(() => null);
  if (st !== null && st.isSocket() && st.dev === id.dev && st.ino === id.ino) await unlink(path).catch(() => undefined);
}
