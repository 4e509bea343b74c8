/**
 * `postern audit sessions|activity|show|session|verify|export`: incident
 * questions answered from the two journals (DESIGN §8) — which agent session
 * asked for what, with which raw arguments, what they were normalized to,
 * under which revisions, who approved it, what left the machine and what came
 * back — and whether the journals are still what was written.
 *
 * Invariants:
 * - the journals are opened read-only (no recovery, no writes), so a running
 *   daemon is not disturbed and its in-flight calls are shown as in progress;
 * - no passphrase is asked: the journals hold no secret values;
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
import { openJournals } from '../../journal/index.js';
import type { CallView, ChainBreak, ChainReport, Journals, SessionEventRow, SessionRow, SessionStart, TargetDetails } from '../../journal/index.js';
import { ACTIVITY_SCHEMA } from '../../journal/activity-schema.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../../journal/filters.js';
import { SESSIONS_SCHEMA } from '../../journal/sessions.js';
import { PosternError } from '../../protocol/errors.js';
import { contextFor, type CliContext } from '../context.js';
import { jsonForTerminal, sanitizeForTerminal as clean } from '../sanitize.js';
import { renderTable } from '../table.js';

const SHORT_ID = 8;
/** Per value in `show` and `session`: long enough to see everything that matters, bounded so one value cannot flood the screen. */
const SHOW_MAX = 20_000;
const LABEL = 22;
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

/** JSON-shaped text for a terminal: every string (keys too) is sanitized and its quotes escaped, so none can pass for structure. */
export function renderValue(v: unknown, indent: string | null, max: number, depth = ''): string {
  if (typeof v === 'string') return `"${clean(v, max).replace(/"/g, '\\"')}"`;
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  const inner = indent === null ? '' : depth + indent;
  const nl = indent === null ? '' : '\n';
  const close = indent === null ? '' : depth;
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]';
    const items = (v as unknown[]).map((x) => inner + renderValue(x, indent, max, inner));
    return `[${nl}${items.join(`,${nl}`)}${nl}${close}]`;
  }
  const entries = Object.entries(v);
  if (entries.length === 0) return '{}';
  const sep = indent === null ? ':' : ': ';
  const items = entries.map(([k, x]) => `${inner}${renderValue(k, indent, max)}${sep}${renderValue(x, indent, max, inner)}`);
  return `{${nl}${items.join(`,${nl}`)}${nl}${close}}`;
}

/** One JSON line from the journal, with the characters jsonForTerminal escapes escaped: still valid JSON, same value. */
function terminalSafeJsonLine(line: string): string {
  return line.replace(/[\u007f-\u009f\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Cn}]/gu, (m) =>
    Array.from({ length: m.length }, (_, i) => `\\u${m.charCodeAt(i).toString(16).padStart(4, '0')}`).join(''),
  );
}

const short = (id: string | null): string => (id === null ? '-' : id.slice(0, SHORT_ID));
const rev = (n: number | null): string => (n === null ? '-' : `r${n}`);

