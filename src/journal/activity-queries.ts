/**
 * The audit's read queries over the activity journal, built as plain SQL so a
 * test can ask SQLite for their query plans (every filter must be answered
 * from an index, not a table scan, on 100k+ calls).
 *
 * Invariants: every query selects head entries through `HEAD`, the exact
 * predicate of the partial indexes, so the planner can use them; values are
 * always bound as parameters, never spliced into SQL.
 */
import { CALL_SELECT, HEAD } from './activity-schema.js';
import { clampLimit, isoBound } from './filters.js';
import type { CallFilter } from './types.js';

export interface Query {
  readonly sql: string;
  readonly params: readonly (string | number)[];
}

/** Newest first. Filters combine with AND. */
export function listCallsQuery(filter: CallFilter = {}): Query {
  const where = [`h.${HEAD}`];
  const params: (string | number)[] = [];
  const add = (clause: string, value: string): void => {
    where.push(clause);
    params.push(value);
  };
  if (filter.tool !== undefined) add('h.tool = ?', filter.tool);
  if (filter.session_id !== undefined) add('h.session_id = ?', filter.session_id);
  if (filter.idempotency_key !== undefined) add('h.idempotency_key = ?', filter.idempotency_key);
  if (filter.since !== undefined) add('h.at >= ?', isoBound('since', filter.since, ''));
  if (filter.until !== undefined) add('h.at < ?', isoBound('until', filter.until, ''));
  if (filter.error_code !== undefined) add('h.call_id IN (SELECT call_id FROM entries WHERE error_code = ?)', filter.error_code);
  params.push(clampLimit(filter.limit));
  return { sql: `${CALL_SELECT} WHERE ${where.join(' AND ')} ORDER BY h.at DESC, h.seq DESC LIMIT ?`, params };
}

export const GET_CALL_SQL = `${CALL_SELECT} WHERE h.call_id = ? AND h.${HEAD}`;

/** Executed calls (intents) per tool, session and run id: what the call limits count at start (daemon/services/limits.ts); a scan of the table. */
export const LIMIT_COUNTS_SQL = `SELECT tool, session_id, json_extract(body, '$.call.run_id') AS run_id, count(*) AS n FROM entries WHERE kind = 'intent' GROUP BY tool, session_id, run_id`;
/** The times of the intents journaled since a time (the per-minute window), through the head time index. */
export const LIMIT_RECENT_SQL = `SELECT tool, at FROM entries WHERE ${HEAD} AND at >= ? AND kind = 'intent' ORDER BY at`;
/** A page of head entries after `seq`, for the release gate's historical arguments (a range of the rowid). */
export const HEADS_PAGE_SQL = `SELECT seq, at, kind, error_code, body FROM entries WHERE ${HEAD} AND seq > ? ORDER BY seq LIMIT ?`;

/**
 * Intents without an outcome: the calls a crash left open. Run once, at the
 * daemon's start: a scan of the table (no index of intents is kept for it:
 * every call would pay for that index; docs/decisions.md).
 */
export const OPEN_INTENTS_SQL = `
  SELECT i.call_id AS call_id FROM entries i
  WHERE i.kind = 'intent' AND NOT EXISTS (SELECT 1 FROM entries o WHERE o.call_id = i.call_id AND o.kind = 'outcome')`;

/**
 * A page of entries after `seq` that recorded an exposure (src/journal/types.ts
 * Exposure), for `postern audit find-secret`. A scan of the entries, not an
 * index: the question is rare and asked of the whole history.
 */
export const EXPOSURES_PAGE_SQL = `SELECT seq, at, kind, call_id, tool, session_id, body FROM entries WHERE seq > ? AND instr(body, '"exposures":') > 0 ORDER BY seq LIMIT ?`;
