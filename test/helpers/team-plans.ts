/**
 * The team queries' plans on many shipped entries, for the CI test
 * (test/unit/journal/ship-queries.test.ts) and `npm run bench:audit`
 * (scripts/bench/audit-team-pg.ts): a server-side fill of postern_entries
 * over several homes, and each team query (ship/queries.ts, the very text
 * the CLI sends) run under `EXPLAIN (ANALYZE, FORMAT JSON)`, with the index
 * it must use.
 *
 * The fill writes rows of the entries' shape (every field the queries and
 * the copy trigger read: seq, at, kind, call_id, session_id, tool,
 * idempotency_key, error_code, body), generated in one INSERT … SELECT per
 * journal through the schema's trigger, as shipped rows are, then VACUUM ANALYZE; they are not
 * hash-chained (this measures queries, not verification). Per home: calls of
 * five tools (one rare: 1 call in 100), one in 20 rejected (APPROVAL_DENIED), one outcome in 50 an
 * error (TARGET_ERROR), one in 3 keyed, one in 1000 exposing `api-token` in
 * its result; a session per 50 calls (started, identified, closed) and a
 * daemon-wide lock event per session.
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import {
  callByIdQuery,
  callByPrefixQuery,
  exposuresQuery,
  sessionEventsQuery,
  sessionHomesQuery,
  sessionKnownQuery,
  sessionPrefixQuery,
  teamCallsQuery,
  teamSessionsQuery,
  type TeamQuery,
} from '../../src/journal/ship/queries.js';

export const TEAM_TOOLS = ['deploy_preview', 'create_issue', 'read_status', 'list_builds', 'run_migration'] as const;
const START = '2026-01-01T00:00:00.000Z';

/** How many calls each home gets so that the homes hold about `entries` rows in all. */
export function callsPerHome(entries: number, homes: number): number {
  // Per 50 calls: 97.5 activity entries (a rejection has no outcome) and 4 sessions entries.
  return Math.max(50, Math.floor((entries / homes) * (50 / 101.5)));
}

