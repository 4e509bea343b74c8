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
import { openNewPrivateFile } from '../new-file.js';
import { closeSync, unlinkSync, writeSync } from 'node:fs';
import type { Command } from 'commander';
import { examples } from '../help.js';
import { sessionTimeline } from '../../journal/index.js';
import type { Journals } from '../../journal/index.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../../journal/filters.js';
import { isPosternError, PosternError } from '../../rules/errors.js';
import { inspectAnchor } from '../../journal/anchor/index.js';
import { contextFor, type CliContext } from '../context.js';
import { openAudit, noJournal, withJournals, parseLimit, parseTime, resolvePrefix, resolveSessionId, activityFilter, type ActivityOpts, type ListOpts } from '../audit-options.js';
import { describeInspection, vaultFacts } from './anchor.js';
import { checkpointFinding, exportBundle, registerAuditProof, verifyBundleFile } from './audit-proof.js';
import { registerAuditCheckpoint } from './audit-checkpoint.js';
import { jsonForTerminal, sanitizeForTerminal as clean } from '../../rules/terminal-text.js';
import { renderTable } from '../table.js';
import { parseCatalog } from '../../contracts/index.js';
import { readCatalogFile } from '../../home/catalog-store.js';
import { readDrain } from '../drain-journal.js';
import { DRAIN_JSON_FORMAT, drainJson, renderDrain, revisionDrain } from '../revision-drain.js';
import { withOperator } from './approvals.js';
import { registerFindSecret } from './audit-find-secret.js';
import { registerAuditSalvage } from './audit-salvage.js';
import { registerAuditShip, verifyFrom } from './audit-ship.js';
import { teamActivity, teamSessions, teamShow, teamTimeline, type TeamOpts } from './audit-team.js';
import { CALL_HEADER, SESSION_HEADER, TIMELINE_HEADER, callDetails, callRow, chainLine, eventRow, moreHint, sessionDetails, sessionRow, terminalSafeJsonLine, timelineRow } from '../audit-render.js';

interface TeamFlags {
  from?: string;
  home?: string;
}

/** The shipped journals a command asks (`--from`), or null for the local ones; `--home` alone is a usage error. */
function teamOf(o: TeamFlags): TeamOpts | null {
  if (o.from === undefined && o.home !== undefined) throw new PosternError('USAGE', '--home goes with --from');
  return o.from === undefined ? null : { from: o.from, ...(o.home === undefined ? {} : { home: o.home }) };
}

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

