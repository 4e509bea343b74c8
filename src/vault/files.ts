/**
 * The vault's contact with the file system: safety checks, bounded reads and
 * atomic writes.
 *
 * Invariants:
 * - the vault directory must be a directory (not a symlink) owned by us without group/other
 *   read or write bits; the vault file must be a regular file (not a symlink)
 *   owned by us with no group/other bits — otherwise VAULT_PERMISSIONS with
 *   the path, the mode and the command that fixes it;
 * - a read never allocates more than MAX_FILE_BYTES, judged from fstat of the
 *   descriptor actually opened (O_NOFOLLOW, O_NONBLOCK: no symlinks, no FIFO hangs);
 * - a write goes temp file (same directory, O_EXCL, 0600) → write → fsync →
 *   rename → fsync(directory), so the path always names the old or the new file;
 *   a failed write removes its temp file and leaves the old vault untouched.
 */
import { constants } from 'node:fs';
import type { Stats } from 'node:fs';
import { lstat, mkdir, open, readdir, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { PosternError } from '../rules/errors.js';
import { corruptError, MAX_FILE_BYTES } from './format.js';
import { fileEvent } from './file-events.js';

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK, O_WRONLY, O_CREAT, O_EXCL, O_DIRECTORY } = constants;

function errnoOf(e: unknown): string | undefined {
  return typeof e === 'object' && e !== null && 'code' in e && typeof e.code === 'string' ? e.code : undefined;
}

export function ioError(action: string, path: string, cause: unknown): PosternError {
  const code = errnoOf(cause);
  const why = code === 'ENOSPC' ? 'the disk is full' : code === 'EDQUOT' ? 'the disk quota is exhausted' : (code ?? 'I/O error');
  return new PosternError('VAULT_IO', `could not ${action} ${path}: ${why}`, { details: { path, errno: code ?? null }, cause });
}

function modeString(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, '0');
}

function currentUid(): number | undefined {
  return typeof process.getuid === 'function' ? process.getuid() : undefined;
}

function permissionError(message: string, path: string, fix: string, extra: Record<string, string | number> = {}): PosternError {
  return new PosternError('VAULT_PERMISSIONS', `${message}; fix: ${fix}`, { details: { path, fix, ...extra } });
}

function checkOwner(st: Stats, what: string, path: string): void {
  const uid = currentUid();
  if (uid !== undefined && st.uid !== uid) {
    throw permissionError(`${what} ${path} is owned by uid ${st.uid}, not by you (uid ${uid})`, path, `chown ${uid} ${path}`, {
      owner_uid: st.uid,
    });
  }
}

/** Vault file: no group/other bits at all. */
function checkVaultFileStats(st: Stats, path: string): void {
  if (st.isSymbolicLink()) throw permissionError(`vault ${path} is a symbolic link`, path, `replace the link with the vault file itself`);
  if (!st.isFile()) throw corruptError('not a regular file', path);
  checkOwner(st, 'vault', path);
  if ((st.mode & 0o077) !== 0) {
    throw permissionError(`vault ${path} has mode ${modeString(st.mode)} (group/other access)`, path, `chmod 600 ${path}`, {
      mode: modeString(st.mode),
    });
  }
}

/**
 * The directory holding the vault. With `create`, a missing directory is made
 * with mode 0700; without it, a missing directory means there is no vault.
 */
export async function checkVaultDirectory(vaultPath: string, create: boolean): Promise<void> {
  const dir = dirname(vaultPath);
  let st: Stats;
  try {
    // lstat: a symlinked directory would put the vault wherever the link points.
    st = await lstat(dir);
  } catch (e) {
    if (errnoOf(e) !== 'ENOENT') throw ioError('inspect', dir, e);
    if (!create) throw notFoundError(vaultPath);
    try {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      st = await lstat(dir);
    } catch (e2) {
      throw ioError('create directory', dir, e2);
    }
  }
  if (st.isSymbolicLink()) throw permissionError(`directory ${dir} is a symbolic link`, dir, `replace the link with the directory itself`);
  if (!st.isDirectory()) throw new PosternError('VAULT_IO', `${dir} is not a directory`, { details: { path: dir } });
  checkOwner(st, 'directory', dir);
  if ((st.mode & 0o066) !== 0) {
    throw permissionError(`directory ${dir} has mode ${modeString(st.mode)} (group/other can read or write)`, dir, `chmod 700 ${dir}`, {
      mode: modeString(st.mode),
    });
  }
}

