/**
 * A change of several home files, crash-atomic: the one way a command that
 * changes more than one file (passwd, catalog accept, every vault save and
 * the anchor that follows it) writes them.
 *
 * The change is staged in memory (`write`, `append`, `remove`, `rename`), then
 * `commit` writes the whole of it as one write-ahead record (`change.pending`
 * in the home: temp file, fsync, rename, fsync of the directory), then each
 * file, then removes the record. Whoever opens the home next — any vault
 * writer under the writer lock (VaultStage.recover), the CLI before it asks
 * for a passphrase, the daemon before it reads anything — finds a record left
 * by a killed process and finishes it: every step is idempotent (a write
 * replaces the file with the staged bytes, an append adds its line unless the
 * file already has it, a remove tolerates an absent file, a rename is done
 * unless its target is already there), so finishing twice
 * is finishing once. A kill at any point therefore leaves the state before
 * the change (no record yet) or the state after it (the record is finished),
 * never a mix: one passphrase opens the vault and everything it keys.
 *
 * Invariants:
 * - the record holds the final bytes of each file and nothing else: the
 *   sealed vault file (ciphertext), MAC'd or signed records, catalog text.
 *   No secret and no key is ever in it; a record is applied without any key;
 * - a record only names files inside the home (relative paths, no `..`), so
 *   finishing a planted record writes nothing its planter could not have
 *   written there directly; a record that does not parse, or whose digest
 *   does not match its content, is refused (CHANGE_RECORD_INVALID), never
 *   half-applied;
 * - a record is finished under the vault's writer lock; while a live process
 *   holds that lock its change is in progress and is left to it.
 */
import { createHash } from 'node:crypto';
import { lstat, mkdir, readFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, normalize, sep } from 'node:path';
import { z } from 'zod';
import { PosternError, isPosternError } from '../rules/errors.js';
import { acquireWriterLock, type VaultStage } from '../vault/index.js';
import { appendLineDurably, atomicWriteFile, removeDurably, renameDurably } from './atomic-write.js';
import type { HomePaths } from './paths.js';

const CHANGE_RECORD_FORMAT = 'postern.home-change/1';

/** One file of a change; `path` is relative to the home. */
type StagedFile =
  | { readonly op: 'write'; readonly path: string; readonly data: string }
  | { readonly op: 'append'; readonly path: string; readonly line: string }
  | { readonly op: 'remove'; readonly path: string }
  /** Move `from` (a file or a directory) to `path`, unless `path` is already there: done, or taken (never overwritten). */
  | { readonly op: 'rename'; readonly from: string; readonly path: string };

const RelPath = z
  .string()
  .min(1)
  .max(512)
  .regex(/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/)
  .refine((p) => !p.split('/').some((seg) => seg === '.' || seg === '..'), 'no . or .. segments');

const RecordSchema = z
  .object({
    format: z.literal(CHANGE_RECORD_FORMAT),
    command: z.string().min(1).max(64),
    files: z
      .array(
        z.discriminatedUnion('op', [
          z.object({ op: z.literal('write'), path: RelPath, data: z.string().max(32 * 1024 * 1024) }).strict(),
          z.object({ op: z.literal('append'), path: RelPath, line: z.string().max(1024 * 1024).refine((l) => !l.includes('\n'), 'one line') }).strict(),
          z.object({ op: z.literal('remove'), path: RelPath }).strict(),
          z.object({ op: z.literal('rename'), from: RelPath, path: RelPath }).strict(),
        ]),
      )
      .min(1)
      .max(1000),
    digest: z.string().regex(/^[0-9a-f]{64}$/),
  })
  .strict();

type ChangeRecord = z.infer<typeof RecordSchema>;

const digestOf = (command: string, files: readonly StagedFile[]): string => createHash('sha256').update(JSON.stringify({ format: CHANGE_RECORD_FORMAT, command, files })).digest('hex');

function relativeTo(home: string, path: string): string {
  const root = normalize(home);
  const abs = normalize(path);
  const rel = abs.startsWith(root + sep) ? abs.slice(root.length + 1).split(sep).join('/') : '';
  if (!isAbsolute(abs) || !RelPath.safeParse(rel).success) throw new PosternError('INTERNAL', `a home change may only name files inside the home (${path})`);
  return rel;
}

function invalidRecord(path: string, why: string): PosternError {
  return new PosternError('CHANGE_RECORD_INVALID', `${path} is not a valid change record (${why}): move it aside, then run \`postern doctor --unlock\``, { details: { path, reason: why } });
}

/** Does `text` already hold `line` as a whole line? */
function hasLine(text: string, line: string): boolean {
  return text.startsWith(`${line}\n`) || text.includes(`\n${line}\n`);
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new PosternError('FILE_IO', `cannot inspect ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`, { cause: e });
  }
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new PosternError('FILE_IO', `cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`, { cause: e });
  }
}