/** No journal for a list command: a message, or for --json an empty list (the message then goes to stderr). */
function emptyList(ctx: CliContext, json: boolean): void {
  if (!json) return ctx.out(noJournal(ctx));
  ctx.out('[]');
  process.stderr.write(`${noJournal(ctx)}\n`);
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
  const fd = openNewPrivateFile(file, 'not exported to');
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

/** `fn`'s value, or `onDamaged`'s when a journal file is damaged (JOURNAL_DAMAGED); anything else is thrown. */
function orDamaged<T, U>(fn: () => T, onDamaged: (message: string) => U): T | U {
  try {
    return fn();
  } catch (e) {
    if (isPosternError(e) && e.code === 'JOURNAL_DAMAGED') return onDamaged(e.message);
    throw e;
  }
}

export function registerAudit(program: Command): void {
  const audit = program
    .command('audit')
    .description('answer incident questions from the journals: sessions, calls, approvals, targets, results (read-only; no passphrase)')
    .addHelpText('after', examples([
      'postern audit sessions',
      'postern audit activity --tool create_issue',
      'postern audit verify',
    ]));

  registerAuditSessions(audit);
  registerAuditActivity(audit);
  registerAuditRevisions(audit);
  registerAuditShow(audit);
  registerAuditSession(audit);
  registerAuditTimeline(audit);
  registerAuditVerify(audit);
  registerAuditExport(audit);
  registerFindSecret(audit, { openAudit, withJournals, parseTime });
  registerAuditProof(audit);
  registerAuditCheckpoint(audit);
  registerAuditSalvage(audit);
  registerAuditShip(audit);
}

function registerAuditSessions(audit: Command): void {
  audit
    .command('sessions')
    .description('list agent sessions, newest first')
    .option('--since <time>', 'sessions started at or after this ISO 8601 time or age (2h, 7d)')
    .option('--limit <n>', `at most this many (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT})`)
    .option('--from <url>', 'across every home shipped to this PostgreSQL database (postgres://…; docs/teams.md)')
    .option('--home <home>', 'with --from: this home only (its name, id or id prefix)')
    .option('--json', 'print JSON')
    .action(async (o: ListOpts & TeamFlags, cmd: Command) => {
      const ctx = contextFor(cmd);
      const t = teamOf(o);
      if (t !== null) return teamSessions(ctx, t, o);
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
}

function registerAuditActivity(audit: Command): void {
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
    .option('--from <url>', 'across every home shipped to this PostgreSQL database (postgres://…; docs/teams.md)')
    .option('--home <home>', 'with --from: this home only (its name, id or id prefix)')
    .option('--json', 'print JSON')
    .action(async (o: ActivityOpts & TeamFlags, cmd: Command) => {
      const ctx = contextFor(cmd);
      const t = teamOf(o);
      if (t !== null) return teamActivity(ctx, t, o);
      const limit = parseLimit(o.limit);
      const now = ctx.clock.now();
      const since = parseTime('--since', o.since, now);
      const until = parseTime('--until', o.until, now);
      const j = openAudit(ctx);
      if (j === null) return emptyList(ctx, o.json === true);
      const calls = withJournals(j, (jj) => jj.activity.listCalls(activityFilter(jj, o, { since, until, limit })));
      if (o.json === true) ctx.out(jsonForTerminal(calls));
      else if (calls.length === 0) ctx.out('no calls match');
      else {
        ctx.out(renderTable(CALL_HEADER, calls.map(callRow)));
        const hint = moreHint(calls.length, limit ?? DEFAULT_LIMIT, 'narrow with --since/--until or raise --limit');
        if (hint !== null) ctx.out(hint);
      }
    });
}

function registerAuditRevisions(audit: Command): void {
  audit
    .command('revisions')
    .description('drain counts: per tool and planned revision, how its calls were handled, last seen, live sessions still on it')
    .option('--tool <tool>', 'this tool only')
    .option('--since <time>', 'count calls journaled at or after this ISO 8601 time or age (2h, 7d)')
    .option('--waiting', 'also count the calls waiting for approval now, per planned revision (asks the running daemon: needs the passphrase)')
    .option('--json', `print JSON (${DRAIN_JSON_FORMAT})`)
    .action(async (o: { tool?: string; since?: string; json?: boolean; waiting?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const since = parseTime('--since', o.since, ctx.clock.now());
      const accepted = await readCatalogFile(ctx.paths.acceptedCatalog);
      const catalog = accepted === undefined ? undefined : parseCatalog(accepted.text, ctx.paths.acceptedCatalog);
      // The queue lives in the daemon: a waiting call has no journal entry until it is decided.
      // A card planned against the current revision names none (revision_seen null): it counts under the one it runs at.
      const waiting =
        o.waiting !== true ? undefined : (await withOperator(ctx, {}, (c) => c.request('approvals.list', {}))).map((card) => ({ tool: card.tool, revision_seen: card.revision_seen ?? card.revision }));
      const j = openAudit(ctx);
      if (j === null && o.json !== true && waiting === undefined) return ctx.out(noJournal(ctx));
      const rows =
        j !== null ? withJournals(j, (jj) => readDrain(jj, catalog, { since, tool: o.tool, waiting }))
        : waiting === undefined ? []
        : revisionDrain({ heads: [], live: [], catalog, since, tool: o.tool, waiting });
      if (o.json === true) ctx.out(jsonForTerminal(drainJson(rows, since)));
      else if (rows.length === 0) ctx.out(o.tool === undefined ? 'no calls journaled yet' : `no calls of ${clean(o.tool, 64)} journaled`);
      else ctx.out(renderDrain(rows));
    });
}

function registerAuditShow(audit: Command): void {
  audit
    .command('show <call-id>')
    .description(`every journaled field of one call (full id, or a unique prefix among the newest ${PREFIX_WINDOW})`)
    .option('--from <url>', 'across every home shipped to this PostgreSQL database (postgres://…; docs/teams.md)')
    .option('--home <home>', 'with --from: this home only (its name, id or id prefix)')
    .option('--json', 'print JSON')
    .action(async (given: string, o: { json?: boolean } & TeamFlags, cmd: Command) => {
      const ctx = contextFor(cmd);
      const t = teamOf(o);
      if (t !== null) return teamShow(ctx, t, given, o);
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
}

function registerAuditSession(audit: Command): void {
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
}

function registerAuditTimeline(audit: Command): void {
  audit
    .command('timeline <session-id>')
    .description("one session's history in time order: its events, each call's steps (admitted, approval, intent, outcome) and the daemon-wide events meanwhile (lock, catalog changes, vault changes)")
    .option('--limit <n>', `at most this many events, calls and daemon events each (default and most ${MAX_LIMIT})`)
    .option('--from <url>', 'across every home shipped to this PostgreSQL database (postgres://…; docs/teams.md)')
    .option('--home <home>', 'with --from: this home only (its name, id or id prefix)')
    .option('--json', 'print JSON')
    .action(async (given: string, o: { limit?: string; json?: boolean } & TeamFlags, cmd: Command) => {
      const ctx = contextFor(cmd);
      const t = teamOf(o);
      if (t !== null) return teamTimeline(ctx, t, given, o);
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
}

function registerAuditVerify(audit: Command): void {
  audit
    .command('verify')
    .description('check both hash chains and the journal anchor; exits 1 naming the first broken seq or the mismatch, prints each head when intact')
    .option('--unlock', "ask for the passphrase to check the anchor's MAC too (rewritten and re-chained entries, with the anchor edited to match)")
    .option('--key <fingerprint>', 'require the checkpoints (or the bundle) to be signed by this key: its fingerprint (`postern audit key`) or public key')
    .option('--bundle <file>', 'verify an audit bundle instead, offline: no home, vault or passphrase needed')
    .option('--from <url>', 'verify what homes shipped to this PostgreSQL database instead (postgres://…; docs/teams.md)')
    .option('--home <home>', 'with --from: this home only (its name, id or id prefix)')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean; unlock?: boolean; key?: string; bundle?: string; from?: string; home?: string }, cmd: Command) => {
      const ctx = contextFor(cmd);
      if (o.from !== undefined) {
        if (o.bundle !== undefined || o.unlock === true) throw new PosternError('USAGE', '--from verifies the database: not with --bundle or --unlock');
        return verifyFrom(ctx, o.from, o);
      }
      if (o.home !== undefined) throw new PosternError('USAGE', '--home goes with --from');
      if (o.bundle !== undefined) return verifyBundleFile(ctx, o.bundle, o);
      const unlocked = o.unlock === true ? await vaultFacts(ctx) : undefined;
      try {
        const j = openAudit(ctx);
        // A damaged journal file still gets its chains walked (they name the unreadable range); the
        // anchor and checkpoint lines say what stopped them.
        const inspected = orDamaged(
          () => {
            const inspection = inspectAnchor(ctx.paths.journalDir, ctx.paths.anchor, unlocked?.key, unlocked?.generation);
            return { inspection: inspection, anchor: describeInspection(inspection) };
          },
          (line) => ({ inspection: { damaged: true }, anchor: { ok: false, line } }),
        );
        const { inspection, anchor } = inspected;
        if (j === null) {
          if (o.json === true) ctx.out(JSON.stringify({ sessions: null, activity: null, anchor: { ok: anchor.ok, ...inspection } }));
          else ctx.out(`${noJournal(ctx)}; nothing to verify${anchor.ok ? '' : `; anchor: ${clean(anchor.line, 2000)}`}`);
          if (!anchor.ok) process.exitCode = 1;
          return;
        }
        const reports = withJournals(j, (jj) => ({ sessions: jj.sessions.verify(), activity: jj.activity.verify() }));
        const cp = orDamaged(
          () => checkpointFinding(ctx, { ...(o.key === undefined ? {} : { key: o.key }), ...(unlocked === undefined ? {} : { unlocked }) }),
          (line) => ({ ok: false, line, json: { ok: false, line, kind: 'damaged' } }),
        );
        if (o.json === true) ctx.out(JSON.stringify({ ...reports, anchor: { ok: anchor.ok, ...inspection }, checkpoint: cp.json }, null, 2));
        else {
          ctx.out(chainLine('sessions', reports.sessions));
          ctx.out(chainLine('activity', reports.activity));
          ctx.out(`anchor: ${anchor.ok ? 'ok' : 'MISMATCH'}: ${clean(anchor.line, 2000)}`);
          ctx.out(`checkpoint: ${cp.ok ? 'ok' : 'MISMATCH'}: ${clean(cp.line, 2000)}`);
        }
        if (!reports.sessions.ok || !reports.activity.ok || !anchor.ok || !cp.ok) process.exitCode = 1;
      } finally {
        unlocked?.wipe();
      }
    });
}

function registerAuditExport(audit: Command): void {
  audit
    .command('export')
    .description('both journals as JSON lines (sessions, then activity), each line tagged with its journal')
    .option('--out <file>', 'write to a new file (mode 600) instead of standard output')
    .option('--bundle <file>', 'write a verifiable bundle of the calls the filters select (see `audit verify --bundle`) to a new file')
    .option('--tool <tool>', 'with --bundle: calls of this tool')
    .option('--session <id>', 'with --bundle: calls of this session (full id or unique prefix)')
    .option('--key <key>', 'with --bundle: calls with this idempotency key')
    .option('--error <code>', 'with --bundle: calls that failed or were refused with this error code')
    .option('--since <time>', 'with --bundle: journaled at or after this ISO 8601 time or age (2h, 7d)')
    .option('--until <time>', 'with --bundle: journaled before this ISO 8601 time or age')
    .option('--limit <n>', `with --bundle: at most this many calls, newest first (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT})`)
    .action(async (o: ActivityOpts & { out?: string; bundle?: string }, cmd: Command) => {
      const ctx = contextFor(cmd);
      if (o.bundle !== undefined) {
        if (o.out !== undefined) throw new PosternError('USAGE', 'give --bundle or --out, not both');
        return exportBundle(ctx, o.bundle, o);
      }
      const filtered = [o.tool, o.session, o.key, o.error, o.since, o.until, o.limit].some((x) => x !== undefined);
      if (filtered) throw new PosternError('USAGE', 'the filters select calls for --bundle; a plain export writes both journals whole');
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
}
