/**
 * The team-wide audit: `postern audit activity|sessions|show|timeline|
 * find-secret … --from postgres://…`, across every home that shipped to the
 * database (`--home` for one). Each question is answered in PostgreSQL
 * (ship/queries.ts: filtered, ordered newest first and limited there, through
 * its indexes); each row says which home it came from. Rendering is
 * ../audit-render.ts's, with a HOME column first; `--json` is the local JSON
 * with `home` and `home_id` added to each row.
 *
 * Limits: the rows are only as trustworthy as the database — `audit verify
 * --from` says whether they are.
 */
import type pg from 'pg';
import type { CallView, ExposureEntry } from '../../journal/index.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../../journal/filters.js';
import type { ShippedHome } from '../../journal/ship/remote.js';
import { callByIdQuery, callByPrefixQuery, resolveTeamSession, sessionHomes, teamCalls, teamCallsQuery, teamExposures, teamSessions as sessionsFrom, teamTimeline as timelineFrom, unreadRows, type FromHome, type HomeScope } from '../../journal/ship/queries.js';
import { PosternError } from '../../rules/errors.js';
import { jsonForTerminal, sanitizeForTerminal as clean } from '../../rules/terminal-text.js';
import type { CliContext } from '../context.js';
import { callFilterOf, parseLimit, parseTime, type ActivityOpts, type ListOpts } from '../audit-options.js';
import { CALL_HEADER, SESSION_HEADER, TIMELINE_HEADER, callDetails, callRow, moreHint, sessionRow, timelineRow } from '../audit-render.js';
import { homesFrom, withDatabase } from './audit-ship.js';
import { renderTable } from '../table.js';

export interface TeamOpts {
  readonly from: string;
  readonly home?: string;
}

interface Team {
  readonly client: pg.Client;
  /** The selected homes by id, in the database's home order. */
  readonly homes: ReadonlyMap<string, ShippedHome>;
  /** What the queries are asked of: the selected ids with --home, every home without. */
  readonly scope: HomeScope;
}

/** `fn` with a connection and the homes `--home` selects. */
async function withTeam<T>(t: TeamOpts, fn: (team: Team) => Promise<T>): Promise<T> {
  return withDatabase(t.from, 'read from', async (client) => {
    const chosen = await homesFrom(client, t.home);
    const value = await fn({ client, homes: new Map(chosen.map((h) => [h.home_id, h])), scope: t.home === undefined ? undefined : chosen.map((h) => h.home_id) });
    const n = unreadRows(client);
    // On stderr, so --json stays one document: rows left out are evidence of an edited database.
    if (n > 0) process.stderr.write(`postern: note: ${n} shipped row${n === 1 ? '' : 's'} matched but did not read as journal entries and ${n === 1 ? 'is' : 'are'} left out; \`postern audit verify --from\` names them\n`);
    return value;
  });
}

/** A row's home: the one the database lists, or (a row of a home not in postern_homes) its id alone. */
function homeOf(team: Team, id: string): ShippedHome {
  return team.homes.get(id) ?? { home_id: id, name: id.slice(0, 8), public_key: null };
}

/** Rows tagged with their home, kept in the order the database returned them. */
function tagged<T>(team: Team, found: readonly FromHome<T>[]): { home: ShippedHome; value: T }[] {
  return found.map((f) => ({ home: homeOf(team, f.home_id), value: f.value }));
}

/** A session given in full or by a unique prefix across the homes in scope. */
async function teamSessionId(team: Team, given: string): Promise<string> {
  const id = await resolveTeamSession(team.client, given, team.scope);
  if (typeof id !== 'string') throw new PosternError('USAGE', `several sessions start with ${clean(given, 64)} across the homes: give more of the id, or --home`);
  return id;
}

const tag = (h: ShippedHome): { home: string; home_id: string } => ({ home: h.name, home_id: h.home_id });
const HOME_COL = (h: ShippedHome): string => clean(h.name, 32);

export async function teamSessions(ctx: CliContext, t: TeamOpts, o: ListOpts): Promise<void> {
  const limit = parseLimit(o.limit);
  const since = parseTime('--since', o.since, ctx.clock.now());
  const rows = await withTeam(t, async (team) => tagged(team, await sessionsFrom(team.client, { ...(since === undefined ? {} : { since }), ...(limit === undefined ? {} : { limit }) }, team.scope)));
  if (o.json === true) return ctx.out(jsonForTerminal(rows.map(({ home, value }) => ({ ...tag(home), ...value }))));
  if (rows.length === 0) return ctx.out(since === undefined ? 'no sessions shipped yet' : 'no sessions started in that time');
  ctx.out(renderTable(['HOME', ...SESSION_HEADER], rows.map(({ home, value }) => [HOME_COL(home), ...sessionRow(value)])));
  const hint = moreHint(rows.length, limit ?? DEFAULT_LIMIT, 'use --since, --home or --limit to see others');
  if (hint !== null) ctx.out(hint);
}

