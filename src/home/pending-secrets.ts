/**
 * Secrets received but not yet saved to the vault (`secrets.pending`): a
 * refresh token a token endpoint rotated is refused by it from the moment it
 * answered, so the daemon writes the new value here — one small file,
 * encrypted, fsynced, renamed into place — before anything else, then saves
 * it to the vault, then drops it from here. The next daemon start folds what
 * it finds into the vault (only over the value that was sent: an operator's
 * rotate meanwhile wins), so only a kill before the answer was read can lose
 * a rotated token.
 *
 * Invariants: the file holds nothing in the clear — ChaCha20-Poly1305 under
 * the vault's `pending-secret` derived key (FORMAT.md §6), with the format
 * as associated data, a fresh nonce per write; a file that does not open with
 * the key is reported as unreadable, never partly used; `postern passwd`
 * re-encrypts it under the new key with the rest of its change (rekey.ts).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import type { UnlockedVault, VaultUnlock } from '../vault/index.js';
import { PosternError } from '../rules/errors.js';
import { atomicWriteFile, removeDurably } from './atomic-write.js';
import type { HomePaths } from './paths.js';
import { writeVault, type WriterContext } from './vault-write.js';

export const PENDING_SECRETS_FORMAT = 'postern.pending-secrets/1';

/** One secret part of a credential, received but not yet in the vault. */
export interface PendingSecret {
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

export function sealPendingSecrets(key: Uint8Array, entries: readonly PendingSecret[]): string {
  const nonce = randomBytes(12);
  const c = createCipheriv('chacha20-poly1305', key, nonce, { authTagLength: 16 });
  c.setAAD(AD, { plaintextLength: 0 });
  const plain = Buffer.from(JSON.stringify(entries.map((e) => ({ name: e.name, part: e.part, sent: Buffer.from(e.sent).toString('base64'), next: Buffer.from(e.next).toString('base64') }))));
  const sealed = Buffer.concat([c.update(plain), c.final(), c.getAuthTag()]);
  plain.fill(0);
  return `${JSON.stringify({ format: PENDING_SECRETS_FORMAT, nonce: nonce.toString('base64'), sealed: sealed.toString('base64') })}\n`;
}

/** The entries of a sealed file, or 'unreadable' when it does not parse or does not open with `key`. */
export function openPendingSecrets(key: Uint8Array, text: string): PendingSecret[] | 'unreadable' {
  try {
    const f = FileSchema.parse(JSON.parse(text));
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

export async function readPendingText(paths: HomePaths): Promise<string | undefined> {
  try {
    return await readFile(paths.pendingSecrets, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new PosternError('FILE_IO', `cannot read ${paths.pendingSecrets}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`, { cause: e });
  }
}

async function current(paths: HomePaths, key: Uint8Array): Promise<PendingSecret[]> {
  const text = await readPendingText(paths);
  if (text === undefined) return [];
  const found = openPendingSecrets(key, text);
  return found === 'unreadable' ? [] : found;
}

const same = (a: Uint8Array, b: Uint8Array): boolean => Buffer.from(a).equals(Buffer.from(b));

/** Writes `entry` durably (replacing one for the same credential part) before anything else is done with it. */
export async function holdPendingSecret(paths: HomePaths, key: Uint8Array, entry: PendingSecret): Promise<void> {
  const kept = (await current(paths, key)).filter((e) => e.name !== entry.name || e.part !== entry.part);
  await atomicWriteFile(paths.pendingSecrets, sealPendingSecrets(key, [...kept, entry]));
}

/** Drops `entry` once the vault holds it (or decided against it); the file goes with its last entry. */
export async function releasePendingSecret(paths: HomePaths, key: Uint8Array, entry: Pick<PendingSecret, 'name' | 'part' | 'next'>): Promise<void> {
  const all = await current(paths, key);
  const kept = all.filter((e) => e.name !== entry.name || e.part !== entry.part || !same(e.next, entry.next));
  if (kept.length === all.length) return;
  if (kept.length === 0) await removeDurably(paths.pendingSecrets);
  else await atomicWriteFile(paths.pendingSecrets, sealPendingSecrets(key, kept));
}

/** Puts each pending value into the vault where the vault still holds the value it replaces; returns how many. */
export function foldPendingSecrets(v: UnlockedVault, entries: readonly PendingSecret[]): number {
  let folded = 0;
  for (const e of entries) {
    const cur = v.get(e.name);
    const stored = cur?.secret[e.part];
    if (cur === undefined || stored === undefined || !same(stored, e.sent)) continue;
    v.rotate(e.name, { ...cur.secret, [e.part]: e.next }, { ...cur.meta.fields });
    folded++;
  }
  return folded;
}

/**
 * At daemon start, before the vault is read for use: what a killed daemon
 * left pending goes into the vault, and the file goes, in one home change.
 * Returns how many values were folded; 'unreadable' (logged by the caller,
 * the file left as it is) when it does not open with this vault.
 */
export async function foldPendingIntoVault(ctx: WriterContext, unlock: VaultUnlock): Promise<number | 'none' | 'unreadable'> {
  if ((await readPendingText(ctx.paths)) === undefined) return 'none';
  const { result } = await writeVault<number | 'none' | 'unreadable'>(
    ctx,
    unlock,
    async (v) => {
      const text = await readPendingText(ctx.paths);
      if (text === undefined) return 'none';
      const entries = openPendingSecrets(v.deriveKey('pending-secret'), text);
      return entries === 'unreadable' ? entries : foldPendingSecrets(v, entries);
    },
    (r, _saved, change) => {
      if (typeof r === 'number') change.remove(ctx.paths.pendingSecrets);
      return Promise.resolve();
    },
    'fold pending secrets',
  );
  return result;
}
