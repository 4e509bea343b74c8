/**
 * Secrets received but not yet saved to the vault (`secrets.pending`): a
 * refresh token a token endpoint rotated is refused by it from the moment it
 * answered, so the daemon appends the new value here before anything else,
 * then saves it to the vault, then drops it from here. The next daemon start
 * folds what it finds into the vault (only over the value that was sent: an
 * operator's rotate meanwhile wins).
 *
 * The file is an append-only log of sealed lines, and it exists before any
 * token is received (the daemon's start leaves it, empty when nothing is
 * pending), so holding a value is one append — one write, then one fsync —
 * with no create and no rename between the answer and the value on disk.
 * Every prefix of the write-back's file events leaves the value findable: a
 * kill after the write (the page cache outlives the process) or after the
 * fsync (a power loss too) finds the line at the next start; a kill inside
 * the vault save leaves the old vault (the line folds) or the new one (the
 * line is skipped: the vault no longer holds what it replaced); a kill inside
 * the drop leaves the line or not, both harmless. Only a kill before the
 * answer was read and its line written can lose a rotated token.
 *
 * Invariants: nothing in the clear — each line is ChaCha20-Poly1305 under the
 * vault's `pending-secret` derived key (FORMAT.md §6), with the format as
 * associated data and a fresh nonce; a line that does not open with the key
 * (a torn last append, another vault's key) is never partly used: it is
 * counted, reported and kept as it is; appends and rewrites of one file are
 * serialised in the process, so two credentials rotating at once never drop
 * each other's line; `postern passwd` re-encrypts the lines that open under
 * the new key with the rest of its change (rekey.ts).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { open, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import type { UnlockedVault, VaultUnlock } from '../vault/index.js';
import { fileEvent } from '../vault/file-events.js';
import { PosternError } from '../rules/errors.js';
import { atomicWriteFile, fsyncDir } from './atomic-write.js';
import type { HomePaths } from './paths.js';
import { writeVault, type WriterContext } from './vault-write.js';

const PENDING_SECRETS_FORMAT = 'postern.pending-secrets/1';

/** One secret part of a credential, received but not yet in the vault. */
interface PendingSecret {
  readonly name: string;
  readonly part: string;
  /** The value it replaces (the one sent to the issuer). */
  readonly sent: Uint8Array;
  readonly next: Uint8Array;
}

const B64 = z.string().max(200_000).regex(/^[A-Za-z0-9+/]*={0,2}$/);
const FileSchema = z.object({ format: z.literal(PENDING_SECRETS_FORMAT), nonce: B64, sealed: B64 }).strict();
const EntriesSchema = z.array(z.object({ name: z.string().min(1).max(64), part: z.string().min(1).max(32), sent: B64, next: B64 }).strict()).max(256);

const AD = Buffer.from(PENDING_SECRETS_FORMAT);

function sealPendingSecrets(key: Uint8Array, entries: readonly PendingSecret[]): string {
  const nonce = randomBytes(12);
  const c = createCipheriv('chacha20-poly1305', key, nonce, { authTagLength: 16 });
  c.setAAD(AD, { plaintextLength: 0 });
  const plain = Buffer.from(JSON.stringify(entries.map((e) => ({ name: e.name, part: e.part, sent: Buffer.from(e.sent).toString('base64'), next: Buffer.from(e.next).toString('base64') }))));
  const sealed = Buffer.concat([c.update(plain), c.final(), c.getAuthTag()]);
  plain.fill(0);
  return `${JSON.stringify({ format: PENDING_SECRETS_FORMAT, nonce: nonce.toString('base64'), sealed: sealed.toString('base64') })}\n`;
}

