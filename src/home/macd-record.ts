/**
 * A small JSON record in the home, MAC'd under a key derived from the vault:
 * the one way the home keeps operator decisions an agent that edits files
 * must not be able to make (the HTTP listener's and the approval page's
 * authorizations, the paired devices). The file is `{record, mac}`; the MAC
 * is HMAC-SHA-256 over a domain string (one per kind of record) and the
 * record's canonical JSON.
 *
 * Invariants: the MAC is checked in constant time; a record that does not
 * parse, or a MAC of the wrong shape, verifies nothing; reading never throws
 * for a missing or malformed file (it says which), only for an I/O failure.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { canonicalJson } from '../rules/canonical.js';
import { PosternError } from '../rules/errors.js';
import { atomicWriteFile } from './atomic-write.js';
import type { HomePaths } from './paths.js';

/** One kind of MAC'd record: its file, its domain string, its shape, and how the operator makes it again. */
export interface MacdRecordKind<R> {
  readonly name: string;
  readonly domain: string;
  readonly schema: z.ZodType<R>;
  readonly file: (paths: HomePaths) => string;
  /** What to run when it does not verify, e.g. "run `postern http enable`". */
  readonly redo: string;
}

export type ReadMacdRecord<R> =
  | { readonly kind: 'none' }
  | { readonly kind: 'malformed' }
  | { readonly kind: 'stored'; readonly stored: { readonly record: R; readonly mac: string } };

export function recordMac(key: Uint8Array, domain: string, record: unknown): string {
  return createHmac('sha256', key).update(domain).update(canonicalJson(record)).digest('hex');
}

export function macVerifies(key: Uint8Array, domain: string, record: unknown, mac: string): boolean {
  const expected = Buffer.from(recordMac(key, domain, record), 'hex');
  const given = /^[0-9a-f]{64}$/.test(mac) ? Buffer.from(mac, 'hex') : Buffer.alloc(0);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export async function readMacdRecord<S extends z.ZodType>(file: string, record: S): Promise<ReadMacdRecord<z.infer<S>>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'none' };
    throw new PosternError('FILE_IO', `cannot read ${file}`);
  }
  try {
    const doc: unknown = JSON.parse(text);
    const shape = z.object({ record: z.unknown(), mac: z.string().max(128) }).strict().safeParse(doc);
    if (!shape.success) return { kind: 'malformed' };
    const r = record.safeParse(shape.data.record);
    return r.success ? { kind: 'stored', stored: { record: r.data, mac: shape.data.mac } } : { kind: 'malformed' };
  } catch {
    return { kind: 'malformed' };
  }
}

export async function writeMacdRecord(file: string, key: Uint8Array, domain: string, record: unknown): Promise<void> {
  await atomicWriteFile(file, `${JSON.stringify({ record, mac: recordMac(key, domain, record) }, null, 2)}\n`);
}
