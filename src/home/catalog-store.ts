/**
 * Where the catalog lives on disk and how an accepted one is stored:
 *   catalog.yaml            the file the operator edits (and an agent might)
 *   catalog.accepted.yaml   an exact copy of the last accepted file
 *   catalog.accepted.json   { record, mac }: its digest, time, predecessor,
 *                           authenticated with the vault's catalog-mac key
 *   catalog.history.jsonl   one line per acceptance (append-only)
 * The daemon only ever uses the accepted copy, and only when its MAC verifies
 * and its bytes hash to the recorded digest. Editing catalog.yaml changes
 * nothing until `postern catalog accept` (which needs the passphrase).
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import {
  catalogDigest,
  catalogState,
  parseCatalog,
  verifyAcceptance,
  type AcceptanceRecord,
  type Catalog,
  type CatalogState,
} from '../contracts/index.js';
import { PosternError } from '../protocol/errors.js';
import { appendLineDurably, atomicWriteFile } from './atomic-write.js';
import type { HomePaths } from './paths.js';

const StoredSchema = z
  .object({
    record: z
      .object({
        format: z.literal('postern.catalog-acceptance/1'),
        digest: z.string().regex(/^[0-9a-f]{64}$/),
        accepted_at: z.string(),
        previous_digest: z.string().regex(/^[0-9a-f]{64}$/).nullable(),
      })
      .strict(),
    mac: z.string(),
  })
  .strict();

export interface StoredAcceptance {
  readonly record: AcceptanceRecord;
  readonly mac: string;
}

export interface CatalogFile {
  readonly path: string;
  readonly text: string;
  readonly digest: string;
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new PosternError('FILE_IO', `cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}

export async function readCatalogFile(path: string): Promise<CatalogFile | undefined> {
  const text = await readOptional(path);
  return text === undefined ? undefined : { path, text, digest: catalogDigest(text) };
}

export async function readAcceptance(paths: HomePaths): Promise<StoredAcceptance | undefined> {
  const raw = await readOptional(paths.acceptedRecord);
  if (raw === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new PosternError('CATALOG_UNAUTHENTICATED', `${paths.acceptedRecord} is not valid JSON; accept the catalog again`);
  }
  const r = StoredSchema.safeParse(parsed);
  if (!r.success) throw new PosternError('CATALOG_UNAUTHENTICATED', `${paths.acceptedRecord} is malformed; accept the catalog again`);
  return r.data;
}

/** Where the catalog stands, judged with the vault's catalog-mac key. */
export async function currentCatalogState(paths: HomePaths, key: Uint8Array): Promise<{ state: CatalogState; stored: StoredAcceptance | undefined; file: CatalogFile | undefined }> {
  const file = await readCatalogFile(paths.catalog);
  const stored = await readAcceptance(paths);
  const state = catalogState(file?.digest, stored === undefined ? undefined : { ...stored, key });
  return { state, stored, file };
}

export interface AcceptedCatalog {
  readonly catalog: Catalog;
  readonly digest: string;
  readonly acceptedAt: string;
  /** The operator's file differs from what is in use. */
  readonly pending: boolean;
}

/**
 * The catalog the daemon may use: the accepted copy, authenticated. Returns
 * undefined when nothing was ever accepted. Credentials are not checked here:
 * one removed from the vault since the acceptance fails its tools at call time
 * (CREDENTIAL_MISSING), never the whole catalog.
 */
export async function loadAcceptedCatalog(paths: HomePaths, key: Uint8Array): Promise<AcceptedCatalog | undefined> {
  const { state, stored } = await currentCatalogState(paths, key);
  if (stored === undefined) return undefined;
  if (verifyAcceptance(key, stored.record, stored.mac).kind !== 'authentic') {
    throw new PosternError('CATALOG_UNAUTHENTICATED', 'the accepted-catalog record does not verify with this vault: run `postern catalog accept` again');
  }
  const text = await readOptional(paths.acceptedCatalog);
  if (text === undefined || catalogDigest(text) !== stored.record.digest) {
    throw new PosternError('CATALOG_UNAUTHENTICATED', `${paths.acceptedCatalog} does not match the accepted digest: run \`postern catalog accept\` again`);
  }
  const catalog = parseCatalog(text, paths.acceptedCatalog);
  return { catalog, digest: stored.record.digest, acceptedAt: stored.record.accepted_at, pending: state.state === 'pending' };
}

/** Stores an acceptance: the copy first, then the record that vouches for it, then the history line. */
export async function writeAcceptance(paths: HomePaths, text: string, stored: StoredAcceptance, summary: Record<string, unknown>): Promise<void> {
  await atomicWriteFile(paths.acceptedCatalog, text);
  await atomicWriteFile(paths.acceptedRecord, `${JSON.stringify(stored, null, 2)}\n`);
  await appendLineDurably(paths.catalogHistory, JSON.stringify({ ...stored.record, ...summary }));
}
