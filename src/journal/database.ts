/**
 * Opening a journal database safely, and turning every SQLite failure into
 * JOURNAL_UNAVAILABLE.
 *
 * Invariants:
 * - the journal directory is a real directory (not a symlink) owned by us with
 *   mode 0700; a database file is a regular file owned by us, created 0600 (the
 *   -wal/-shm files inherit its mode); anything looser → HOME_UNSAFE;
 * - every connection runs WAL with synchronous=FULL (a commit is on disk when
 *   the call returns) and a short busy timeout, so a locked journal fails fast
 *   instead of hanging a call;
 * - a file is accepted only if its application_id and user_version say it is
 *   this kind of Postern journal at a schema version we understand; a writer
 *   migrates an older one step by step (`migrate`), a read-only open reads it
 *   as it is (every query works on every version, only the plans differ);
 * - `guard` maps any failure except a deliberate PosternError to
 *   JOURNAL_UNAVAILABLE with a one-line message built from the SQLite code
 *   only (never from row content), so no stored value can leak into it.
 */
import { closeSync, constants, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { isDamage } from './chain.js';
import { PosternError } from '../rules/errors.js';

export type JournalName = 'sessions' | 'activity';

export interface SchemaSpec {
  readonly name: JournalName;
  readonly file: string;
  readonly applicationId: number;
  readonly version: number;
  /** DDL for an empty database at `version`. */
  readonly ddl: string;
  /** The steps from META_VERSION up to `version`, oldest first; each is run once, in its own transaction. */
  readonly migrations?: readonly SchemaMigration[];
}

/** One schema step: `ddl` takes a file at the previous version to `version` (no row may change: rows are chained). */
interface SchemaMigration {
  readonly version: number;
  readonly ddl: string;
}

/** Long enough to ride out another writer's commit, short enough to fail a call fast. */
export const BUSY_TIMEOUT_MS = 1500;

const SQLITE_REASONS: ReadonlyArray<readonly [string, string]> = [
  ['SQLITE_BUSY', 'the journal is locked by another process'],
  ['SQLITE_LOCKED', 'the journal is locked'],
  ['SQLITE_READONLY', 'the journal is read-only'],
  ['SQLITE_FULL', 'the disk is full'],
  ['SQLITE_CORRUPT', 'the journal file is corrupt'],
  ['SQLITE_NOTADB', 'the journal file is not a database'],
  ['SQLITE_CANTOPEN', 'the journal file cannot be opened'],
  ['SQLITE_PERM', 'permission denied'],
  ['SQLITE_IOERR', 'an I/O error occurred'],
];

function errnoOf(e: unknown): string | undefined {
  return typeof e === 'object' && e !== null && 'code' in e && typeof e.code === 'string' ? e.code : undefined;
}

function reasonOf(e: unknown): { why: string; code: string | null } {
  if (e instanceof Database.SqliteError) {
    const found = SQLITE_REASONS.find(([prefix]) => e.code.startsWith(prefix));
    return { why: found?.[1] ?? 'a database error occurred', code: e.code };
  }
  if (e instanceof TypeError && /not open/.test(e.message)) return { why: 'the journal is closed', code: null };
  const errno = errnoOf(e);
  if (errno === 'ENOSPC') return { why: 'the disk is full', code: errno };
  if (errno !== undefined) return { why: `the file system refused (${errno})`, code: errno };
  return { why: 'an unexpected failure occurred', code: null };
}

export function journalError(name: JournalName | 'journal', action: string, e: unknown): PosternError {
  if (e instanceof PosternError) return e;
  const { why, code } = reasonOf(e);
  const label = name === 'journal' ? name : `${name} journal`;
  if (isDamage(e)) {
    return new PosternError(
      'JOURNAL_DAMAGED',
      `${label}: cannot ${action}: ${why} (${code}); nothing more is run over it. Keep a copy of the journal directory, then \`postern audit verify\` names the unreadable entries (docs/audit.md, "A damaged journal")`,
      { details: { journal: name, error: code }, cause: e },
    );
  }
  return new PosternError('JOURNAL_UNAVAILABLE', `${label}: cannot ${action}: ${why}${code === null ? '' : ` (${code})`}`, {
    details: { journal: name, error: code },
    cause: e,
  });
}

/** Runs a journal operation; any failure surfaces as a PosternError. */
export function guard<T>(name: JournalName | 'journal', action: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw journalError(name, action, e);
  }
}

function unsafe(path: string, problem: string, fix: string): PosternError {
  return new PosternError('HOME_UNSAFE', `${path} ${problem}; fix: ${fix}`, { details: { path, fix } });
}

function checkOwnerAndMode(path: string, uid: number, mode: number, expected: string): void {
  if (typeof process.getuid === 'function' && uid !== process.getuid()) {
    throw unsafe(path, `is owned by uid ${uid}, not by you`, 'use a journal directory you own');
  }
  if ((mode & 0o077) !== 0) {
    throw unsafe(path, `has mode ${(mode & 0o777).toString(8)}, expected ${expected}`, `chmod ${expected} ${path}`);
  }
}

/** Creates the journal directory (0700) if missing; refuses an unsafe existing one. */
export function ensureJournalDir(dir: string): void {
  try {
    const created = mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (created !== undefined) {
      // mkdir applies the umask; set the mode exactly.
      const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      try {
        fchmodSync(fd, 0o700);
      } finally {
        closeSync(fd);
      }
    }
  } catch (e) {
    throw journalError('journal', 'create the journal directory', e);
  }
  const st = guard('journal', 'inspect the journal directory', () => lstatSync(dir));
  if (st.isSymbolicLink()) throw unsafe(dir, 'is a symbolic link', 'replace it with a real directory');
  if (!st.isDirectory()) throw unsafe(dir, 'is not a directory', 'move it away');
  checkOwnerAndMode(dir, st.uid, st.mode, '700');
}

