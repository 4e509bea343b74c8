/**
 * Safe Unix-socket files for the daemon: the run directory is 0700 and ours,
 * a socket path is never a symlink or someone else's file, a stale socket
 * (nothing answers) is removed, a live one means another daemon, and the
 * socket itself is made 0600 before anyone can connect (umask around listen).
 */
import { connect, type Server } from 'node:net';
import { chmod, lstat, mkdir, unlink } from 'node:fs/promises';
import { PosternError } from '../protocol/errors.js';
import { assertPrivateDir } from '../home/permissions.js';

export async function ensureRunDir(dir: string): Promise<void> {
  const created = await mkdir(dir, { recursive: true, mode: 0o700 });
  if (created !== undefined) await chmod(dir, 0o700);
  await assertPrivateDir(dir);
}

function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(path);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** Clears the way for a new socket at `path`, refusing anything suspicious. */
export async function prepareSocketPath(path: string): Promise<void> {
  let st;
  try {
    st = await lstat(path);
  } catch {
    return;
  }
  if (st.isSymbolicLink()) throw new PosternError('HOME_UNSAFE', `${path} is a symbolic link; refusing to use it`);
  if (typeof process.getuid === 'function' && st.uid !== process.getuid()) {
    throw new PosternError('HOME_UNSAFE', `${path} belongs to uid ${st.uid}; refusing to use it`);
  }
  if (!st.isSocket()) throw new PosternError('HOME_UNSAFE', `${path} exists and is not a socket; move it away`);
  if (await answers(path)) throw new PosternError('DAEMON_RUNNING', `a daemon already answers on ${path}`);
  await unlink(path);
}

/** Listens with a 0600 socket: the umask is tightened for the bind, then the mode is checked. */
export async function listenPrivate(server: Server, path: string): Promise<void> {
  await prepareSocketPath(path);
  const old = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } finally {
    process.umask(old);
  }
  await chmod(path, 0o600);
}
