/**
 * The team-wide audit: `postern audit activity|sessions|show|timeline|
 * find-secret … --from postgres://…`, across every home that shipped to the
 * database (`--home` for one). Each home is copied (ship/remote.ts) and asked
 * with the very queries a local audit uses; the rows are merged newest first
 * and each says which home it came from. Rendering is audit-render.ts's, with
 * a HOME column first; `--json` is the local JSON with `home` and `home_id`
 * added to each row.
 *
 * Limits: a query copies the selected homes' shipped journals first (linear
 * in what they shipped; `--home` narrows it); the rows are only as trustworthy
 * as the database — `audit verify --from` says whether they are.
 */
import type { Journals } from '../journal/index.js';
import { sessionTimeline } from '../journal/index.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../journal/filters.js';
import { openRemoteHome, type ShippedHome } from '../journal/ship/remote.js';
import { PosternError } from '../rules/errors.js';
import { jsonForTerminal, sanitizeForTerminal as clean } from '../rules/terminal-text.js';
import type { CliContext } from './context.js';
import { activityFilter, parseLimit, parseTime, resolveSessionId, type ActivityOpts, type ListOpts } from './audit-options.js';
import { CALL_HEADER, SESSION_HEADER, TIMELINE_HEADER, callDetails, callRow, moreHint, sessionRow, timelineRow } from './audit-render.js';
import { homesFrom, withDatabase } from './commands/audit-ship.js';
import { renderTable } from './table.js';

export interface TeamOpts {
  readonly from: string;
  readonly home?: string;
}

/** `fn` over each selected home's copy, in the database's home order. */
async function eachHome<T>(t: TeamOpts, fn: (j: Journals, h: ShippedHome) => T): Promise<{ home: ShippedHome; value: T }[]> {
  return withDatabase(t.from, 'read from', async (c) => {
    const out: { home: ShippedHome; value: T }[] = [];
    for (const h of await homesFrom(c, t.home)) {
      const r = await openRemoteHome(c, h);
      try {
        out.push({ home: h, value: fn(r.journals, h) });
      } finally {
        r.close();
      }
    }
    return out;
  });
}

const tag = (h: ShippedHome): { home: string; home_id: string } => ({ home: h.name, home_id: h.home_id });
const HOME_COL = (h: ShippedHome): string => clean(h.name, 32);

export async function teamSessions(ctx: CliContext, t: TeamOpts, o: ListOpts): Promise<void> {
  const limit = parseLimit(o.limit);
  const since = parseTime('--since', o.since, ctx.clock.now());
  const per = await eachHome(t, (j) => j.sessions.listSessions({ ...(since === undefined ? {} : { since }), ...(limit === undefined ? {} : { limit }) }));
  const rows = per.flatMap(({ home, value }) => value.map((s) => ({ home, s }))).sort((a, b) => (a.s.started_at < b.s.started_at ? 1 : a.s.started_at > b.s.started_at ? -1 : 0)).slice(0, limit ?? DEFAULT_LIMIT);
  if (o.json === true) return ctx.out(jsonForTerminal(rows.map(({ home, s }) => ({ ...tag(home), ...s }))));
  if (rows.length === 0) return ctx.out(since === undefined ? 'no sessions shipped yet' : 'no sessions started in that time');
  ctx.out(renderTable(['HOME', ...SESSION_HEADER], rows.map(({ home, s }) => [HOME_COL(home), ...sessionRow(s)])));
  const hint = moreHint(rows.length, limit ?? DEFAULT_LIMIT, 'use --since, --home or --limit to see others');
  if (hint !== null) ctx.out(hint);
}

export async function teamActivity(ctx: CliContext, t: TeamOpts, o: ActivityOpts): Promise<void> {
  const limit = parseLimit(o.limit);
  const now = ctx.clock.now();
  const since = parseTime('--since', o.since, now);
  const until = parseTime('--until', o.until, now);
  const per = await eachHome(t, (j) => j.activity.listCalls(activityFilter(j, o, { since, until, limit })));
  const rows = per
    .flatMap(({ home, value }) => value.map((c) => ({ home, c })))
    .sort((a, b) => (a.c.journaled_at < b.c.journaled_at ? 1 : a.c.journaled_at > b.c.journaled_at ? -1 : 0))
    .slice(0, limit ?? DEFAULT_LIMIT);
  if (o.json === true) return ctx.out(jsonForTerminal(rows.map(({ home, c }) => ({ ...tag(home), ...c }))));
  if (rows.length === 0) return ctx.out('no calls match');
  ctx.out(renderTable(['HOME', ...CALL_HEADER], rows.map(({ home, c }) => [HOME_COL(home), ...callRow(c)])));
  const hint = moreHint(rows.length, limit ?? DEFAULT_LIMIT, 'narrow with --since/--until/--home or raise --limit');
  if (hint !== null) ctx.out(hint);
}

/** `show` across homes: the full id, or a prefix unique across every home's newest calls. */
export async function teamShow(ctx: CliContext, t: TeamOpts, given: string, window: number, o: { json?: boolean }): Promise<void> {
  const per = await eachHome(t, (j) => {
    const exact = j.activity.getCall(given);
    if (exact !== undefined) return [exact];
    return given === '' ? [] : j.activity.listCalls({ limit: window }).filter((c) => c.call.call_id.startsWith(given));
  });
  const found = per.flatMap(({ home, value }) => value.map((c) => ({ home, c })));
  if (found.length > 1) throw new PosternError('USAGE', `${found.length} calls start with ${clean(given, 64)} across the homes: give more of the id, or --home`);
  const hit = found[0];
  if (hit === undefined) throw new PosternError('CALL_NOT_FOUND', `no call ${clean(given, 64)} in the shipped journals`);
  if (o.json === true) return ctx.out(jsonForTerminal({ ...tag(hit.home), ...hit.c }));
  ctx.out(`home: ${clean(hit.home.name, 64)} (${clean(hit.home.home_id, 64)})`);
  for (const line of callDetails(hit.c)) ctx.out(line);
}

export async function teamTimeline(ctx: CliContext, t: TeamOpts, given: string, o: { limit?: string; json?: boolean }): Promise<void> {
  const limit = parseLimit(o.limit) ?? MAX_LIMIT;
  const per = await eachHome(t, (j) => {
    if (given === '') return undefined;
    const id = resolveSessionId(j, given);
    const tl = sessionTimeline(j, id, limit);
    return tl === undefined || tl.entries.length === 0 ? undefined : tl;
  });
  const hits = per.filter((p) => p.value !== undefined);
  if (hits.length === 0) throw new PosternError('INPUT_INVALID', `no session ${clean(given, 64)} in the shipped journals`);
  if (hits.length > 1) throw new PosternError('USAGE', `session ${clean(given, 64)} is in ${hits.length} homes: give --home or more of the id`);
  const { home, value: found } = hits[0]!;
  if (found === undefined) return;
  if (o.json === true) return ctx.out(jsonForTerminal({ ...tag(home), ...found }));
  ctx.out(`session ${clean(found.session_id, 64)} on ${clean(home.name, 64)}: ${found.entries.length} entries, oldest first${found.truncated ? ` (a limit of ${limit} was reached: raise --limit)` : ''}`);
  ctx.out(renderTable(TIMELINE_HEADER, found.entries.map(timelineRow)));
}

/** For find-secret: `fn` (which judges one home's journals) per home, tagged. */
export async function teamEach<T>(t: TeamOpts, fn: (j: Journals) => T): Promise<{ home: { home: string; home_id: string }; value: T }[]> {
  return (await eachHome(t, fn)).map(({ home, value }) => ({ home: tag(home), value }));
}
