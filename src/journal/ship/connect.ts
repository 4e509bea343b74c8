/**
 * Connecting to the PostgreSQL a team ships journals to, and what a failure
 * there means in Postern's terms. The connection string is a secret (it may
 * hold a password): it is never printed; a failure names the database by its
 * host and name only.
 */
import type pg from 'pg';
import { pg as loadPg } from '../../libraries.js';
import { PosternError } from '../../rules/errors.js';
import { sanitizeForTerminal as clean } from '../../rules/terminal-text.js';

const CONNECT_TIMEOUT_MS = 10_000;
const QUERY_TIMEOUT_MS = 30_000;

/** libpq's URL form allows an empty host (`postgresql://role@/db?host=/run/dir`); WHATWG URLs do not. */
function parseUrl(url: string): URL | null {
  if (!/^postgres(?:ql)?:\/\//.test(url)) return null;
  for (const text of [url, url.replace(/^(postgres(?:ql)?:\/\/(?:[^/?#@]*@)?)(?=[/?#]|$)/, '$1localhost')]) {
    try {
      return new URL(text);
    } catch {
      // the next form
    }
  }
  return null;
}

/** The database a connection string names, without user or password: `host/database`. */
export function describeTarget(url: string): string {
  const u = parseUrl(url);
  if (u === null) return 'the database';
  const host = u.searchParams.get('host') ?? (u.host === '' ? 'localhost' : u.host);
  let db = u.pathname.replace(/^\//, '');
  try {
    db = decodeURIComponent(db);
  } catch {
    // kept as written
  }
  return clean(`${host}/${db === '' ? '(default)' : db}`, 200);
}

/** Refuses what is not a postgres:// or postgresql:// URL (a key=value string would not be recognised as a secret's shape). */
function checkShipUrl(url: string): void {
  if (parseUrl(url) === null) throw new PosternError('USAGE', 'the database is named by a postgres:// or postgresql:// URL');
}

/** A connected client; an error on an idle connection is kept for the next query instead of crashing the process. */
export async function connectShip(url: string): Promise<pg.Client> {
  checkShipUrl(url);
  const client = new (await loadPg()).Client({ connectionString: url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, query_timeout: QUERY_TIMEOUT_MS, application_name: 'postern' });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (e) {
    await client.end().catch(() => undefined);
    throw shipError(url, 'connect to', e);
  }
  return client;
}

/** What a failure of the database means, in one line, with the SQLSTATE when there is one. */
export function shipError(url: string, action: string, e: unknown): PosternError {
  if (e instanceof PosternError) return e;
  const code = (e as { code?: unknown } | null)?.code;
  const state = typeof code === 'string' ? code : null;
  const where = describeTarget(url);
  let why: string;
  if (state === '42P01') why = 'the tables are missing: an admin role runs `postern audit ship --init-schema` first';
  else if (state === '42703') why = 'the tables are from an earlier version: an admin role runs `postern audit ship --init-schema` again';
  else if (state === '42501') why = 'permission denied (the shipping role needs INSERT and SELECT on the postern_* tables: `--init-schema --grant ROLE` again; README, "For teams")';
  else if (state === '28000' || state === '28P01') why = 'the role was refused';
  else if (state === '3D000') why = 'no such database';
  else if (state !== null && /^[0-9A-Z]{5}$/.test(state)) why = `the database refused (SQLSTATE ${state})`;
  else if (state !== null) why = `it cannot be reached (${clean(state, 40)})`;
  else if (e instanceof Error && /timeout/i.test(e.message)) why = 'it did not answer in time';
  else if (e instanceof Error && /terminat|closed|ended/i.test(e.message)) why = 'the connection was closed';
  else why = 'it cannot be reached';
  return new PosternError('SHIP_UNAVAILABLE', `cannot ${action} ${where}: ${why}`, { details: { database: where, sqlstate: state } });
}
