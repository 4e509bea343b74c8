/**
 * The anchor file: two fixed slots of SLOT_BYTES, each one line holding
 * `{ record, mac }` as JSON padded with spaces. A write goes to the slot of
 * its counter's parity, in place (pwrite + fdatasync: one data flush, no new
 * inode, no rename); a reader takes the slot with the highest counter among
 * those that parse (and, with the key, authenticate). A write torn by a power
 * loss therefore damages only its own slot, and the other still holds the
 * previous anchor. Any other layout (a missing file, a file of another size,
 * one an attacker wrote) is read line by line the same way, and replaced as a
 * whole by the next write: temp file → fsync → rename → fsync of the directory.
 *
 * Why this is safe with one flush per write, and no directory fsync per
 * commit: the anchor may come back *older* only through a power loss (a
 * killed process loses nothing written), and an older anchor is behind a
 * journal that synchronous=FULL kept — an unanchored tail, adopted at start —
 * never ahead of it. The whole-file replacement (start, operator commands)
 * does sync the directory, so a new anchor is not lost that way.
 *
 * Synchronous on purpose: the daemon advances the anchor right after a
 * journal commit and before the call may run, and better-sqlite3's commits are
 * synchronous too; the cost is measured in docs/audit.md.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fdatasync, fdatasyncSync, fstatSync, fsyncSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { z } from 'zod';
import { fileEvent } from '../../vault/file-events.js';
import { PosternError } from '../../rules/errors.js';
import { ANCHOR_FORMAT, anchorIsAuthentic, describeProblem, sealAnchor, type JournalProblem, type StoredAnchor } from '../anchor-record.js';

const head = z.object({ seq: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER), hash: z.string().regex(/^[0-9a-f]{64}$/) }).strict();
const StoredSchema = z
  .object({
    record: z
      .object({
        format: z.literal(ANCHOR_FORMAT),
        journal_id: z.string().min(1).max(128),
        counter: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
        activity: head,
        sessions: head,
        vault_generation: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
        catalog_digest: z.string().regex(/^[0-9a-f]{64}$/),
        at: z.string().max(64),
      })
      .strict(),
    mac: z.string().max(128),
  })
  .strict();

/** The error that refuses a journal that does not match its anchor. */
export function anchorMismatch(problem: JournalProblem): PosternError {
  return new PosternError(
    'JOURNAL_ANCHOR_MISMATCH',
    `${describeProblem(problem)}; a completed idempotency key could run again on it, so the daemon will not start: restore the journal, or start a new one with \`postern anchor new-journal\``,
    { details: { reason: problem.kind, ...('journal' in problem ? { journal: problem.journal } : {}) } },
  );
}

/** One slot: a line of at most SLOT_BYTES, newline included. */
export const SLOT_BYTES = 1024;
const FILE_BYTES = 2 * SLOT_BYTES;
const MAX_FILE_BYTES = 64 * 1024;

