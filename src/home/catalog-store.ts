/**
 * Where the catalog lives on disk and how an accepted one is stored:
 *   catalog.yaml            the file the operator edits (and an agent might)
 *   catalog.accepted.yaml   an exact copy of the last accepted file
 *   catalog.accepted.json   { record, mac }: sequence, digest, time,
 *                           predecessor, authenticated with the vault's
 *                           catalog-mac key
 *   catalog.history.jsonl   one { record, mac } line per acceptance: a chain
 *                           (sequence +1, previous_digest) of MAC'd records
 *   catalog.archive/        every accepted text as <digest>.yaml, kept so an
 *                           audit bundle can carry the revisions older calls
 *                           ran under; only ever read back through its digest
 * and the vault payload keeps the last acceptance's sequence and digest (the
 * high-water mark), written by `catalog accept` under the passphrase.
 *
 * The daemon only ever uses the accepted copy, and only when the record's MAC
 * verifies, the record agrees with the vault's mark (at start) or chains from
 * the acceptance in use (while running), and the copy's bytes hash to the
 * recorded digest. Editing catalog.yaml changes nothing until `postern catalog
 * accept`; deleting, forging or putting back an older record is an alarm.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import {
  catalogDigest,
  judgeAcceptance,
  parseCatalog,
  type AcceptanceMark,
  type Catalog,
  type CatalogState,
  type SignedRecord,
  type StoredRecord,
} from '../contracts/index.js';
import { PosternError } from '../rules/errors.js';
import type { HomeChange } from './change-record.js';
import type { HomePaths } from './paths.js';

const Hex64 = z.string().regex(/^[0-9a-f]{64}$/);
const LegacyRecordSchema = z
  .object({ format: z.literal('postern.catalog-acceptance/1'), digest: Hex64, accepted_at: z.string(), previous_digest: Hex64.nullable() })
  .strict();
const RecordSchema = z
  .object({
    format: z.literal('postern.catalog-acceptance/2'),
    sequence: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
    digest: Hex64,
    accepted_at: z.string(),
    previous_digest: Hex64.nullable(),
    forced: z.boolean(),
    changes: z.number().int().min(0),
  })
  .strict();
const StoredSchema = z.object({ record: z.union([RecordSchema, LegacyRecordSchema]), mac: z.string() }).strict();

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

function parseSigned(text: string): SignedRecord | 'malformed' {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return 'malformed';
  }
  const r = StoredSchema.safeParse(parsed);
  return r.success ? r.data : 'malformed';
}

/** The record file as it is: missing, malformed, or a record with its MAC (not yet checked). */
export async function readAcceptance(paths: Pick<HomePaths, 'acceptedRecord'>): Promise<StoredRecord> {
  const raw = await readOptional(paths.acceptedRecord);
  if (raw === undefined) return { kind: 'missing' };
  const s = parseSigned(raw);
  return s === 'malformed' ? { kind: 'malformed', why: `${paths.acceptedRecord} is not an acceptance record` } : { kind: 'stored', ...s };
}

type HistoryLine = SignedRecord | 'legacy' | 'malformed';

/** catalog.history.jsonl, line by line: signed records, legacy (0.1, unsigned) lines, or malformed ones. */
export async function readHistory(paths: HomePaths): Promise<HistoryLine[]> {
  return (await readHistoryLines(paths)).map((l) => l.parsed);
}

/** The same, with each line's exact text (re-authentication keeps lines it cannot verify as they were). */
export async function readHistoryLines(paths: HomePaths): Promise<{ readonly text: string; readonly parsed: HistoryLine }[]> {
  const text = await readOptional(paths.catalogHistory);
  if (text === undefined) return [];
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => ({ text: l, parsed: parseHistoryLine(l) }));
}

function parseHistoryLine(l: string): HistoryLine {
  const s = parseSigned(l);
  if (s !== 'malformed') return s;
  try {
    const o = JSON.parse(l) as { format?: unknown };
    return o.format === 'postern.catalog-acceptance/1' ? 'legacy' : 'malformed';
  } catch {
    return 'malformed';
  }
}

export const signedOnly = (lines: readonly HistoryLine[]): SignedRecord[] => lines.filter((l): l is SignedRecord => typeof l !== 'string');

interface HomeAcceptance {
  readonly state: CatalogState;
  readonly stored: StoredRecord;
  readonly file: CatalogFile | undefined;
}