/** The entries of one sealed line, or 'unreadable' when it does not parse or does not open with `key`. */
function openLine(key: Uint8Array, line: string): PendingSecret[] | 'unreadable' {
  try {
    const f = FileSchema.parse(JSON.parse(line));
    const sealed = Buffer.from(f.sealed, 'base64');
    if (sealed.length < 16) return 'unreadable';
    const d = createDecipheriv('chacha20-poly1305', key, Buffer.from(f.nonce, 'base64'), { authTagLength: 16 });
    d.setAAD(AD, { plaintextLength: 0 });
    d.setAuthTag(sealed.subarray(sealed.length - 16));
    const plain = Buffer.concat([d.update(sealed.subarray(0, sealed.length - 16)), d.final()]);
    const entries = EntriesSchema.parse(JSON.parse(plain.toString('utf8')));
    plain.fill(0);
    return entries.map((e) => ({ name: e.name, part: e.part, sent: Buffer.from(e.sent, 'base64'), next: Buffer.from(e.next, 'base64') }));
  } catch {
    return 'unreadable';
  }
}

/** What a pending file holds: the entries of the lines that open, in order, and the lines that do not (kept verbatim). */
interface PendingLog {
  readonly entries: PendingSecret[];
  readonly unopened: string[];
}

/** Reads every non-blank line of `text`; a line that does not open is never partly used. */
export function openPendingLog(key: Uint8Array, text: string): PendingLog {
  const entries: PendingSecret[] = [];
  const unopened: string[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const found = openLine(key, line);
    if (found === 'unreadable') unopened.push(line);
    else entries.push(...found);
  }
  return { entries, unopened };
}

/** The entries of a sealed file, or 'unreadable' when any line of it does not open with `key`. */
export function openPendingSecrets(key: Uint8Array, text: string): PendingSecret[] | 'unreadable' {
  const log = openPendingLog(key, text);
  return log.unopened.length > 0 ? 'unreadable' : log.entries;
}

/** The text of a pending file holding `entries` (one sealed line) and the `unopened` lines as they were. */
export function pendingFileText(key: Uint8Array, entries: readonly PendingSecret[], unopened: readonly string[]): string {
  return [...(entries.length === 0 ? [] : [sealPendingSecrets(key, entries)]), ...unopened.map((l) => `${l}\n`)].join('');
}