function shellWord(a: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`;
}

/** Where a call went: method and URL, or ssh user@host and argv. Not sanitized: callers do. */
function targetSummary(t: TargetDetails): string {
  switch (t.kind) {
    case 'http':
      return `${t.method} ${t.url}`;
    case 'ssh':
      return `ssh ${t.user}@${t.host}${t.port === 22 ? '' : `:${t.port}`} ${t.argv.map(shellWord).join(' ')}`;
  }
}

function errorCodeOf(c: CallView): string | null {
  return c.rejection?.error_code ?? c.outcome?.error_code ?? null;
}

function callRow(c: CallView): string[] {
  const a = c.call.approval;
  const target = c.target !== null ? targetSummary(c.target) : c.replay_of !== null ? `replay of ${short(c.replay_of)}` : '-';
  return [
    clean(c.journaled_at, 40),
    clean(short(c.call.call_id)),
    clean(short(c.call.session_id)),
    clean(c.call.tool, 40),
    clean(`${rev(c.call.revision_seen)}→${rev(c.call.revision_executed)}`, 30),
    clean(c.status, 20),
    clean(errorCodeOf(c) ?? '-', 40),
    a === null ? '-' : clean(`${a.mode}/${a.outcome}`, 30),
    clean(target, 80),
  ];
}

const CALL_HEADER = ['TIME', 'CALL', 'SESSION', 'TOOL', 'REV', 'STATUS', 'ERROR', 'APPROVAL', 'TARGET'];

function sessionRow(s: SessionRow): string[] {
  const client = [s.client_name ?? '?', s.client_version ?? ''].join(' ').trim();
  const peer = [s.peer_pid === null ? '' : `pid ${s.peer_pid}`, s.peer_uid === null ? '' : `uid ${s.peer_uid}`].filter((x) => x !== '').join(' ');
  const ended = s.ended_at === null ? '-' : `${s.ended_at}${s.end_reason === null ? '' : ` (${s.end_reason})`}`;
  return [
    clean(s.started_at, 40),
    clean(short(s.session_id)),
    clean(client, 40),
    clean(s.transport, 20),
    clean(peer === '' ? '-' : peer, 30),
    clean(s.run_id ?? '-', 40),
    clean(ended, 70),
  ];
}

const SESSION_HEADER = ['STARTED', 'SESSION', 'CLIENT', 'TRANSPORT', 'PEER', 'RUN', 'ENDED'];

const EVENT_DATA_MAX = 300;

function eventRow(e: SessionEventRow): string[] {
  const data = Array.from(renderValue(e.data, null, 80)); // code points: a cut never splits a pair
  const shown = data.length <= EVENT_DATA_MAX ? data.join('') : `${data.slice(0, EVENT_DATA_MAX).join('')}… +${data.length - EVENT_DATA_MAX} more`;
  return [String(e.seq), clean(e.at, 40), clean(e.type, 30), shown];
}

/** Printed under a table that was cut at its limit. */
function moreHint(shown: number, limit: number, how: string): string | null {
  return shown < limit ? null : `(the newest ${shown} are shown; ${how})`;
}

class Lines {
  readonly lines: string[] = [];

  field(label: string, value: string): void {
    this.lines.push(`${label.padEnd(LABEL)}${clean(value, SHOW_MAX)}`);
  }

  block(label: string, v: unknown): void {
    this.lines.push(label);
    for (const l of renderValue(v, '  ', SHOW_MAX).split('\n')) this.lines.push(`  ${l}`);
  }
}

const yesNo = (b: boolean | null): string => (b === null ? 'unknown' : b ? 'yes' : 'no');

/** Every field of one call, one a line; values sanitized. */
export function callDetails(c: CallView): string[] {
  const r = c.call;
  const out = new Lines();
  out.field('call', r.call_id);
  out.field('status', c.status);
  out.field('journaled', `${c.journaled_at} (seq ${c.seq})`);
  out.field('admitted', r.at);
  out.field('session', r.session_id ?? '-');
  out.field('run', r.run_id ?? '-');
  out.field('tool', r.tool);
  out.field('revision', `seen ${rev(r.revision_seen)}, executed ${rev(r.revision_executed)}`);
  out.field('handler revision', r.handler_revision);
  out.field('adapter', r.adapter_applied ?? '-');
  out.field('decision path', r.decision_path.length === 0 ? '-' : r.decision_path.join(' → '));
  out.field('idempotency key', r.idempotency_key ?? '-');
  out.field('arguments digest', r.args_digest ?? '-');
  const a = r.approval;
  if (a === null) out.field('approval', '- (none asked)');
  else {
    out.field('approval', `${a.mode}: ${a.outcome}`);
    out.field('  by', `${a.decided_by ?? '-'} at ${a.decided_at ?? '-'}`);
    out.field('  approval id', a.id ?? '-');
  }
  out.field('side effect started', c.outcome === null ? yesNo(r.side_effect_started) : `${yesNo(c.outcome.side_effect_started)} (when first journaled: ${yesNo(r.side_effect_started)})`);
  const t = c.target;
  if (t === null) out.field('target', '- (nothing was to run)');
  else {
    out.field('target', targetSummary(t));
    switch (t.kind) {
      case 'http':
        out.field('  method', t.method);
        out.field('  url', t.url);
        out.field('  connected ip', t.connected_ip ?? '-');
        break;
      case 'ssh':
        out.field('  host', `${t.host} port ${t.port}`);
        out.field('  user', t.user);
        t.argv.forEach((x, i) => out.field(`  argv[${i}]`, x));
        out.field('  host key', t.host_key_fingerprint);
        if (t.offered_fingerprint !== undefined) out.field('  offered host key', t.offered_fingerprint);
        break;
    }
  }
  if (c.rejection !== null) {
    out.field('rejected', c.rejection.error_code);
    out.field('  message', c.rejection.message);
  }
  if (c.replay_of !== null) out.field('replay of', `${c.replay_of} (its result was returned; nothing was run again)`);
  const o = c.outcome;
  if (o !== null) {
    out.field('outcome', `${o.status} at ${o.at}${o.recovered ? ' (written by crash recovery: the daemon stopped before the call ended)' : ''}`);
    out.field('  duration', o.duration_ms === null ? '-' : `${o.duration_ms} ms`);
    out.field('  error code', o.error_code ?? '-');
    out.field('  response status', o.response_status === null ? '-' : String(o.response_status));
    out.field('  exit code', o.exit_code === null ? '-' : String(o.exit_code));
    out.field('  connected ip', o.connected_ip ?? '-');
    out.field('  result digest', o.result_digest ?? '-');
    out.field('  idempotency claim', o.claim ?? '-');
    if (o.target_extra !== null) out.field('  target extra', renderValue(o.target_extra, null, SHOW_MAX));
  } else if (c.status === 'in_progress') {
    out.field('outcome', '- (none journaled: still running, or the daemon stopped and has not restarted)');
  }
  out.block('raw arguments (as received):', r.raw_arguments);
  out.block('normalized arguments:', r.normalized_arguments);
  if (o !== null && 'result' in o) out.block('result (as returned to the agent):', o.result);
  return out.lines;
}

function sessionDetails(id: string, events: readonly SessionEventRow[]): string[] {
  const out = new Lines();
  const started = events.find((e) => e.type === 'session_started');
  const closed = events.find((e) => e.type === 'session_closed');
  out.field('session', id);
  if (started === undefined) out.field('started', '- (no session start journaled)');
  else {
    const s = started.data as Partial<SessionStart>;
    const str = (v: unknown): string => (typeof v === 'string' ? v : v === null || v === undefined ? '-' : JSON.stringify(v));
    out.field('started', `${started.at} (seq ${started.seq})`);
    out.field('client', `${str(s.client_name)} ${str(s.client_version)}`);
    out.field('protocol', str(s.protocol_version));
    out.field('transport', str(s.transport));
    out.field('peer', `pid ${str(s.peer_pid)}, uid ${str(s.peer_uid)}`);
    out.field('run', str(s.run_id));
    out.field('agent release', str(s.agent_release));
  }
  const reason = closed?.data['reason'];
  out.field('ended', closed === undefined ? '- (not closed: still open, or the daemon stopped)' : `${closed.at}${typeof reason === 'string' ? ` (${reason})` : ''}`);
  return out.lines;
}

// ---------------------------------------------------------------------------
// Verify and export

const BREAKS: Record<ChainBreak, string> = {
  hash_mismatch: 'the entry was edited',
  prev_hash_mismatch: 'an entry was replaced or inserted',
  missing_entry: 'an entry was deleted',
  claim_mismatch: 'the idempotency claims disagree with the history',
};

function chainLine(name: string, r: ChainReport): string {
  if (!r.ok) {
    return `${name} journal: BROKEN at seq ${r.first_bad_seq}: ${BREAKS[r.reason]} (${r.reason}); ${r.entries_checked} entries before it are intact`;
  }
  if (r.head === null) return `${name} journal: ok, empty`;
  return `${name} journal: ok, ${r.entries} entries, head seq ${r.head.seq} hash ${r.head.hash}`;
}

/** Buffers lines and hands them on in large pieces. */
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
      const since = parseTime('--since', o.since, new Date());
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
      const now = new Date();
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
    .command('verify')
    .description('check both hash chains; exits 1 naming the first broken seq, prints each head when intact')
    .option('--json', 'print JSON')
    .action((o: { json?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const j = openAudit(ctx);
      if (j === null) {
        if (o.json === true) ctx.out(JSON.stringify({ sessions: null, activity: null }));
        else ctx.out(`${noJournal(ctx)}; nothing to verify`);
        return;
      }
      const reports = withJournals(j, (jj) => ({ sessions: jj.sessions.verify(), activity: jj.activity.verify() }));
      if (o.json === true) ctx.out(JSON.stringify(reports, null, 2));
      else {
        ctx.out(chainLine('sessions', reports.sessions));
        ctx.out(chainLine('activity', reports.activity));
        if (reports.sessions.ok && reports.activity.ok) {
          ctx.out('keep the head seq and hash somewhere else: entries removed from the end can only be noticed against them');
        }
      }
      if (!reports.sessions.ok || !reports.activity.ok) process.exitCode = 1;
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
}
