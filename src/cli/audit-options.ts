/**
 * What the `postern audit` commands share: opening the journals read-only,
 * the list options and how they are parsed (times, limits, id prefixes).
 * Kept apart from the commands so each command file can import it.
 */
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { openJournals } from '../journal/index.js';
import type { CallFilter, Journals } from '../journal/index.js';
import { ACTIVITY_SCHEMA } from '../journal/activity-schema.js';
import { MAX_LIMIT } from '../journal/filters.js';
import { SESSIONS_SCHEMA } from '../journal/sessions.js';
import { PosternError } from '../rules/errors.js';
import { sanitizeForTerminal as clean } from '../rules/terminal-text.js';
import type { CliContext } from './context.js';

/** The read-only journals, or null when neither journal file exists yet. */
export function openAudit(ctx: CliContext): Journals | null {
  const dir = ctx.paths.journalDir;
  const present = [SESSIONS_SCHEMA.file, ACTIVITY_SCHEMA.file].some((f) => {
    try {
      lstatSync(join(dir, f));
      return true;
    } catch (e) {
      // Anything but "not there" (a permission problem, a file where the directory should be) is for the open to report.
      return (e as NodeJS.ErrnoException).code !== 'ENOENT';
    }
  });
  return present ? openJournals(dir, { readonly: true }) : null;
}

export function noJournal(ctx: CliContext): string {
  return `no journal yet in ${clean(ctx.paths.journalDir, 300)}: the daemon creates it when it first starts`;
}

export function withJournals<T>(j: Journals, fn: (j: Journals) => T): T {
  try {
    return fn(j);
  } finally {
    j.close();
  }
}

export interface ListOpts {
  since?: string;
  until?: string;
  limit?: string;
  json?: boolean;
}

export interface ActivityOpts extends ListOpts {
  tool?: string;
  session?: string;
  key?: string;
  error?: string;
}

export function parseLimit(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = /^[0-9]{1,6}$/.test(v) ? Number(v) : NaN;
  if (!(n >= 1 && n <= MAX_LIMIT)) throw new PosternError('USAGE', `--limit must be a whole number from 1 to ${MAX_LIMIT}, got ${clean(JSON.stringify(v), 40)}`);
  return n;
}

const ISO_TIME = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;
const RELATIVE = /^(\d{1,6})([smhd])$/;
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/**
 * An ISO 8601 date or time, or an age such as 90m, 2h, 7d; returned as an ISO
 * string. Without a zone it is UTC, like every time the journals store and the
 * audit prints (JavaScript would read a zoneless date-time as local time).
 */
export function parseTime(flag: string, v: string | undefined, now: Date): string | undefined {
  if (v === undefined) return undefined;
  const rel = RELATIVE.exec(v);
  if (rel !== null) {
    const unit = rel[2] as keyof typeof UNIT_MS;
    return new Date(now.getTime() - Number(rel[1]) * UNIT_MS[unit]).toISOString();
  }
  const m = ISO_TIME.exec(v);
  const zoned = m === null || m[1] !== undefined || !/[T ]/i.test(v) ? v : `${v}Z`;
  let t = m === null ? new Date(NaN) : new Date(zoned.replace(' ', 'T'));
  // JavaScript rolls 2026-02-30 over to March 2; an audit bound must mean what was typed.
  const [y, mo, d] = v.slice(0, 10).split('-').map(Number) as [number, number, number];
  if (new Date(Date.UTC(y, mo - 1, d)).getUTCDate() !== d) t = new Date(NaN);
  if (Number.isNaN(t.getTime())) {
    throw new PosternError('USAGE', `${flag} takes an ISO 8601 time (e.g. 2026-03-01T12:00:00Z) or an age (90m, 2h, 7d), got ${clean(JSON.stringify(v), 60)}`);
  }
  return t.toISOString();
}

/** A full id, or the one id among `candidates` that starts with `given`; undefined when none does. */
export function resolvePrefix(given: string, candidates: Iterable<string>, what: string): string | undefined {
  const found = new Set<string>();
  for (const c of candidates) if (c.startsWith(given)) found.add(c);
  if (found.size > 1) throw new PosternError('USAGE', `${found.size} ${what}s start with ${clean(given, 64)}: give more of the id`);
  return found.values().next().value;
}

/** A session id given in full or as a unique prefix of a journaled session; unknown ids are kept as given. */
export function resolveSessionId(j: Journals, given: string): string {
  if (given === '' || j.sessions.events(given, { limit: 1 }).length > 0) return given;
  return resolvePrefix(given, j.sessions.listSessions({ limit: MAX_LIMIT }).map((s) => s.session_id), 'session') ?? given;
}

/** The activity filter the options name (`audit activity`, `audit export --bundle`); times already parsed. */
export function activityFilter(j: Journals, o: ActivityOpts, bounds: FilterBounds): CallFilter {
  return callFilterOf(o, bounds, o.session === undefined ? undefined : resolveSessionId(j, o.session));
}

interface FilterBounds {
  readonly since: string | undefined;
  readonly until: string | undefined;
  readonly limit: number | undefined;
}

/** The same, with the session id (`--session`) already resolved (the team queries resolve it across homes). */
export function callFilterOf(o: ActivityOpts, bounds: FilterBounds, sessionId: string | undefined): CallFilter {
  return {
    ...(o.tool === undefined ? {} : { tool: o.tool }),
    ...(sessionId === undefined ? {} : { session_id: sessionId }),
    ...(o.key === undefined ? {} : { idempotency_key: o.key }),
    ...(o.error === undefined ? {} : { error_code: o.error }),
    ...(bounds.since === undefined ? {} : { since: bounds.since }),
    ...(bounds.until === undefined ? {} : { until: bounds.until }),
    ...(bounds.limit === undefined ? {} : { limit: bounds.limit }),
  };
}
