/**
 * `$POSTERN_HOME/journal.checkpoints.jsonl`: one signed checkpoint a line,
 * appended (O_APPEND, then fsync; the directory is fsynced when the file is
 * created), never rewritten. A torn last line (a power loss mid-append) reads
 * as one malformed line and the next append starts on a line of its own.
 *
 * Synchronous, like the anchor: the keeper writes a checkpoint right after an
 * anchor write. A reader never throws on content: each line is a checkpoint or
 * 'malformed'; only an unreadable file is FILE_IO.
 */
import { closeSync, constants, fstatSync, fsyncSync, openSync, readFileSync, readSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileEvent } from '../../vault/file-events.js';
import { PosternError } from '../../rules/errors.js';
import { StoredCheckpointSchema, type StoredCheckpoint } from './record.js';

/** Checkpoint files are read whole; a file past this is refused rather than read into memory. */
const MAX_FILE_BYTES = 256 * 1024 * 1024;

/** One line of the file: a checkpoint, or 'malformed' (also for a line shipped elsewhere, ship/remote.ts). */
export function parseCheckpointLine(line: string): StoredCheckpoint | 'malformed' {
  try {
    const r = StoredCheckpointSchema.safeParse(JSON.parse(line));
    return r.success ? r.data : 'malformed';
  } catch {
    return 'malformed';
  }
}

/** Every line of the file in order; [] when there is no file. */
export function readCheckpoints(path: string): (StoredCheckpoint | 'malformed')[] {
  let text: string;
  try {
    const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      if (fstatSync(fd).size > MAX_FILE_BYTES) throw new PosternError('FILE_IO', `${path} is larger than ${MAX_FILE_BYTES} bytes`);
      text = readFileSync(fd, 'utf8');
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    if (e instanceof PosternError) throw e;
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new PosternError('FILE_IO', `cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  return text
    .split('\n')
    .filter((l) => l.trim().length > 0)
    .map(parseCheckpointLine);
}

/** Appends one checkpoint durably; throws JOURNAL_UNAVAILABLE when it cannot. */
export function appendCheckpoint(path: string, stored: StoredCheckpoint): void {
  let created = false;
  try {
    let fd: number;
    try {
      fd = openSync(path, constants.O_RDWR | constants.O_APPEND | constants.O_NOFOLLOW);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      fd = openSync(path, constants.O_RDWR | constants.O_APPEND | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
      created = true;
    }
    try {
      const st = fstatSync(fd);
      // After a torn append the file does not end with a newline: start a line of our own.
      const lead = st.size > 0 && !endsWithNewline(fd, st.size) ? '\n' : '';
      writeSync(fd, `${lead}${JSON.stringify(stored)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    fileEvent();
    if (created) {
      const dfd = openSync(dirname(path), 'r');
      try {
        fsyncSync(dfd);
      } finally {
        closeSync(dfd);
      }
    }
  } catch (e) {
    throw new PosternError('JOURNAL_UNAVAILABLE', `journal checkpoint: cannot write ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`, {
      details: { journal: 'checkpoints', error: (e as NodeJS.ErrnoException).code ?? null },
      cause: e,
    });
  }
}

function endsWithNewline(fd: number, size: number): boolean {
  const b = Buffer.alloc(1);
  readSync(fd, b, 0, 1, size - 1);
  return b[0] === 0x0a;
}