/** Fills `homes` homes (ids home-1 …) with about `entries` shipped entries in all; returns the calls per home. */
export async function fillShipped(run: (sql: string) => Promise<unknown>, entries: number, homes: number): Promise<number> {
  const calls = callsPerHome(entries, homes);
  const sessions = Math.ceil(calls / 50);
  const at = (secs: string): string => `to_char(timestamp '2026-01-01 00:00:00' + (${secs}) * interval '1 second' + h.i * interval '1 millisecond', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  await run(`INSERT INTO postern_homes (home_id, name, public_key) SELECT 'home-' || i, 'machine-' || i, NULL FROM generate_series(1, ${homes}) i ON CONFLICT DO NOTHING`);
  // One call in 100 is of the last tool (a rare one, as a migration is); the others share the rest.
  const common = TEAM_TOOLS.length - 1;
  const tool = `CASE WHEN g % 100 = 0 THEN '${TEAM_TOOLS[common]}' ELSE (ARRAY[${TEAM_TOOLS.slice(0, common).map((t) => `'${t}'`).join(', ')}])[1 + g % ${common}] END`;
  // g: the call; k = 0 its head, k = 1 its outcome (none for a rejection).
  await run(`
    INSERT INTO postern_entries (home_id, journal, seq, at, hash, row)
    SELECT 'home-' || h.i, 'activity', 2 * g - 1 + k, a.at, md5(h.i || ':' || g || ':' || k), json_build_object(
      'seq', 2 * g - 1 + k, 'at', a.at,
      'kind', CASE WHEN k = 1 THEN 'outcome' WHEN g % 20 = 0 THEN 'rejected' ELSE 'intent' END,
      'call_id', 'c' || h.i || '-' || md5(h.i || '/' || g),
      'session_id', 's' || h.i || '-' || md5(h.i || '/s/' || (g / 50)),
      'tool', ${tool},
      'idempotency_key', CASE WHEN g % 3 = 0 THEN 'k-' || h.i || '-' || g END,
      'error_code', CASE WHEN k = 0 AND g % 20 = 0 THEN 'APPROVAL_DENIED' WHEN k = 1 AND g % 50 = 7 THEN 'TARGET_ERROR' END,
      'claim', NULL,
      'body', CASE WHEN k = 0 THEN json_build_object(
          'call', json_build_object('call_id', 'c' || h.i || '-' || md5(h.i || '/' || g), 'tool', ${tool}, 'raw_arguments', json_build_object('title', 'note ' || g, 'branch', 'main'), 'at', a.at),
          'target', json_build_object('kind', 'http', 'method', 'POST', 'url', 'https://api.example.test/notes/' || g))::text
        ELSE (jsonb_build_object('status', CASE WHEN g % 50 = 7 THEN 'error' ELSE 'success' END, 'side_effect_started', true, 'duration_ms', g % 900,
          'result', jsonb_build_object('id', g, 'echo', repeat('x', 120)))
          || CASE WHEN g % 1000 = 3 THEN jsonb_build_object('exposures', jsonb_build_array(jsonb_build_object('credential', 'api-token', 'fingerprint', NULL, 'in', jsonb_build_array('result')))) ELSE '{}' END)::text END,
      'prev_hash', md5(h.i || ':' || g || ':' || k || ':p'), 'hash', md5(h.i || ':' || g || ':' || k))::text
    FROM generate_series(1, ${homes}) AS h(i), generate_series(1, ${calls}) AS g, generate_series(0, 1) AS k,
      LATERAL (SELECT ${at('g * 10 + k * 3')} AS at) a
    WHERE NOT (k = 1 AND g % 20 = 0)`);
  // Session n: started before its first call, identified, closed after its last; a lock between.
  await run(`
    INSERT INTO postern_entries (home_id, journal, seq, at, hash, row)
    SELECT 'home-' || h.i, 'sessions', 4 * n + e.k + 1, a.at, md5(h.i || ':s' || n || ':' || e.k), json_build_object(
      'seq', 4 * n + e.k + 1, 'at', a.at,
      'session_id', CASE WHEN e.type = 'lock' THEN NULL ELSE 's' || h.i || '-' || md5(h.i || '/s/' || n) END,
      'type', e.type,
      'body', CASE WHEN e.type = 'session_started' THEN json_build_object('session_id', 's' || h.i || '-' || md5(h.i || '/s/' || n), 'transport', 'stdio', 'client_name', 'agent', 'client_version', '1.0', 'protocol_version', '2025-06-18', 'peer_pid', n, 'peer_uid', 1000, 'run_id', NULL, 'agent_release', NULL)::text
        WHEN e.type = 'session_closed' THEN '{"reason":"client_closed"}' WHEN e.type = 'lock' THEN '{"by":"operator"}' ELSE '{"run_id":"run-1","agent_release":"r1"}' END,
      'prev_hash', md5(h.i || ':s' || n || ':' || e.k || ':p'), 'hash', md5(h.i || ':s' || n || ':' || e.k))::text
    FROM generate_series(1, ${homes}) AS h(i), generate_series(0, ${sessions - 1}) AS n,
      (VALUES (0, 'session_started', 0), (1, 'session_identified', 1), (2, 'lock', 200), (3, 'session_closed', 499)) AS e(k, type, offs),
      LATERAL (SELECT ${at('n * 500 + e.offs')} AS at) a`);
  // As autovacuum leaves a table that has settled: hint bits set, the visibility map and statistics up to date.
  await run('VACUUM ANALYZE postern_entries');
  return calls;
}

/** One team query, as the CLI sends it, and the indexes its plan must use (a list: any one of them). */
export interface PlanCase {
  readonly name: string;
  readonly query: TeamQuery;
  readonly indexes: readonly (string | readonly string[])[];
}

/** The team queries over the fill: values that exist in it (home-2's call 1234, session 7, …). */
export function teamPlanCases(callsPerHome: number): PlanCase[] {
  const g = Math.min(1234, callsPerHome - 1);
  const callId = `c2-${md5(`2/${g}`)}`;
  const session = `s2-${md5(`2/s/${Math.floor(g / 50)}`)}`;
  const mid = new Date(Date.parse(START) + g * 10_000).toISOString();
  const later = new Date(Date.parse(START) + (g + 200) * 10_000).toISOString();
  const calls = 'postern_calls_id'; // each call's outcome, joined
  return [
    { name: 'activity (newest first)', query: teamCallsQuery({}, undefined), indexes: ['postern_calls_at', calls] },
    { name: 'activity --tool', query: teamCallsQuery({ tool: 'run_migration' }, undefined), indexes: ['postern_calls_tool', calls] },
    { name: 'activity --session', query: teamCallsQuery({ session_id: session }, undefined), indexes: ['postern_calls_session', calls] },
    { name: 'activity --key', query: teamCallsQuery({ idempotency_key: `k-2-${g - (g % 3)}` }, undefined), indexes: ['postern_calls_key', calls] },
    { name: 'activity --error', query: teamCallsQuery({ error_code: 'TARGET_ERROR' }, undefined), indexes: ['postern_calls_error', calls] },
    { name: 'activity --since --until', query: teamCallsQuery({ since: mid, until: later }, undefined), indexes: ['postern_calls_at', calls] },
    { name: 'activity --home', query: teamCallsQuery({}, ['home-2']), indexes: ['postern_calls_at', calls] },
    { name: 'sessions', query: teamSessionsQuery({}, undefined), indexes: ['postern_sessions_started', 'postern_sessions_id'] },
    { name: 'sessions --since', query: teamSessionsQuery({ since: mid }, undefined), indexes: ['postern_sessions_started', 'postern_sessions_id'] },
    { name: 'show <id>', query: callByIdQuery(callId, undefined, 2), indexes: [calls] },
    { name: 'show <prefix>', query: callByPrefixQuery(callId.slice(0, 10), undefined, 2), indexes: [calls] },
    { name: 'session id known', query: sessionKnownQuery(session, undefined), indexes: ['postern_sessions_id'] },
    { name: 'session id prefix', query: sessionPrefixQuery(session.slice(0, 9), undefined, 2), indexes: ['postern_sessions_id'] },
    { name: 'timeline: homes of the session', query: sessionHomesQuery(session, undefined), indexes: ['postern_sessions_id', 'postern_calls_session'] },
    { name: 'timeline: its entries', query: sessionEventsQuery(session, 'home-2', 10_000), indexes: ['postern_sessions_id'] },
    { name: 'timeline: its calls', query: teamCallsQuery({ session_id: session, limit: 10_000 }, ['home-2']), indexes: ['postern_calls_session', calls] },
    // A range of one home's seqs: by the daemon-wide entries of that home, or the primary key, whichever the planner finds fewer rows in.
    { name: 'timeline: daemon events meanwhile', query: sessionEventsQuery(null, 'home-2', 10_000, { after: 4 * Math.floor(g / 50) + 1, before: 4 * Math.floor(g / 50) + 4 }), indexes: [['postern_sessions_id', 'postern_entries_pkey']] },
    { name: 'find-secret', query: exposuresQuery('api-token', undefined, undefined), indexes: ['postern_exposed'] },
  ];
}

function md5(text: string): string {
  // node:crypto's md5 matches PostgreSQL's md5(): the fill's ids are computed the same way here.
  return createHash('md5').update(text).digest('hex');
}

export interface PlanNode {
  readonly type: string;
  readonly relation: string | null;
  readonly index: string | null;
}

export interface Plan {
  readonly nodes: readonly PlanNode[];
  readonly ms: number;
  /** Seq Scans of postern_entries (the table of entries: every plan must avoid them). */
  readonly seqScans: number;
  /** The expected indexes the plan does not use (`a|b`: neither of them). */
  readonly missing: readonly string[];
}

interface RawNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: RawNode[];
}

function walk(n: RawNode, out: PlanNode[]): void {
  out.push({ type: n['Node Type'], relation: n['Relation Name'] ?? null, index: n['Index Name'] ?? null });
  for (const c of n.Plans ?? []) walk(c, out);
}

/** `EXPLAIN (ANALYZE, FORMAT JSON)` of a case. */
export async function planOf(client: pg.ClientBase, c: PlanCase): Promise<Plan> {
  const r = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${c.query.text}`, c.query.values as unknown[]);
  const top = (r.rows[0] as { 'QUERY PLAN': { Plan: RawNode; 'Execution Time': number }[] })['QUERY PLAN'][0]!;
  const nodes: PlanNode[] = [];
  walk(top.Plan, nodes);
  const used = new Set(nodes.map((n) => n.index));
  return {
    nodes,
    ms: top['Execution Time'],
    seqScans: nodes.filter((n) => n.type === 'Seq Scan' && n.relation === 'postern_entries').length,
    missing: c.indexes.map((i) => (typeof i === 'string' ? [i] : i)).filter((any) => !any.some((i) => used.has(i))).map((any) => any.join('|')),
  };
}

/** A plan in one line: its nodes top-down, each index scan with its index. */
export function describePlan(p: Plan): string {
  return p.nodes.map((n) => (n.index === null ? n.type : `${n.type} (${n.index})`)).join(' > ');
}
