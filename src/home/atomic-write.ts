/**
 * Atomic replacement of a small private file: a temp file in the same
 * directory (exclusive create, 0600) → write → fsync → rename over the target
 * → fsync the directory. A reader sees the old content or the new one, never
 * a mix, even if the process is killed at any instruction. Each step is a
 * numbered file event (file-events.ts: the test crash point).
 */
import { open, rename, unlink } from 'node:fs/promises';
import { fileEvent } from '../vault/file-events.js';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { PosternError } from '../rules/errors.js';

export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export async function atomicWriteFile(path: string, data: Uint8Array | string, mode = 0o600): Promise<void> {
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const fh = await open(tmp, 'wx', mode);
    try {
      await fh.writeFile(data);
      await fh.sync();
    } finally {
      await fh.close();
    }
    fileEvent();
    await rename(tmp, path);
    fileEvent();
    await fsyncDir(dir);
    fileEvent();
  } catch (e) {
    await unlink(tmp).catch(() => undefined);
    throw new PosternError('FILE_IO', `cannot write ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`, { cause: e });
  }
}

/** Appends one line and fsyncs it (for small append-only logs). */
export async function appendLineDurably(path: string, line: string, mode = 0o600): Promise<void> {
  const fh = await open(path, 'a', mode);
  try {
    await fh.appendFile(`${line}\n`);
    await fh.sync();
  } finally {
    await fh.close();
  }
  fileEvent();
}

/** Removes a file (absent is fine) and fsyncs its directory, so the removal survives a power loss. */
export async function removeDurably(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new PosternError('FILE_IO', `cannot remove ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`, { cause: e });
  }
  fileEvent();
  await fsyncDir(dirname(path));
  fileEvent();
}

/** Renames a file or a directory within one file system and fsyncs the target's directory (and the source's, when another). */
export async function renameDurably(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (e) {
    throw new PosternError('FILE_IO', `cannot move ${from} to ${to}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`, { cause: e });
  }
  fileEvent();
  await fsyncDir(dirname(to));
  if (dirname(from) !== dirname(to)) await fsyncDir(dirname(from));
  fileEvent();
}