export async function readPendingText(paths: HomePaths): Promise<string | undefined> {
  try {
    return await readFile(paths.pendingSecrets, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new PosternError('FILE_IO', `cannot read ${paths.pendingSecrets}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`, { cause: e });
  }
}

const same = (a: Uint8Array, b: Uint8Array): boolean => Buffer.from(a).equals(Buffer.from(b));

/** One append or rewrite of a pending file at a time in this process (by path). */
const queues = new Map<string, Promise<unknown>>();
function serialised<T>(path: string, fn: () => Promise<T>): Promise<T> {
  const run = (queues.get(path) ?? Promise.resolve()).then(fn, fn);
  const tail = run.catch(() => undefined);
  queues.set(path, tail);
  void tail.then(() => {
    if (queues.get(path) === tail) queues.delete(path);
  });
  return run;
}

/** Appends `text` and fsyncs it: a file event after the write and after the fsync (and after the create, when the file was missing). */
async function appendDurably(path: string, text: string): Promise<void> {
  let created = false;
  let fh;
  try {
    try {
      fh = await open(path, constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      fh = await open(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
      created = true;
      fileEvent();
    }
    try {
      await fh.write(text);
      fileEvent();
      await fh.sync();
      fileEvent();
    } finally {
      await fh.close();
    }
    if (created) {
      await fsyncDir(dirname(path));
      fileEvent();
    }
  } catch (e) {
    throw new PosternError('FILE_IO', `cannot write ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`, { cause: e });
  }
}

/** Writes `entry` durably — one sealed line appended — before anything else is done with it. */
export async function holdPendingSecret(paths: HomePaths, key: Uint8Array, entry: PendingSecret): Promise<void> {
  // The leading newline ends a line a killed append may have torn, so this one is never glued to it.
  const line = `\n${sealPendingSecrets(key, [entry])}`;
  await serialised(paths.pendingSecrets, () => appendDurably(paths.pendingSecrets, line));
}

/** Drops `entry` once the vault holds it (or decided against it); the file stays, empty with its last entry. */
export async function releasePendingSecret(paths: HomePaths, key: Uint8Array, entry: Pick<PendingSecret, 'name' | 'part' | 'next'>): Promise<void> {
  await serialised(paths.pendingSecrets, async () => {
    const text = await readPendingText(paths);
    if (text === undefined) return;
    const { entries, unopened } = openPendingLog(key, text);
    const kept = entries.filter((e) => e.name !== entry.name || e.part !== entry.part || !same(e.next, entry.next));
    if (kept.length < entries.length) await atomicWriteFile(paths.pendingSecrets, pendingFileText(key, kept, unopened));
    for (const e of entries) wipe(e);
  });
}

function wipe(e: PendingSecret): void {
  e.sent.fill(0);
  e.next.fill(0);
}

/**
 * Puts each pending value into the vault where the vault still holds the
 * value it replaces, in whatever order the lines came (a chain of rotations
 * folds link by link); returns how many.
 */
function foldPendingSecrets(v: UnlockedVault, entries: readonly PendingSecret[]): number {
  const left = [...entries];
  let folded = 0;
  for (let progress = true; progress; ) {
    progress = false;
    for (let i = 0; i < left.length; i++) {
      const e = left[i]!;
      const cur = v.get(e.name);
      const stored = cur?.secret[e.part];
      if (cur === undefined || stored === undefined || !same(stored, e.sent)) continue;
      v.rotate(e.name, { ...cur.secret, [e.part]: e.next }, { ...cur.meta.fields });
      left.splice(i, 1);
      folded++;
      progress = true;
      break;
    }
  }
  return folded;
}

/** What the start did with the pending file. */
interface FoldResult {
  /** Values put into the vault. */
  readonly folded: number;
  /** Lines that do not open with this vault (left in the file as they are). */
  readonly unopened: number;
}

interface Folding extends FoldResult {
  /** Lines that opened (their entries are folded or moot now). */
  readonly opened: number;
  readonly rest: readonly string[];
}

/**
 * At daemon start, before the vault is read for use: what a killed daemon
 * left pending goes into the vault and leaves the file, in one home change;
 * the file is left in place (created empty when missing) so the next hold is
 * a bare append. 'none' when nothing was pending.
 */
export async function foldPendingIntoVault(ctx: WriterContext, unlock: VaultUnlock): Promise<FoldResult | 'none'> {
  const path = ctx.paths.pendingSecrets;
  const before = await readPendingText(ctx.paths);
  if (before === undefined) await atomicWriteFile(path, '');
  if (before === undefined || before.trim() === '') return 'none';
  const { result } = await writeVault<Folding | 'none'>(
    ctx,
    unlock,
    async (v) => {
      const text = await readPendingText(ctx.paths);
      if (text === undefined || text.trim() === '') return 'none';
      const log = openPendingLog(v.deriveKey('pending-secret'), text);
      const folded = foldPendingSecrets(v, log.entries);
      for (const e of log.entries) wipe(e);
      return { folded, unopened: log.unopened.length, opened: log.entries.length, rest: log.unopened };
    },
    (r, _saved, change) => {
      if (r !== 'none' && r.opened > 0) change.write(path, r.rest.map((l) => `${l}\n`).join(''));
      return Promise.resolve();
    },
    'fold pending secrets',
  );
  return result === 'none' ? 'none' : { folded: result.folded, unopened: result.unopened };
}

/** The daemon log's line for a fold, or undefined when nothing was pending. */
export function describeFold(r: FoldResult | 'none', path: string): string | undefined {
  if (r === 'none') return undefined;
  const parts = [`${r.folded} received secret value(s) a stopped daemon had not saved were put into the vault`];
  if (r.unopened > 0) parts.push(`${r.unopened} line(s) of ${path} do not open with this vault: left as they are`);
  return parts.join('; ');
}