function parseSlot(line: string): StoredAnchor | undefined {
  try {
    const r = StoredSchema.safeParse(JSON.parse(line));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The stored anchor, or undefined when there is none. With `key`, the slot
 * with the highest counter that authenticates (the highest that parses when
 * none does, for the caller to find forged); without it, the highest that
 * parses. A file with no well-formed slot is JOURNAL_ANCHOR_MISMATCH.
 */
export function readAnchor(path: string, key?: Uint8Array): StoredAnchor | undefined {
  let text: string;
  try {
    const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      if (fstatSync(fd).size > MAX_FILE_BYTES) throw anchorMismatch({ kind: 'anchor_malformed' });
      text = readFileSync(fd, 'utf8');
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    if (e instanceof PosternError) throw e;
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    if ((e as NodeJS.ErrnoException).code === 'ELOOP') throw anchorMismatch({ kind: 'anchor_malformed' });
    throw new PosternError('FILE_IO', `cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  const slots = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0)
    .map(parseSlot)
    .filter((x): x is StoredAnchor => x !== undefined)
    .sort((a, b) => b.record.counter - a.record.counter);
  const best = slots[0];
  if (best === undefined) throw anchorMismatch({ kind: 'anchor_malformed' });
  if (key === undefined) return best;
  return slots.find((x) => anchorIsAuthentic(key, x)) ?? best;
}

function slotLine(stored: StoredAnchor): string {
  const json = JSON.stringify(stored);
  if (Buffer.byteLength(json) > SLOT_BYTES - 1) throw new PosternError('INTERNAL', 'the journal anchor record does not fit its slot');
  return `${json.padEnd(SLOT_BYTES - 1, ' ')}\n`;
}

/** The whole file holding `stored` in both slots: what a whole-file replacement writes (writeAnchor, a home change). */
export function anchorFileText(stored: StoredAnchor): string {
  const line = slotLine(stored);
  return line + line;
}

/**
 * Writes `line` in place into the slot of the counter's parity (into the page
 * cache: the caller flushes it) and returns the open descriptor; null when the
 * file does not have the two-slot layout.
 */
function writeSlotUnflushed(path: string, line: string, counter: number): number | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDWR | constants.O_NOFOLLOW);
  } catch {
    return null;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size !== FILE_BYTES) {
      closeSync(fd);
      return null;
    }
    writeSync(fd, line, (counter % 2) * SLOT_BYTES, 'utf8');
    return fd;
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** In place, into its slot, flushed (one fdatasync); false when the file does not have the two-slot layout. */
function writeSlot(path: string, line: string, counter: number): boolean {
  const fd = writeSlotUnflushed(path, line, counter);
  if (fd === null) return false;
  try {
    fdatasyncSync(fd);
    fileEvent();
    return true;
  } finally {
    closeSync(fd);
  }
}

/** writeSlot with its fdatasync in the thread pool: the promise resolves once the slot is on disk. */
async function writeSlotDeferred(path: string, line: string, counter: number): Promise<boolean> {
  const fd = writeSlotUnflushed(path, line, counter);
  if (fd === null) return false;
  await new Promise<void>((resolve, reject) => {
    fdatasync(fd, (err) => {
      closeSync(fd);
      if (err === null) {
        fileEvent();
        resolve();
      }
      else reject(err);
    });
  });
  return true;
}

/**
 * writeAnchor into its slot, off the event loop (a group-committed keyed
 * intent waits for it); a file without the two-slot layout is replaced as
 * writeAnchor does.
 */
export async function writeAnchorAsync(path: string, stored: StoredAnchor): Promise<void> {
  const line = slotLine(stored);
  let done: boolean;
  try {
    done = await writeSlotDeferred(path, line, stored.record.counter);
  } catch (e) {
    throw new PosternError('JOURNAL_UNAVAILABLE', `journal anchor: cannot write ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`, {
      details: { journal: 'anchor', error: (e as NodeJS.ErrnoException).code ?? null },
      cause: e,
    });
  }
  if (!done) writeAnchor(path, stored, true);
}

/**
 * Writes the anchor: into its slot in place (one fdatasync), or — with
 * `whole`, or when the file does not have the two-slot layout — by replacing
 * the file with both slots holding it (temp, fsync, rename, fsync of the
 * directory).
 */
export function writeAnchor(path: string, stored: StoredAnchor, whole: boolean): void {
  const line = slotLine(stored);
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    if (!whole && writeSlot(path, line, stored.record.counter)) return;
    const fd = openSync(tmp, 'wx', 0o600);
    try {
      writeSync(fd, line + line);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    fileEvent();
    renameSync(tmp, path);
    fileEvent();
    const dfd = openSync(dir, 'r');
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
    fileEvent();
  } catch (e) {
    try {
      unlinkSync(tmp);
    } catch {
      // already renamed, or never created
    }
    throw new PosternError('JOURNAL_UNAVAILABLE', `journal anchor: cannot write ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`, {
      details: { journal: 'anchor', error: (e as NodeJS.ErrnoException).code ?? null },
      cause: e,
    });
  }
}

/**
 * Re-authenticates the anchor under a new key (e.g. after `postern passwd`
 * made a new data key): verified with `oldKey` first — a forged anchor is not
 * blessed — then sealed with `newKey` and written durably. Returns false when
 * there is no anchor yet (nothing to do).
 */
export function reauthenticateAnchor(path: string, oldKey: Uint8Array, newKey: Uint8Array): boolean {
  const stored = readAnchor(path, oldKey);
  if (stored === undefined) return false;
  if (!anchorIsAuthentic(oldKey, stored)) throw anchorMismatch({ kind: 'anchor_forged' });
  writeAnchor(path, sealAnchor(newKey, stored.record), true);
  return true;
}
