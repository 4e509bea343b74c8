/**
 * `postern audit sessions|activity|revisions|show|session|timeline|verify|export` (and
 * `find-secret`, audit-find-secret.ts): incident
 * questions answered from the two journals (DESIGN §8) — which agent session
 * asked for what, with which raw arguments, what they were normalized to,
 * under which revisions, who approved it, what left the machine and what came
 * back — and whether the journals are still what was written.
 *
 * Invariants:
 * - the journals are opened read-only (no recovery, no writes), so a running
 *   daemon is not disturbed and its in-flight calls are shown as in progress;
 * - no passphrase is asked (the journals hold no secret values), except by
 *   `verify --unlock`, which checks the journal anchor's MAC;
 * - every journal value printed for a terminal passes through
 *   sanitizeForTerminal (JSON output through the same escaping as
 *   jsonForTerminal, which keeps it valid JSON with the same value): an agent
 *   controls tool arguments, client names and more, and may put escape
 *   sequences or bidi controls in them;
 * - no journal yet is not an error: list commands say so and exit 0;
 * - ids may be given in full or as a unique prefix (the tables show prefixes).
 */
import { closeSync, lstatSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { openJournals, sessionTimeline } from '../../journal/index.js';
import type { Journals } from '../../journal/index.js';
import { ACTIVITY_SCHEMA } from '../../journal/activity-schema.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../../journal/filters.js';
import { SESSIONS_SCHEMA } from '../../journal/sessions.js';
import { PosternError } from '../../protocol/errors.js';
import { inspectAnchor } from '../../journal/anchor/index.js';
import { contextFor, type CliContext } from '../context.js';
import { describeInspection, vaultFacts } from './anchor.js';
import { jsonForTerminal, sanitizeForTerminal as clean } from '../../protocol/terminal-text.js';
import { renderTable } from '../table.js';
import { parseCatalog } from '../../contracts/index.js';
import { readCatalogFile } from '../../home/catalog-store.js';
import { readDrain } from '../drain-journal.js';
import { DRAIN_JSON_FORMAT, drainJson, renderDrain } from '../revision-drain.js';
import { registerFindSecret } from './audit-find-secret.js';
import { CALL_HEADER, SESSION_HEADER, TIMELINE_HEADER, callDetails, callRow, chainLine, eventRow, moreHint, sessionDetails, sessionRow, terminalSafeJsonLine, timelineRow } from '../audit-render.js';

/** Calls listed under `audit session`. */
const SESSION_CALLS = 100;
/**
 * How many of the newest calls a `show` prefix is looked up among. The journal
 * API finds calls by full id only, and listing loads each call's stored
 * result, so the window is kept small; older calls are shown by full id.
 */
const PREFIX_WINDOW = 1_000;

// ---------------------------------------------------------------------------
// Opening

/** The read-only journals, or null when neither journal file exists yet. */
function openAudit(ctx: CliContext): Journals | null {
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

function noJournal(ctx: CliContext): string {
  return `no journal yet in ${clean(ctx.paths.journalDir, 300)}: the daemon creates it when it first starts`;
}

/** No journal for a list command: a message, or for --json an empty list (the message then goes to stderr). */
function emptyList(ctx: CliContext, json: boolean): void {
  if (!json) return ctx.out(noJournal(ctx));
  ctx.out('[]');
  process.stderr.write(`${noJournal(ctx)}\n`);
}

function withJournals<T>(j: Journals, fn: (j: Journals) => T): T {
  try {
    return fn(j);
  } finally {
    j.close();
  }
}

// ---------------------------------------------------------------------------
// Options

interface ListOpts {
  since?: string;
  until?: string;
  limit?: string;
  json?: boolean;
}

interface ActivityOpts extends ListOpts {
  tool?: string;
  session?: string;
  key?: string;
  error?: string;
}

function parseLimit(v: string | undefined): number | undefined {
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
function parseTime(flag: string, v: string | undefined, now: Date): string | undefined {
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
function resolvePrefix(given: string, candidates: Iterable<string>, what: string): string | undefined {
  const found = new Set<string>();
  for (const c of candidates) if (c.startsWith(given)) found.add(c);
  if (found.size > 1) throw new PosternError('USAGE', `${found.size} ${what}s start with ${clean(given, 64)}: give more of the id`);
  return found.values().next().value;
}

/** A session id given in full or as a unique prefix of a journaled session; unknown ids are kept as given. */
function resolveSessionId(j: Journals, given: string): string {
  if (given === '' || j.sessions.events(given, { limit: 1 }).length > 0) return given;
  return resolvePrefix(given, j.sessions.listSessions({ limit: MAX_LIMIT }).map((s) => s.session_id), 'session') ?? given;
}

// ---------------------------------------------------------------------------
// Rendering

function batcher(flush: (chunk: string) => void): { add(line: string): void; end(): void; count: number } {
  let parts: string[] = [];
  let size = 0;
  const state = {
    count: 0,
    add(line: string) {
      parts.push(line);
      size += line.length + 1;
      state.count++;
      if (size >= 1 << 20) state.end();
    },
    end() {
      if (parts.length > 0) flush(parts.join('\n'));
      parts = [];
      size = 0;
    },
  };
  return state;
}

function exportTo(j: Journals, file: string): { sessions: number; activity: number } {
  let fd: number;
  try {
    fd = openSync(file, 'wx', 0o600);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'error';
    const why = code === 'EEXIST' ? 'it already exists: give a new file name' : `cannot create it (${code})`;
    throw new PosternError('FILE_IO', `not exported to ${clean(file, 200)}: ${why}`);
  }
  try {
    const b = batcher((chunk) => {
      const buf = Buffer.from(`${chunk}\n`, 'utf8');
      for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off);
    });
    j.sessions.exportJsonl((l) => b.add(terminalSafeJsonLine(l)));
    const sessions = b.count;
    j.activity.exportJsonl((l) => b.add(terminalSafeJsonLine(l)));
    b.end();
    closeSync(fd);
    return { sessions, activity: b.count - sessions };
  } catch (e) {
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
    unlinkSync(file);
    if (e instanceof PosternError) throw e;
    throw new PosternError('FILE_IO', `export to ${clean(file, 200)} failed (${(e as NodeJS.ErrnoException).code ?? 'error'}); the partial file was removed`);
  }
}

// ---------------------------------------------------------------------------
// Commands

export function registerAudit(program: Command): void {
  const audit = program
    .command('audit')
    .description('answer incident questions from the journals: sessions, calls, approvals, targets, results (read-only; no passphrase)');

  audit
    .command('sessions')
    .description('list agent sessions, newest first')
    .option('--since <time>', 'sessions started at or after this ISO 8601 time or age (2h, 7d)')
    .option('--limit <n>', `at most this many (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT})`)
    .option('--json', 'print JSON')
    .action((o: ListOpts, cmd: Command) => {
      const ctx = contextFor(cmd);
      const limit = parseLimit(o.limit);
      const since = parseTime('--since', o.since, ctx.clock.now());
      const j = openAudit(ctx);
      if (j === null) return emptyList(ctx, o.json === true);
      const rows = withJournals(j, (jj) => jj.sessions.listSessions({ ...(since === undefined ? {} : { since }), ...(limit === undefined ? {} : { limit }) }));
      if (o.json === true) ctx.out(jsonForTerminal(rows));
      else if (rows.length === 0) ctx.out(since === undefined ? 'no sessions journaled yet' : 'no sessions started in that time');
      else {
        ctx.out(renderTable(SESSION_HEADER, rows.map(sessionRow)));
        const hint = moreHint(rows.length, limit ?? DEFAULT_LIMIT, 'use --since or --limit to see others');
        if (hint !== null) ctx.out(hint);
      }
    });

  audit
    .command('activity')
    .description('list calls, newest first; filters combine')
    .option('--tool <tool>', 'calls of this tool')
    .option('--session <id>', 'calls of this session (full id or unique prefix)')
    .option('--key <key>', 'calls with this idempotency key')
    .option('--error <code>', 'calls that failed or were refused with this error code')
    .option('--since <time>', 'journaled at or after this ISO 8601 time or age (2h, 7d)')
    .option('--until <time>', 'journaled before this ISO 8601 time or age')
    .option('--limit <n>', `at most this many (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT})`)
    .option('--json', 'print JSON')
    .action((o: ActivityOpts, cmd: Command) => {
      const ctx = contextFor(cmd);
      const limit = parseLimit(o.limit);
      const now = ctx.clock.now();
      const since = parseTime('--since', o.since, now);
      const until = parseTime('--until', o.until, now);
      const j = openAudit(ctx);
      if (j === null) return emptyList(ctx, o.json === true);
      const calls = withJournals(j, (jj) =>
        jj.activity.listCalls({
          ...(o.tool === undefined ? {} : { tool: o.tool }),
          ...(o.session === undefined ? {} : { session_id: resolveSessionId(jj, o.session) }),
          ...(o.key === undefined ? {} : { idempotency_key: o.key }),
          ...(o.error === undefined ? {} : { error_code: o.error }),
          ...(since === undefined ? {} : { since }),
          ...(until === undefined ? {} : { until }),
          ...(limit === undefined ? {} : { limit }),
        }),
      );
      if (o.json === true) ctx.out(jsonForTerminal(calls));
      else if (calls.length === 0) ctx.out('no calls match');
      else {
        ctx.out(renderTable(CALL_HEADER, calls.map(callRow)));
        const hint = moreHint(calls.length, limit ?? DEFAULT_LIMIT, 'narrow with --since/--until or raise --limit');
        if (hint !== null) ctx.out(hint);
      }
    });

  audit
    .command('revisions')
    .description('drain counts: per tool and planned revision, how its calls were handled, last seen, live sessions still on it')
    .option('--tool <tool>', 'this tool only')
    .option('--since <time>', 'count calls journaled at or after this ISO 8601 time or age (2h, 7d)')
    .option('--json', `print JSON (${DRAIN_JSON_FORMAT})`)
    .action(async (o: { tool?: string; since?: string; json?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const since = parseTime('--since', o.since, ctx.clock.now());
      const accepted = await readCatalogFile(ctx.paths.acceptedCatalog);
      const catalog = accepted === undefined ? undefined : parseCatalog(accepted.text, ctx.paths.acceptedCatalog);
      const j = openAudit(ctx);
      if (j === null && o.json !== true) return ctx.out(noJournal(ctx));
      const rows = j === null ? [] : withJournals(j, (jj) => readDrain(jj, catalog, { since, tool: o.tool }));
      if (o.json === true) ctx.out(jsonForTerminal(drainJson(rows, since)));
      else if (rows.length === 0) ctx.out(o.tool === undefined ? 'no calls journaled yet' : `no calls of ${clean(o.tool, 64)} journaled`);
      else ctx.out(renderDrain(rows));
    });

  audit
    .command('show <call-id>')
    .description(`every journaled field of one call (full id, or a unique prefix among the newest ${PREFIX_WINDOW})`)
    .option('--json', 'print JSON')
    .action((given: string, o: { json?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const j = openAudit(ctx);
      if (j === null) throw new PosternError('CALL_NOT_FOUND', `no call ${clean(given, 64)}: ${noJournal(ctx)}`);
      const view = withJournals(j, (jj) => {
        const exact = jj.activity.getCall(given);
        if (exact !== undefined) return exact;
        if (given === '') return undefined;
        const recent = jj.activity.listCalls({ limit: PREFIX_WINDOW });
        const id = resolvePrefix(given, recent.map((c) => c.call.call_id), 'call');
        return recent.find((c) => c.call.call_id === id);
      });
      if (view === undefined) {
        throw new PosternError('CALL_NOT_FOUND', `no call ${clean(given, 64)} in the journal (a prefix is looked up among the newest ${PREFIX_WINDOW} calls; give the full id from \`postern audit activity --json\` for older ones)`);
      }
      if (o.json === true) ctx.out(jsonForTerminal(view));
      else for (const line of callDetails(view)) ctx.out(line);
    });

  audit
    .command('session [session-id]')
    .description("one session (full id or unique prefix): its start, its events and its calls; --daemon: the daemon's own events")
    .option('--daemon', 'show daemon-wide events (daemon start/stop, lock/unlock, catalog acceptance) instead of a session')
    .option('--limit <n>', `at most this many events, oldest first (default and most ${MAX_LIMIT})`)
    .option('--json', 'print JSON')
    .action((given: string | undefined, o: { daemon?: boolean; limit?: string; json?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      if ((given === undefined) === (o.daemon !== true)) throw new PosternError('USAGE', 'give a session id, or --daemon for the daemon-wide events');
      const limit = parseLimit(o.limit) ?? MAX_LIMIT;
      const j = openAudit(ctx);
      if (j === null) {
        if (given !== undefined) throw new PosternError('INPUT_INVALID', `no session ${clean(given, 64)}: ${noJournal(ctx)}`);
        return emptyList(ctx, o.json === true);
      }
      if (given === undefined) {
        const events = withJournals(j, (jj) => jj.sessions.events(null, { limit }));
        if (o.json === true) ctx.out(jsonForTerminal(events));
        else if (events.length === 0) ctx.out('no daemon events journaled');
        else ctx.out(renderTable(['SEQ', 'TIME', 'EVENT', 'DATA'], events.map(eventRow)));
        return;
      }
      const found = withJournals(j, (jj) => {
        if (given === '') return undefined;
        let id = jj.sessions.events(given, { limit: 1 }).length > 0 ? given : resolvePrefix(given, jj.sessions.listSessions({ limit: MAX_LIMIT }).map((s) => s.session_id), 'session');
        // Calls of a session whose start could not be journaled are still shown.
        if (id === undefined && jj.activity.listCalls({ session_id: given, limit: 1 }).length > 0) id = given;
        if (id === undefined) return undefined;
        return { id, events: jj.sessions.events(id, { limit }), calls: jj.activity.listCalls({ session_id: id, limit: SESSION_CALLS }) };
      });
      if (found === undefined) throw new PosternError('INPUT_INVALID', `no session ${clean(given, 64)} in the sessions journal`);
      if (o.json === true) {
        ctx.out(jsonForTerminal({ session_id: found.id, events: found.events, calls: found.calls }));
        return;
      }
      for (const line of sessionDetails(found.id, found.events)) ctx.out(line);
      ctx.out('');
      ctx.out(`events (${found.events.length}${found.events.length === limit ? ', more not shown' : ''}):`);
      ctx.out(renderTable(['SEQ', 'TIME', 'EVENT', 'DATA'], found.events.map(eventRow)));
      ctx.out('');
      if (found.calls.length === 0) ctx.out('calls: none journaled');
      else {
        ctx.out(`calls (${found.calls.length}, newest first):`);
        ctx.out(renderTable(CALL_HEADER, found.calls.map(callRow)));
        const hint = moreHint(found.calls.length, SESSION_CALLS, `see all with \`postern audit activity --session ${clean(found.id, 64)} --limit N\``);
        if (hint !== null) ctx.out(hint);
      }
    });

  audit
    .command('timeline <session-id>')
    .description("one session's history in time order: its events, each call's steps (admitted, approval, intent, outcome) and the daemon-wide events meanwhile (lock, catalog changes, vault changes)")
    .option('--limit <n>', `at most this many events, calls and daemon events each (default and most ${MAX_LIMIT})`)
    .option('--json', 'print JSON')
    .action((given: string, o: { limit?: string; json?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const limit = parseLimit(o.limit) ?? MAX_LIMIT;
      const j = openAudit(ctx);
      if (j === null) throw new PosternError('INPUT_INVALID', `no session ${clean(given, 64)}: ${noJournal(ctx)}`);
      const found = withJournals(j, (jj) => (given === '' ? undefined : sessionTimeline(jj, resolveSessionId(jj, given), limit)));
      if (found === undefined) throw new PosternError('INPUT_INVALID', `no session ${clean(given, 64)} in the journals`);
      if (o.json === true) {
        ctx.out(jsonForTerminal(found));
        return;
      }
      ctx.out(`session ${clean(found.session_id, 64)}: ${found.entries.length} entries, oldest first${found.truncated ? ` (a limit of ${limit} was reached: raise --limit)` : ''}`);
      ctx.out(renderTable(TIMELINE_HEADER, found.entries.map(timelineRow)));
    });

  audit
    .command('verify')
    .description('check both hash chains and the journal anchor; exits 1 naming the first broken seq or the mismatch, prints each head when intact')
    .option('--unlock', "ask for the passphrase to check the anchor's MAC too (rewritten and re-chained entries, with the anchor edited to match)")
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean; unlock?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const unlocked = o.unlock === true ? await vaultFacts(ctx) : undefined;
      try {
        const j = openAudit(ctx);
        const inspection = inspectAnchor(ctx.paths.journalDir, ctx.paths.anchor, unlocked?.key, unlocked?.generation);
        const anchor = describeInspection(inspection);
        if (j === null) {
          if (o.json === true) ctx.out(JSON.stringify({ sessions: null, activity: null, anchor: { ok: anchor.ok, ...inspection } }));
          else ctx.out(`${noJournal(ctx)}; nothing to verify${anchor.ok ? '' : `; anchor: ${clean(anchor.line, 2000)}`}`);
          if (!anchor.ok) process.exitCode = 1;
          return;
        }
        const reports = withJournals(j, (jj) => ({ sessions: jj.sessions.verify(), activity: jj.activity.verify() }));
        if (o.json === true) ctx.out(JSON.stringify({ ...reports, anchor: { ok: anchor.ok, ...inspection } }, null, 2));
        else {
          ctx.out(chainLine('sessions', reports.sessions));
          ctx.out(chainLine('activity', reports.activity));
          ctx.out(`anchor: ${anchor.ok ? 'ok' : 'MISMATCH'}: ${clean(anchor.line, 2000)}`);
        }
        if (!reports.sessions.ok || !reports.activity.ok || !anchor.ok) process.exitCode = 1;
      } finally {
        unlocked?.key.fill(0);
      }
    });

  audit
    .command('export')
    .description('both journals as JSON lines (sessions, then activity), each line tagged with its journal')
    .option('--out <file>', 'write to a new file (mode 600) instead of standard output')
    .action((o: { out?: string }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const j = openAudit(ctx);
      if (j === null) {
        // Standard output carries only JSON lines.
        if (o.out === undefined) process.stderr.write(`${noJournal(ctx)}; nothing to export\n`);
        else ctx.out(`${noJournal(ctx)}; nothing to export (${clean(o.out, 200)} was not created)`);
        return;
      }
      if (o.out !== undefined) {
        const file = o.out;
        const n = withJournals(j, (jj) => exportTo(jj, file));
        ctx.out(`exported ${n.sessions} sessions entries and ${n.activity} activity entries to ${clean(file, 200)}`);
        return;
      }
      withJournals(j, (jj) => {
        const b = batcher((chunk) => ctx.out(chunk));
        jj.sessions.exportJsonl((l) => b.add(terminalSafeJsonLine(l)));
        jj.activity.exportJsonl((l) => b.add(terminalSafeJsonLine(l)));
        b.end();
      });
    });

  registerFindSecret(audit, { openAudit, withJournals, parseTime });
}