/** Where the catalog stands, judged with the vault's catalog-mac key and its acceptance mark. */
export async function currentCatalogState(paths: HomePaths, key: Uint8Array, mark: AcceptanceMark | null): Promise<HomeAcceptance> {
  const file = await readCatalogFile(paths.catalog);
  const stored = await readAcceptance(paths);
  const history = await readOptional(paths.catalogHistory);
  const state = judgeAcceptance({ fileDigest: file?.digest, stored, key, mark, historyExists: history !== undefined && history.trim() !== '' });
  return { state, stored, file };
}

/** The accepted copy's text, if its bytes are exactly `digest`. */
export async function readAcceptedCopy(paths: HomePaths, digest: string): Promise<string | undefined> {
  const text = await readOptional(paths.acceptedCatalog);
  return text !== undefined && catalogDigest(text) === digest ? text : undefined;
}

const archived = (paths: HomePaths, digest: string): string => join(paths.catalogArchive, `${digest}.yaml`);

/**
 * The accepted text of any catalog ever accepted here, by its digest: the
 * accepted copy, else the archive. A text is returned only when it hashes to
 * the digest asked for, so an edited archive file is simply not found.
 */
export async function readAcceptedText(paths: HomePaths, digest: string): Promise<string | undefined> {
  if (!/^[0-9a-f]{64}$/.test(digest)) return undefined;
  const current = await readAcceptedCopy(paths, digest);
  if (current !== undefined) return current;
  const text = await readOptional(archived(paths, digest));
  return text !== undefined && catalogDigest(text) === digest ? text : undefined;
}

async function stageArchive(paths: HomePaths, change: HomeChange, text: string): Promise<void> {
  const file = archived(paths, catalogDigest(text));
  if ((await readOptional(file)) !== text) change.write(file, text);
}

interface AcceptedCatalog {
  readonly catalog: Catalog;
  readonly digest: string;
  readonly sequence: number;
  readonly acceptedAt: string;
  /** The operator's file differs from what is in use. */
  readonly pending: boolean;
}

/** The error an alarm state is reported with (daemon start, `catalog show --verify`). */
export function alarmError(state: Extract<CatalogState, { state: 'alarm' }>): PosternError {
  const code = state.alarm === 'rolled_back' || state.alarm === 'vault_behind' ? 'CATALOG_ROLLED_BACK' : 'CATALOG_UNAUTHENTICATED';
  return new PosternError(code, `${state.message}; nothing was loaded: review the catalog with \`postern catalog accept\``, { details: { alarm: state.alarm } });
}

/**
 * The catalog the daemon may use at start: the accepted copy, authenticated
 * by the record and the vault's mark. Undefined when nothing was ever
 * accepted; CATALOG_UNAUTHENTICATED / CATALOG_ROLLED_BACK otherwise.
 */
export async function loadAcceptedCatalog(paths: HomePaths, key: Uint8Array, mark: AcceptanceMark | null, knownCredentials?: ReadonlySet<string>): Promise<AcceptedCatalog | undefined> {
  const { state, stored } = await currentCatalogState(paths, key, mark);
  if (state.state === 'alarm') throw alarmError(state);
  if (state.state === 'no_catalog' || state.state === 'unaccepted' || stored.kind !== 'stored') return undefined;
  const digest = state.state === 'accepted' ? state.digest : state.acceptedDigest;
  return loadCopy(paths, digest, state.sequence, stored.record.accepted_at, state.state === 'pending', knownCredentials);
}

/** The accepted copy for a record already judged authentic. */
export async function loadCopy(paths: HomePaths, digest: string, sequence: number, acceptedAt: string, pending: boolean, knownCredentials?: ReadonlySet<string>): Promise<AcceptedCatalog> {
  const text = await readAcceptedCopy(paths, digest);
  if (text === undefined) {
    throw new PosternError('CATALOG_UNAUTHENTICATED', `${paths.acceptedCatalog} does not match the accepted digest: review the catalog with \`postern catalog accept\``);
  }
  const catalog = parseCatalog(text, paths.acceptedCatalog, knownCredentials);
  return { catalog, digest, sequence, acceptedAt, pending };
}

/**
 * Stages, into the change that also holds the vault's new mark: the archive
 * (the copy being replaced, for a home from before the archive, and the new
 * text), the copy, the record that vouches for it, and the history line.
 */
export async function stageAcceptance(paths: HomePaths, change: HomeChange, text: string, signed: SignedRecord): Promise<void> {
  const previous = await readOptional(paths.acceptedCatalog);
  if (previous !== undefined && signed.record.previous_digest === catalogDigest(previous)) await stageArchive(paths, change, previous);
  await stageArchive(paths, change, text);
  change.write(paths.acceptedCatalog, text);
  change.write(paths.acceptedRecord, `${JSON.stringify(signed, null, 2)}\n`);
  change.append(paths.catalogHistory, JSON.stringify(signed));
}