/** Makes sure the database file exists as a private regular file before SQLite opens it. */
function prepareFile(path: string, spec: SchemaSpec, readonly: boolean): void {
  const flags = readonly
    ? constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK
    : constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;
  let fd: number;
  try {
    fd = openSync(path, flags, 0o600);
  } catch (e) {
    if (errnoOf(e) === 'ELOOP') throw unsafe(path, 'is a symbolic link', 'replace it with the journal file itself');
    if (errnoOf(e) === 'ENOENT') {
      throw new PosternError('JOURNAL_UNAVAILABLE', `${spec.name} journal: ${path} does not exist`, { details: { journal: spec.name, error: 'ENOENT' } });
    }
    throw journalError(spec.name, `open ${path}`, e);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw unsafe(path, 'is not a regular file', 'move it away');
    // A fresh (empty) file gets its mode set exactly, whatever the umask did.
    if (st.size === 0 && !readonly) fchmodSync(fd, 0o600);
    const mode = st.size === 0 && !readonly ? 0o600 : st.mode;
    checkOwnerAndMode(path, st.uid, mode, '600');
  } finally {
    closeSync(fd);
  }
}

/**
 * Every journal file carries `meta`: its journal id, a random value made when
 * the file is created (both files of one journal share it). The anchor records
 * it, so a file from elsewhere — or a fresh one in place of a deleted or
 * emptied file — is told from the journal that was anchored.
 */
const META_DDL = 'CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;';
/** The schema version that added `meta`; older files are migrated (without an id: they were never anchored). */
const META_VERSION = 2;

function initialize(db: Database.Database, spec: SchemaSpec, journalId: string): void {
  db.transaction(() => {
    // Another process may have initialized the file while we waited for the lock.
    if (db.pragma('user_version', { simple: true }) !== 0) return;
    const tables = db.prepare('SELECT count(*) FROM sqlite_schema').pluck().get() as number;
    if (tables !== 0) throw new PosternError('JOURNAL_UNAVAILABLE', `${spec.name} journal: the file is not a Postern journal`);
    db.exec(spec.ddl);
    db.exec(META_DDL);
    db.prepare(`INSERT INTO meta (key, value) VALUES ('journal_id', ?)`).run(journalId);
    db.pragma(`application_id = ${spec.applicationId}`);
    db.pragma(`user_version = ${spec.version}`);
  }).immediate();
}

/**
 * Brings an older file up to `spec.version`, one step per transaction (the
 * `meta` table first, then the spec's own steps). Each step re-reads the
 * version under the write lock, so a step another process already ran is
 * skipped, and a failed step leaves the file at the version before it.
 */
function migrate(db: Database.Database, spec: SchemaSpec): void {
  const steps: readonly SchemaMigration[] = [{ version: META_VERSION, ddl: META_DDL }, ...(spec.migrations ?? [])];
  for (const step of steps) {
    db.transaction(() => {
      if ((db.pragma('user_version', { simple: true }) as number) >= step.version) return;
      db.exec(step.ddl);
      db.pragma(`user_version = ${step.version}`);
    }).immediate();
  }
}

/** The file's journal id, or null for a file that has none (made before journal ids existed). */
export function journalIdOf(db: Database.Database): string | null {
  try {
    const v = db.prepare(`SELECT value FROM meta WHERE key = 'journal_id'`).pluck().get();
    return typeof v === 'string' ? v : null;
  } catch {
    return null;
  }
}

/** Opens (creating if needed, with `journalId`) one journal database in `dir`. */
export function openJournalDb(dir: string, spec: SchemaSpec, readonly: boolean, journalId: string): Database.Database {
  const path = join(dir, spec.file);
  prepareFile(path, spec, readonly);
  let db: Database.Database | undefined;
  try {
    db = new Database(path, { readonly, fileMustExist: true, timeout: BUSY_TIMEOUT_MS });
    db.pragma('trusted_schema = OFF');
    if (!readonly && db.pragma('journal_mode = WAL', { simple: true }) !== 'wal') {
      throw new PosternError('JOURNAL_UNAVAILABLE', `${spec.name} journal: cannot switch ${path} to WAL mode`);
    }
    db.pragma('synchronous = FULL');
    let version = db.pragma('user_version', { simple: true }) as number;
    if (version === 0 && !readonly) {
      initialize(db, spec, journalId);
      version = db.pragma('user_version', { simple: true }) as number;
    }
    if (version > 0 && version < spec.version && !readonly && db.pragma('application_id', { simple: true }) === spec.applicationId) {
      migrate(db, spec);
      version = db.pragma('user_version', { simple: true }) as number;
    }
    if (db.pragma('application_id', { simple: true }) !== spec.applicationId || version === 0) {
      throw new PosternError('JOURNAL_UNAVAILABLE', `${spec.name} journal: ${path} is not a Postern ${spec.name} journal`);
    }
    if (version > spec.version) {
      throw new PosternError(
        'JOURNAL_UNAVAILABLE',
        `${spec.name} journal: ${path} has schema version ${version}, newer than this Postern (${spec.version}); upgrade Postern`,
      );
    }
    return db;
  } catch (e) {
    db?.close();
    throw journalError(spec.name, `open ${path}`, e);
  }
}
