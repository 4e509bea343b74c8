/**
 * Ownership and permission checks for the Postern home and its files.
 * Anything that holds or guards a secret must be owned by the current user and
 * closed to group and others; a symlink is never followed for these paths.
 */
import { lstat, mkdir, chmod } from 'node:fs/promises';
import { PosternError } from '../rules/errors.js';

export type PathCheck =
  | { readonly ok: true; readonly path: string; readonly mode: number }
  | { readonly ok: false; readonly path: string; readonly problem: string; readonly fix: string };

const octal = (mode: number): string => (mode & 0o777).toString(8).padStart(3, '0');

/** Checks a path that must be ours, not a link, and closed to group and others. Missing → problem. */
async function checkPrivate(path: string, kind: 'directory' | 'file'): Promise<PathCheck> {
  let st;
  try {
    st = await lstat(path);
  } catch {
    return { ok: false, path, problem: 'does not exist', fix: 'run `postern init`' };
  }
  const dir = kind === 'directory';
  if (st.isSymbolicLink()) return { ok: false, path, problem: 'is a symbolic link', fix: dir ? 'replace it with a real directory' : 'replace it with the real file' };
  if (dir ? !st.isDirectory() : !st.isFile()) {
    return { ok: false, path, problem: dir ? 'is not a directory' : 'is not a regular file', fix: dir ? 'move it away and run `postern init`' : 'move it away' };
  }
  if (typeof process.getuid === 'function' && st.uid !== process.getuid()) {
    return { ok: false, path, problem: `is owned by uid ${st.uid}, not by you`, fix: 'use a home you own (POSTERN_HOME)' };
  }
  if ((st.mode & 0o077) !== 0) {
    const want = dir ? '700' : '600';
    return { ok: false, path, problem: `has mode ${octal(st.mode)}, expected ${want}`, fix: `chmod ${want} ${path}` };
  }
  return { ok: true, path, mode: st.mode & 0o777 };
}

/** A directory that must be 0700 and ours. */
export const checkPrivateDir = (path: string): Promise<PathCheck> => checkPrivate(path, 'directory');

/** A file that must be 0600 (or stricter) and ours. */
export const checkPrivateFile = (path: string): Promise<PathCheck> => checkPrivate(path, 'file');

/** Creates the home (0700) if missing; refuses an existing unsafe one. */
export async function ensurePrivateHome(path: string): Promise<void> {
  // A link (even a dangling one) is refused as a link, before mkdir follows it.
  await assertHomeSafe(path);
  try {
    // mkdir honours the umask, so a directory we create gets its mode set explicitly.
    const created = await mkdir(path, { recursive: true, mode: 0o700 });
    if (created !== undefined) await chmod(path, 0o700);
  } catch (e) {
    throw new PosternError('HOME_UNSAFE', `cannot create ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`, { cause: e });
  }
  await assertPrivateDir(path);
}

export async function assertPrivateDir(path: string): Promise<void> {
  const c = await checkPrivateDir(path);
  if (!c.ok) {
    const code = c.problem === 'does not exist' ? 'VAULT_NOT_FOUND' : 'HOME_UNSAFE';
    throw new PosternError(code, `${path} ${c.problem}; ${c.fix}`, { details: { path } });
  }
}

/**
 * The one home check every command runs before touching the home: a home
 * that exists must be a real directory (never a symlink), ours, 0700. A
 * missing home is left to the command (`init` creates it; others report
 * VAULT_NOT_FOUND).
 */
export async function assertHomeSafe(path: string): Promise<void> {
  try {
    await lstat(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new PosternError('HOME_UNSAFE', `cannot inspect ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`, { details: { path } });
  }
  await assertPrivateDir(path);
}
