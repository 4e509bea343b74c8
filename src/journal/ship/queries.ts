/**
 * The team queries (`postern audit activity|sessions|show|timeline|
 * find-secret … --from postgres://…`), answered in PostgreSQL: each filters,
 * orders (newest first, as the local queries) and limits in the database,
 * through the indexes schema.ts creates, and returns the local shapes
 * (CallView, SessionRow, the timeline, ExposureEntry) built by the very
 * functions the local journals use, each tagged with the home it came from.
 *
 * Invariants:
 * - every query of calls selects head entries through PG_HEAD, the exact
 *   predicate of the partial indexes, so the planner can use them; values are
 *   always bound as parameters (the query text depends only on which filters
 *   are given), never spliced into SQL;
 * - a filter compares the copies of `row`'s fields (schema.ts), but what is
 *   returned is built from `row` itself; a row that does not read as an entry
 *   of its journal is left out (`audit verify --from` names it);
 * - the rows are only as trustworthy as the database: `audit verify --from`
 *   says whether they are.
 */
import type pg from 'pg';
import { toCallView, type HeadKind } from '../activity-schema.js';
import { exposureEntryOf, type ExposureEntry } from '../activity.js';
import { clampLimit, isoBound, MAX_LIMIT } from '../filters.js';
import { toEventRow, toSessionRow } from '../sessions.js';
import { buildTimeline, daemonWindow, type SessionTimeline } from '../timeline.js';
import type { CallFilter, CallView, SessionEventRow, SessionRow } from '../types.js';
import { PG_HEAD } from './schema.js';

/** A query's text and its parameters, as `client.query` takes them (and EXPLAIN, in the plan checks). */
export interface TeamQuery {
  readonly text: string;
  readonly values: readonly unknown[];
}

/** A value and the home whose shipped journal it came from. */
export interface FromHome<T> {
  readonly home_id: string;
  readonly value: T;
}

/** The homes a query is asked of; undefined: every home in the database. */
export type HomeScope = readonly string[] | undefined;