function notFoundError(vaultPath: string): PosternError {
  return new PosternError('VAULT_NOT_FOUND', `no vault at ${vaultPath}`, { details: { path: vaultPath } });
}

/** Read the whole vault file after the safety checks; bounded by MAX_FILE_BYTES. */
export async function readVaultFile(path: string): Promise<Uint8Array> {
  let fh;
  try {
    fh = await open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (e) {
    const code = errnoOf(e);
    if (code === 'ENOENT') throw notFoundError(path);
    if (code === 'ELOOP') throw permissionError(`vault ${path} is a symbolic link`, path, 'replace the link with the vault file itself');
    throw ioError('open', path, e);
  }
  try {
    const st = await fh.stat();
    checkVaultFileStats(st, path);
    if (st.size > MAX_FILE_BYTES) throw corruptError(`file is ${st.size} bytes, larger than any version 1 vault (${MAX_FILE_BYTES})`, path);
    const bytes = new Uint8Array(st.size);
    let filled = 0;
    while (filled < bytes.length) {
      const { bytesRead } = await fh.read(bytes, filled, bytes.length - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    // A file that shrank while being read shows up as truncation in the parser.
    return filled === bytes.length ? bytes : bytes.subarray(0, filled);
  } catch (e) {
    if (e instanceof PosternError) throw e;
    throw ioError('read', path, e);
  } finally {
    await fh.close().catch(() => undefined);
  }
}

/** Does anything (file, link, other) exist at `path`? */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') return false;
    throw ioError('inspect', path, e);
  }
}

const TEMP_MARK = '.tmp-';

/** Remove temp files left by writers that died mid-save. Call only while holding the writer lock. */
export async function removeStaleTemps(vaultPath: string): Promise<number> {
  const dir = dirname(vaultPath);
  const prefix = basename(vaultPath) + TEMP_MARK;
  let removed = 0;
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (name.startsWith(prefix) && /^[0-9]+-[0-9a-f]{16}$/.test(name.slice(prefix.length))) {
      await unlink(join(dir, name)).then(
        () => removed++,
        () => undefined,
      );
    }
  }
  return removed;
}

async function fsyncDirectory(dir: string): Promise<void> {
  const dh = await open(dir, O_RDONLY | O_DIRECTORY);
  try {
    await dh.sync();
  } finally {
    await dh.close();
  }
}

/**
 * Atomically replace (or create) the vault file with `bytes`. The caller holds
 * the writer lock. An existing vault at the path must pass the same checks as
 * on open.
 */
export async function writeVaultFile(path: string, bytes: Uint8Array): Promise<void> {
  try {
    checkVaultFileStats(await lstat(path), path);
  } catch (e) {
    if (e instanceof PosternError) throw e;
    if (errnoOf(e) !== 'ENOENT') throw ioError('inspect', path, e);
  }
  const temp = `${path}${TEMP_MARK}${process.pid}-${randomBytes(8).toString('hex')}`;
  let fh;
  try {
    fh = await open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
  } catch (e) {
    throw ioError('create a temporary file beside', path, e);
  }
  try {
    try {
      let written = 0;
      while (written < bytes.length) {
        const { bytesWritten } = await fh.write(bytes, written, bytes.length - written, written);
        written += bytesWritten;
      }
      await fh.sync();
    } finally {
      await fh.close();
    }
    fileEvent();
    await rename(temp, path);
    fileEvent();
  } catch (e) {
    await unlink(temp).catch(() => undefined);
    throw ioError('write', path, e);
  }
  try {
    await fsyncDirectory(dirname(path));
  } catch (e) {
    throw ioError('flush the directory of', path, e);
  }
  fileEvent();
}