/** One idempotent step: doing it again after it was done changes nothing. */
async function applyOne(home: string, f: StagedFile): Promise<void> {
  const abs = join(home, ...f.path.split('/'));
  switch (f.op) {
    case 'write':
      await mkdir(dirname(abs), { recursive: true, mode: 0o700 });
      await atomicWriteFile(abs, Buffer.from(f.data, 'base64'));
      return;
    case 'append': {
      const text = (await readOptional(abs)) ?? '';
      if (hasLine(text, f.line)) return;
      // After a torn append the file does not end with a newline: start a line of our own.
      await appendLineDurably(abs, text.length > 0 && !text.endsWith('\n') ? `\n${f.line}` : f.line);
      return;
    }
    case 'remove':
      await removeDurably(abs);
      return;
    case 'rename':
      // Done before (or the name is taken), or nothing left to move: either way nothing to do.
      if ((await exists(abs)) || !(await exists(join(home, ...f.from.split('/'))))) return;
      await renameDurably(join(home, ...f.from.split('/')), abs);
      return;
  }
}

async function applyRecord(home: string, r: Pick<ChangeRecord, 'files'>): Promise<void> {
  for (const f of r.files) await applyOne(home, f);
}

async function readRecord(path: string): Promise<ChangeRecord | undefined> {
  const text = await readOptional(path);
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalidRecord(path, 'not JSON');
  }
  const r = RecordSchema.safeParse(parsed);
  if (!r.success) throw invalidRecord(path, `does not match ${CHANGE_RECORD_FORMAT}`);
  if (digestOf(r.data.command, r.data.files) !== r.data.digest) throw invalidRecord(path, 'its digest does not match its content');
  return r.data;
}

/** What opening the home found. */
type ChangeRecovery = { readonly kind: 'none' } | { readonly kind: 'finished'; readonly command: string } | { readonly kind: 'in_progress' };

/** Finishes a pending change; the caller holds the vault's writer lock. */
async function finishPendingChangeLocked(paths: HomePaths): Promise<ChangeRecovery> {
  const record = await readRecord(paths.changeRecord);
  if (record === undefined) return { kind: 'none' };
  await applyRecord(paths.home, record);
  await removeDurably(paths.changeRecord);
  return { kind: 'finished', command: record.command };
}

/**
 * Finishes a change a killed process left (takes the vault's writer lock).
 * Cheap when there is none: one failed open.
 */
export async function finishPendingChange(paths: HomePaths): Promise<ChangeRecovery> {
  if ((await readOptional(paths.changeRecord)) === undefined) return { kind: 'none' };
  let lock: Awaited<ReturnType<typeof acquireWriterLock>>;
  try {
    lock = await acquireWriterLock(paths.vault);
  } catch (e) {
    if (isPosternError(e, 'VAULT_BUSY')) return { kind: 'in_progress' };
    throw e;
  }
  try {
    return await finishPendingChangeLocked(paths);
  } finally {
    await lock.release();
  }
}

/** The one line said when a change was finished on opening the home. */
export function describeRecovery(r: ChangeRecovery): string | undefined {
  return r.kind === 'finished' ? `finished an interrupted \`${r.command}\` (its change record was found in the home)` : undefined;
}

/**
 * The files of one change, staged, then committed as a whole. A change is
 * committed once; one with nothing staged writes nothing.
 */
export class HomeChange {
  readonly #paths: HomePaths;
  readonly #command: string;
  readonly #files: StagedFile[] = [];
  #committed = false;

  constructor(paths: HomePaths, command: string) {
    this.#paths = paths;
    this.#command = command;
  }

  get empty(): boolean {
    return this.#files.length === 0;
  }

  /** Replace `path` with `data` (a later write of the same path wins). */
  write(path: string, data: Uint8Array | string): void {
    const rel = relativeTo(this.#paths.home, path);
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    const at = this.#files.findIndex((f) => f.path === rel);
    const entry: StagedFile = { op: 'write', path: rel, data: bytes.toString('base64') };
    if (at >= 0) this.#files.splice(at, 1);
    this.#files.push(entry);
  }

  /** Append one line to `path` (an append-only log). */
  append(path: string, line: string): void {
    if (line.includes('\n')) throw new PosternError('INTERNAL', 'a staged append is one line');
    this.#files.push({ op: 'append', path: relativeTo(this.#paths.home, path), line });
  }

  remove(path: string): void {
    this.#files.push({ op: 'remove', path: relativeTo(this.#paths.home, path) });
  }

  /** Move `from` (a file or a directory of the home) to `to`, which must not exist yet. */
  rename(from: string, to: string): void {
    this.#files.push({ op: 'rename', from: relativeTo(this.#paths.home, from), path: relativeTo(this.#paths.home, to) });
  }

  /** The vault's side of the change: recovery once the writer lock is held, and the sealed file staged here. */
  vaultStage(): VaultStage {
    return {
      recover: async () => {
        await finishPendingChangeLocked(this.#paths);
      },
      replace: (path, file) => {
        this.write(path, file);
        return Promise.resolve();
      },
    };
  }

  /** Record, files, record removed. The caller holds the locks of every file staged. */
  async commit(): Promise<void> {
    if (this.#committed) throw new PosternError('INTERNAL', 'a home change is committed once');
    this.#committed = true;
    if (this.#files.length === 0) return;
    const files = [...this.#files];
    const record: ChangeRecord = { format: CHANGE_RECORD_FORMAT, command: this.#command, files, digest: digestOf(this.#command, files) };
    await atomicWriteFile(this.#paths.changeRecord, JSON.stringify(record));
    await applyRecord(this.#paths.home, record);
    await removeDurably(this.#paths.changeRecord);
  }
}