export async function teamActivity(ctx: CliContext, t: TeamOpts, o: ActivityOpts): Promise<void> {
  const limit = parseLimit(o.limit);
  const now = ctx.clock.now();
  const since = parseTime('--since', o.since, now);
  const until = parseTime('--until', o.until, now);
  const rows = await withTeam(t, async (team) => {
    const session = o.session === undefined ? undefined : await teamSessionId(team, o.session);
    return tagged(team, await teamCalls(team.client, teamCallsQuery(callFilterOf(o, { since, until, limit }, session), team.scope)));
  });
  if (o.json === true) return ctx.out(jsonForTerminal(rows.map(({ home, value }) => ({ ...tag(home), ...value }))));
  if (rows.length === 0) return ctx.out('no calls match');
  ctx.out(renderTable(['HOME', ...CALL_HEADER], rows.map(({ home, value }) => [HOME_COL(home), ...callRow(value)])));
  const hint = moreHint(rows.length, limit ?? DEFAULT_LIMIT, 'narrow with --since/--until/--home or raise --limit');
  if (hint !== null) ctx.out(hint);
}

/** `show` across homes: the full id, or a prefix unique across every call the homes shipped (an index range, not a window). */
export async function teamShow(ctx: CliContext, t: TeamOpts, given: string, o: { json?: boolean }): Promise<void> {
  const { exact, found } = await withTeam(t, async (team): Promise<{ exact: boolean; found: { home: ShippedHome; value: CallView }[] }> => {
    const byId = await teamCalls(team.client, callByIdQuery(given, team.scope, 2));
    if (byId.length > 0 || given === '') return { exact: true, found: tagged(team, byId) };
    return { exact: false, found: tagged(team, await teamCalls(team.client, callByPrefixQuery(given, team.scope, 2))) };
  });
  if (found.length > 1 && exact) throw new PosternError('USAGE', `call ${clean(given, 64)} is in several homes: give --home`);
  if (found.length > 1) throw new PosternError('USAGE', `several calls start with ${clean(given, 64)} across the homes: give more of the id, or --home`);
  const hit = found[0];
  if (hit === undefined) throw new PosternError('CALL_NOT_FOUND', `no call ${clean(given, 64)} in the shipped journals`);
  if (o.json === true) return ctx.out(jsonForTerminal({ ...tag(hit.home), ...hit.value }));
  ctx.out(`home: ${clean(hit.home.name, 64)} (${clean(hit.home.home_id, 64)})`);
  for (const line of callDetails(hit.value)) ctx.out(line);
}

export async function teamTimeline(ctx: CliContext, t: TeamOpts, given: string, o: { limit?: string; json?: boolean }): Promise<void> {
  const limit = parseLimit(o.limit) ?? MAX_LIMIT;
  const hit = await withTeam(t, async (team) => {
    if (given === '') return undefined;
    const id = await teamSessionId(team, given);
    const homes = await sessionHomes(team.client, id, team.scope);
    if (homes.length > 1) throw new PosternError('USAGE', `session ${clean(given, 64)} is in ${homes.length} homes: give --home or more of the id`);
    const value = homes[0] === undefined ? undefined : await timelineFrom(team.client, id, homes[0], limit);
    return value === undefined ? undefined : { home: homeOf(team, homes[0]!), value };
  });
  if (hit === undefined) throw new PosternError('INPUT_INVALID', `no session ${clean(given, 64)} in the shipped journals`);
  const { home, value: found } = hit;
  if (o.json === true) return ctx.out(jsonForTerminal({ ...tag(home), ...found }));
  ctx.out(`session ${clean(found.session_id, 64)} on ${clean(home.name, 64)}: ${found.entries.length} entries, oldest first${found.truncated ? ` (a limit of ${limit} was reached: raise --limit)` : ''}`);
  ctx.out(renderTable(TIMELINE_HEADER, found.entries.map(timelineRow)));
}

/** For find-secret: the entries that recorded an exposure of `credential`, per selected home in the database's home order. */
export async function teamExposed(t: TeamOpts, credential: string, since: string | undefined): Promise<{ home: { home: string; home_id: string }; entries: ExposureEntry[] }[]> {
  return withTeam(t, async (team) => {
    const byHome = await teamExposures(team.client, credential, since, team.scope);
    const order = [...team.homes.keys(), ...[...byHome.keys()].filter((id) => !team.homes.has(id)).sort()];
    return order.filter((id) => byHome.has(id)).map((id) => ({ home: tag(homeOf(team, id)), entries: byHome.get(id)! }));
  });
}