class Params {
  readonly values: unknown[] = [];
  /** `value` as the next parameter, `$n`. */
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

function homeClause(p: Params, alias: string, homes: HomeScope): string[] {
  return homes === undefined ? [] : [`${alias}.home_id = ANY(${p.add([...homes])}::text[])`];
}

/** `given` as a LIKE pattern matching the ids that start with it. */
function prefixPattern(given: string): string {
  return `${given.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * Calls' heads with their outcomes (the first, should a database hold more), newest first; `where` on
 * the head `h`. The heads are chosen and limited first, so only those get their outcome looked up.
 */
function callsSql(where: readonly string[], limit: string, withSql = ''): string {
  const order = 'h.at DESC, h.seq DESC, h.home_id DESC';
  return `${withSql}SELECT h.home_id AS home_id, h."row" AS h_row, o."row" AS o_row
  FROM (SELECT h.home_id, h.call_id, h.at, h.seq, h."row" FROM postern_entries h
    WHERE h.${PG_HEAD} AND ${where.join(' AND ')}
    ORDER BY ${order} LIMIT ${limit}) h
  LEFT JOIN LATERAL (
    SELECT e."row" FROM postern_entries e
    WHERE e.journal = 'activity' AND e.call_id = h.call_id AND e.home_id = h.home_id AND e.kind = 'outcome'
    ORDER BY e.seq LIMIT 1) o ON true
  ORDER BY ${order}`;
}

/** `audit activity --from`: the local filters (listCallsQuery's), newest first across the homes. */
export function teamCallsQuery(filter: CallFilter, homes: HomeScope): TeamQuery {
  const p = new Params();
  const where = ['true', ...homeClause(p, 'h', homes)];
  if (filter.tool !== undefined) where.push(`h.tool = ${p.add(filter.tool)}`);
  if (filter.session_id !== undefined) where.push(`h.session_id = ${p.add(filter.session_id)}`);
  if (filter.idempotency_key !== undefined) where.push(`h.idempotency_key = ${p.add(filter.idempotency_key)}`);
  if (filter.since !== undefined) where.push(`h.at >= ${p.add(isoBound('since', filter.since, ''))}`);
  if (filter.until !== undefined) where.push(`h.at < ${p.add(isoBound('until', filter.until, ''))}`);
  // The calls with an entry of this error code, found first through its index (as the local query's
  // IN list is): left to itself, the planner walks every call newest first and looks each one up.
  let failed = '';
  if (filter.error_code !== undefined) {
    failed = `WITH failed AS MATERIALIZED (SELECT x.home_id, x.call_id FROM postern_entries x WHERE x.journal = 'activity' AND x.error_code = ${p.add(filter.error_code)})\n`;
    where.push('(h.home_id, h.call_id) IN (SELECT f.home_id, f.call_id FROM failed f)');
  }
  return { text: callsSql(where, p.add(clampLimit(filter.limit)), failed), values: p.values };
}

/** `audit show --from`: the call with this id in each home (at most `max`). */
export function callByIdQuery(callId: string, homes: HomeScope, max: number): TeamQuery {
  const p = new Params();
  return { text: callsSql([`h.call_id = ${p.add(callId)}`, ...homeClause(p, 'h', homes)], p.add(max)), values: p.values };
}

/** The calls whose id starts with `given` (at most `max`): an index range, over every call shipped. */
export function callByPrefixQuery(given: string, homes: HomeScope, max: number): TeamQuery {
  const p = new Params();
  return { text: callsSql([`h.call_id LIKE ${p.add(prefixPattern(given))}`, ...homeClause(p, 'h', homes)], p.add(max)), values: p.values };
}

/** `audit sessions --from`: session starts newest first, each with its first close and identity entries. */
export function teamSessionsQuery(filter: { since?: string; limit?: number }, homes: HomeScope): TeamQuery {
  const p = new Params();
  const firstOf = (type: string): string => `LEFT JOIN LATERAL (
    SELECT e."row" FROM postern_entries e
    WHERE e.journal = 'sessions' AND e.session_id = s.session_id AND e.home_id = s.home_id AND e.kind = '${type}'
    ORDER BY e.seq LIMIT 1)`;
  const where = ['true', ...homeClause(p, 's', homes)];
  if (filter.since !== undefined) where.push(`s.at >= ${p.add(isoBound('since', filter.since, ''))}`);
  const text = `SELECT s.home_id AS home_id, s."row" AS s_row, c."row" AS c_row, i."row" AS i_row
  FROM postern_entries s
  ${firstOf('session_closed')} c ON true
  ${firstOf('session_identified')} i ON true
  WHERE s.journal = 'sessions' AND s.kind = 'session_started' AND ${where.join(' AND ')}
  ORDER BY s.at DESC, s.seq DESC, s.home_id DESC LIMIT ${p.add(clampLimit(filter.limit))}`;
  return { text, values: p.values };
}

/** Whether any home in scope journaled an entry of this session id. */
export function sessionKnownQuery(sessionId: string, homes: HomeScope): TeamQuery {
  const p = new Params();
  return { text: `SELECT 1 FROM postern_entries s WHERE s.journal = 'sessions' AND s.session_id = ${p.add(sessionId)} AND ${['true', ...homeClause(p, 's', homes)].join(' AND ')} LIMIT 1`, values: p.values };
}

/** The ids of started sessions that begin with `given` (at most `max`). */
export function sessionPrefixQuery(given: string, homes: HomeScope, max: number): TeamQuery {
  const p = new Params();
  const where = [`s.session_id LIKE ${p.add(prefixPattern(given))}`, ...homeClause(p, 's', homes)];
  return { text: `SELECT DISTINCT s.session_id AS session_id FROM postern_entries s WHERE s.journal = 'sessions' AND s.kind = 'session_started' AND ${where.join(' AND ')} LIMIT ${p.add(max)}`, values: p.values };
}

/** The homes in scope where this session journaled an entry or made a call. */
export function sessionHomesQuery(sessionId: string, homes: HomeScope): TeamQuery {
  const p = new Params();
  const id = p.add(sessionId);
  const scope = ['true', ...homeClause(p, 'e', homes)].join(' AND ');
  return {
    text: `SELECT e.home_id AS home_id FROM postern_entries e WHERE e.journal = 'sessions' AND e.session_id = ${id} AND ${scope}
  UNION SELECT e.home_id FROM postern_entries e WHERE e.${PG_HEAD} AND e.session_id = ${id} AND ${scope}`,
    values: p.values,
  };
}

/** A session's entries of one home in seq order; `null`: its daemon-wide entries strictly between two seqs. */
export function sessionEventsQuery(sessionId: string | null, homeId: string, limit: number, between?: { after: number; before: number }): TeamQuery {
  const p = new Params();
  const where = [sessionId === null ? 'e.session_id IS NULL' : `e.session_id = ${p.add(sessionId)}`, `e.home_id = ${p.add(homeId)}`];
  if (between !== undefined) where.push(`e.seq > ${p.add(between.after)}`, `e.seq < ${p.add(between.before)}`);
  return { text: `SELECT e."row" AS row FROM postern_entries e WHERE e.journal = 'sessions' AND ${where.join(' AND ')} ORDER BY e.seq LIMIT ${p.add(limit)}`, values: p.values };
}

/** `audit find-secret --from`: the entries that recorded an exposure of this credential, by home, in journal order. */
export function exposuresQuery(credential: string, since: string | undefined, homes: HomeScope): TeamQuery {
  const p = new Params();
  const where = [`e.exposed @> ARRAY[${p.add(credential)}]::text[]`, ...homeClause(p, 'e', homes)];
  if (since !== undefined) where.push(`e.at >= ${p.add(since)}`);
  return { text: `SELECT e.home_id AS home_id, e."row" AS row FROM postern_entries e WHERE e.journal = 'activity' AND e.exposed IS NOT NULL AND ${where.join(' AND ')} ORDER BY e.home_id, e.seq`, values: p.values };
}

// ---------------------------------------------------------------------------
// Rows back into the local shapes

type Fields = Record<string, unknown>;

/** A stored row's fields, or undefined when it is not a JSON object with a seq, a time and a body. */
function fieldsOf(text: unknown): Fields | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    const v = JSON.parse(text) as unknown;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
    const f = v as Fields;
    return typeof f['seq'] === 'number' && typeof f['at'] === 'string' && typeof f['body'] === 'string' ? f : undefined;
  } catch {
    return undefined;
  }
}

/** `build` over a row's fields; undefined when the row does not read as such an entry. */
function readAs<T>(build: () => T): T | undefined {
  try {
    return build();
  } catch {
    return undefined;
  }
}

function callOf(hRow: unknown, oRow: unknown): CallView | undefined {
  const h = fieldsOf(hRow);
  const o = oRow === null ? undefined : fieldsOf(oRow);
  if (h === undefined || (oRow !== null && o === undefined)) return undefined;
  return readAs(() => toCallView({ seq: h['seq'] as number, at: h['at'] as string, kind: h['kind'] as HeadKind, body: h['body'] as string, o_at: (o?.['at'] as string | undefined) ?? null, o_body: (o?.['body'] as string | undefined) ?? null }));
}

function eventOf(row: unknown): SessionEventRow | undefined {
  const f = fieldsOf(row);
  return f === undefined ? undefined : readAs(() => toEventRow({ ...f, seq: f['seq'] as number } as Parameters<typeof toEventRow>[0]));
}

/** Rows a client's queries found that did not read as journal entries (see `unreadRows`). */
const unread = new WeakMap<pg.ClientBase, number>();

/**
 * How many rows this client's team queries found but could not read as the entries they claim to
 * be (a row edited in the database): they are left out of the answers, and the CLI says how many
 * (`audit verify --from` names them).
 */
export function unreadRows(client: pg.ClientBase): number {
  return unread.get(client) ?? 0;
}

function noteUnread(client: pg.ClientBase, n: number): void {
  if (n > 0) unread.set(client, unreadRows(client) + n);
}

/** The rows that read, counting those that did not against `client`. */
function kept<T>(client: pg.ClientBase, rows: readonly (T | undefined)[]): T[] {
  const out = rows.filter((r): r is T => r !== undefined);
  noteUnread(client, rows.length - out.length);
  return out;
}

async function rows<R>(client: pg.ClientBase, q: TeamQuery): Promise<R[]> {
  return (await client.query(q.text, q.values as unknown[])).rows as R[];
}

export async function teamCalls(client: pg.ClientBase, q: TeamQuery): Promise<FromHome<CallView>[]> {
  const found = await rows<{ home_id: string; h_row: string; o_row: string | null }>(client, q);
  return kept(client, found.map((r) => {
    const value = callOf(r.h_row, r.o_row);
    return value === undefined ? undefined : { home_id: r.home_id, value };
  }));
}

export async function teamSessions(client: pg.ClientBase, filter: { since?: string; limit?: number }, homes: HomeScope): Promise<FromHome<SessionRow>[]> {
  const found = await rows<{ home_id: string; s_row: string; c_row: string | null; i_row: string | null }>(client, teamSessionsQuery(filter, homes));
  return kept(client, found.map((r) => {
    const s = fieldsOf(r.s_row);
    const c = fieldsOf(r.c_row);
    const i = fieldsOf(r.i_row);
    if (s === undefined) return undefined;
    const value = readAs(() => toSessionRow({ seq: s['seq'] as number, at: s['at'] as string, body: s['body'] as string, ended_at: (c?.['at'] as string | undefined) ?? null, end_body: (c?.['body'] as string | undefined) ?? null, identity_body: (i?.['body'] as string | undefined) ?? null }));
    return value === undefined ? undefined : { home_id: r.home_id, value };
  }));
}

/**
 * A session id given in full or as a prefix, as resolveSessionId takes it: an id some home journaled
 * is kept; else the one started session whose id starts with it; else the id as given. `ambiguous`
 * when several sessions start with it.
 */
export async function resolveTeamSession(client: pg.ClientBase, given: string, homes: HomeScope): Promise<string | { ambiguous: string }> {
  if (given === '' || (await rows(client, sessionKnownQuery(given, homes))).length > 0) return given;
  const ids = await rows<{ session_id: string }>(client, sessionPrefixQuery(given, homes, 2));
  if (ids.length > 1) return { ambiguous: given };
  return ids[0]?.session_id ?? given;
}

export async function sessionHomes(client: pg.ClientBase, sessionId: string, homes: HomeScope): Promise<string[]> {
  return (await rows<{ home_id: string }>(client, sessionHomesQuery(sessionId, homes))).map((r) => r.home_id);
}

/** One home's timeline of a session, as sessionTimeline builds it locally; undefined when that home has none of it. */
export async function teamTimeline(client: pg.ClientBase, sessionId: string, homeId: string, limit = MAX_LIMIT): Promise<SessionTimeline | undefined> {
  const events = async (q: TeamQuery): Promise<SessionEventRow[]> => kept(client, (await rows<{ row: string }>(client, q)).map((r) => eventOf(r.row)));
  const own = await events(sessionEventsQuery(sessionId, homeId, limit));
  const calls = (await teamCalls(client, teamCallsQuery({ session_id: sessionId, limit }, [homeId]))).map((c) => c.value);
  if (own.length === 0 && calls.length === 0) return undefined;
  return buildTimeline(sessionId, limit, own, calls, await events(sessionEventsQuery(null, homeId, limit, daemonWindow(own))));
}

/** The entries that recorded an exposure of `credential`, per home id, in journal order. */
export async function teamExposures(client: pg.ClientBase, credential: string, since: string | undefined, homes: HomeScope): Promise<Map<string, ExposureEntry[]>> {
  const out = new Map<string, ExposureEntry[]>();
  for (const r of await rows<{ home_id: string; row: string }>(client, exposuresQuery(credential, since, homes))) {
    const f = fieldsOf(r.row);
    const e = f === undefined ? undefined : readAs(() => exposureEntryOf(f as unknown as Parameters<typeof exposureEntryOf>[0]));
    if (e === undefined) {
      noteUnread(client, 1);
      continue;
    }
    const list = out.get(r.home_id) ?? [];
    list.push(e);
    out.set(r.home_id, list);
  }
  return out;
}
