/**
 * How `postern audit` shows journal rows: tables, one call's or one session's
 * details, chain reports. Every journal value goes through sanitizeForTerminal
 * (an agent controls tool arguments, client names and more); long values are
 * bounded so one value cannot flood the screen.
 */
import type { CallView, ChainBreak, ChainReport, SessionEventRow, SessionRow, SessionStart, TargetDetails, TimelineEntry } from '../journal/index.js';
import { sanitizeForTerminal as clean } from '../rules/terminal-text.js';

export const SHORT_ID = 8;
/** Per value in `show` and `session`: long enough to see everything that matters, bounded so one value cannot flood the screen. */
const SHOW_MAX = 20_000;
const LABEL = 22;

/** JSON-shaped text for a terminal: every string (keys too) is sanitized and its quotes escaped, so none can pass for structure. */
function renderValue(v: unknown, indent: string | null, max: number, depth = ''): string {
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
export function terminalSafeJsonLine(line: string): string {
  return line.replace(/[\u007f-\u009f\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Cn}]/gu, (m) =>
    Array.from({ length: m.length }, (_, i) => `\\u${m.charCodeAt(i).toString(16).padStart(4, '0')}`).join(''),
  );
}

export const short = (id: string | null): string => (id === null ? '-' : id.slice(0, SHORT_ID));
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

export function callRow(c: CallView): string[] {
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

export const CALL_HEADER = ['TIME', 'CALL', 'SESSION', 'TOOL', 'REV', 'STATUS', 'ERROR', 'APPROVAL', 'TARGET'];

/** A journaled uid with the user name the daemon read at connect, when it did (docs/agent-users.md). */
function uidLabel(uid: number, user: unknown): string {
  return typeof user === 'string' ? `uid ${uid} (${user})` : `uid ${uid}`;
}

export function sessionRow(s: SessionRow): string[] {
  const client = [s.client_name ?? '?', s.client_version ?? ''].join(' ').trim();
  const peer = [s.peer_pid === null ? '' : `pid ${s.peer_pid}`, s.peer_uid === null ? '' : uidLabel(s.peer_uid, s.peer_user)].filter((x) => x !== '').join(' ');
  const ended = s.ended_at === null ? '-' : `${s.ended_at}${s.end_reason === null ? '' : ` (${s.end_reason})`}`;
  return [
    clean(s.started_at, 40),
    clean(short(s.session_id)),
    clean(client, 40),
    clean(s.transport, 20),
    clean(peer === '' ? '-' : peer, 60),
    clean(s.run_id ?? '-', 40),
    clean(ended, 70),
  ];
}

export const SESSION_HEADER = ['STARTED', 'SESSION', 'CLIENT', 'TRANSPORT', 'PEER', 'RUN', 'ENDED'];

const EVENT_DATA_MAX = 300;

export function eventRow(e: SessionEventRow): string[] {
  const data = Array.from(renderValue(e.data, null, 80)); // code points: a cut never splits a pair
  const shown = data.length <= EVENT_DATA_MAX ? data.join('') : `${data.slice(0, EVENT_DATA_MAX).join('')}… +${data.length - EVENT_DATA_MAX} more`;
  return [String(e.seq), clean(e.at, 40), clean(e.type, 30), shown];
}

export const TIMELINE_HEADER = ['TIME', 'FROM', 'WHAT', 'CALL', 'TOOL', 'DATA'];

/** One timeline row: a session event, a daemon-wide event meanwhile, or a step of one of the session's calls. */
export function timelineRow(e: TimelineEntry): string[] {
  const data = Array.from(renderValue(dropNulls(e.data), null, 80));
  const shown = data.length <= EVENT_DATA_MAX ? data.join('') : `${data.slice(0, EVENT_DATA_MAX).join('')}… +${data.length - EVENT_DATA_MAX} more`;
  return [clean(e.at, 40), e.source, clean(e.kind, 30), short(e.call_id), e.tool === null ? '-' : clean(e.tool, 40), shown];
}

/** A row shows what happened, not every field that did not apply. */
function dropNulls(d: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(d).filter(([, v]) => v !== null));
}

/** Printed under a table that was cut at its limit. */
export function moreHint(shown: number, limit: number, how: string): string | null {
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
  out.field('agent release', r.agent_release ?? '-');
  out.field('tool', r.tool);
  out.field('revision', `seen ${rev(r.revision_seen)}, executed ${rev(r.revision_executed)}`);
  out.field('toolset planned', r.toolset_planned ?? '-');
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
    if (a.rule !== undefined) out.field('  pre-approval rule', a.rule);
    if (a.presence !== undefined) out.field('  presence', `passkey ${a.presence.credential} (user present: ${yesNo(a.presence.user_present)}, user verified: ${yesNo(a.presence.user_verified)})`);
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
  const exposed = [...(r.exposures ?? []), ...(c.outcome?.exposures ?? [])];
  if (exposed.length > 0) {
    out.field('secrets redacted', `${exposed.length} (see \`postern audit find-secret NAME\`)`);
    for (const x of exposed) out.field(`  ${x.credential}`, `in ${x.in.join(', ')}`);
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
    if (typeof o.output_adapter === 'string') out.field('  output adapter', o.output_adapter);
  } else if (c.status === 'in_progress') {
    out.field('outcome', '- (none journaled: still running, or the daemon stopped and has not restarted)');
  }
  out.block('raw arguments (as received):', r.raw_arguments);
  out.block('normalized arguments:', r.normalized_arguments);
  if (o !== null && 'result' in o) out.block('result (as returned to the agent):', o.result);
  return out.lines;
}

export function sessionDetails(id: string, events: readonly SessionEventRow[]): string[] {
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
    out.field('peer', `pid ${str(s.peer_pid)}, ${typeof s.peer_uid === 'number' ? uidLabel(s.peer_uid, s.peer_user) : `uid ${str(s.peer_uid)}`}`);
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
  unreadable: 'the file is damaged: these entries cannot be read',
  claim_mismatch: 'the idempotency claims disagree with the history',
};

export function chainLine(name: string, r: ChainReport): string {
  if (!r.ok) {
    if (r.reason === 'unreadable') {
      const to = r.unreadable_to === undefined || r.unreadable_to === null ? 'the end' : `seq ${r.unreadable_to}`;
      const after = r.unreadable_to === undefined || r.unreadable_to === null ? '' : ', the entries after it could be read';
      return `${name} journal: DAMAGED from seq ${r.first_bad_seq} to ${to}: ${BREAKS[r.reason]} (${r.reason}); ${r.entries_checked} entries before it are intact${after}`;
    }
    return `${name} journal: BROKEN at seq ${r.first_bad_seq}: ${BREAKS[r.reason]} (${r.reason}); ${r.entries_checked} entries before it are intact`;
  }
  if (r.head === null) return `${name} journal: ok, empty`;
  const pruned = r.base === undefined ? '' : ` (pruned: starts after seq ${r.base.seq})`;
  return `${name} journal: ok, ${r.entries} entries${pruned}, head seq ${r.head.seq} hash ${r.head.hash}`;
}

/** Buffers lines and hands them on in large pieces. */
