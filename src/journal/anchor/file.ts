/**
 * The anchor file: `{ record, mac }` as JSON, mode 0600, replaced atomically
 * (a private temp file in the same directory → write → fsync → rename →
 * fsync of the directory when `durable`), so a reader — or a crash at any
 * instruction — sees the old anchor or the new one, never a mix.
 *
 * Synchronous on purpose: the daemon advances the anchor right after a
 * journal commit and before the call may run, and better-sqlite3's commits are
 * synchronous too; the cost is measured in docs/audit.md.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { z } from 'zod';
import { PosternError } from '../../protocol/errors.js';
import { ANCHOR_FORMAT, anchorIsAuthentic, describeProblem, sealAnchor, type JournalProblem, type StoredAnchor } from './record.js';

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

/** The stored anchor, or undefined when there is none; a malformed file is JOURNAL_ANCHOR_MISMATCH. */
export function readAnchor(path: string): StoredAnchor | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new PosternError('FILE_IO', `cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw anchorMismatch({ kind: 'anchor_malformed' });
  }
  const r = StoredSchema.safeParse(parsed);
  if (!r.success) throw anchorMismatch({ kind: 'anchor_malformed' });
  return r.data;
}

/** Replaces the anchor file atomically; `durable` also fsyncs the directory (the rename itself). */
export function writeAnchor(path: string, stored: StoredAnchor, durable: boolean): void {
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const fd = openSync(tmp, 'wx', 0o600);
    try {
      writeSync(fd, `${JSON.stringify(stored)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
    if (durable) {
      const dfd = openSync(dir, 'r');
      try {
        fsyncSync(dfd);
      } finally {
        closeSync(dfd);
      }
    }
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
  const stored = readAnchor(path);
  if (stored === undefined) return false;
  if (!anchorIsAuthentic(oldKey, stored)) throw anchorMismatch({ kind: 'anchor_forged' });
  writeAnchor(path, sealAnchor(newKey, stored.record), true);
  return true;
}
