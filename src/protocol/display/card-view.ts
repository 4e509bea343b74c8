/**
 * What an approval card shows (DESIGN §9), as rows of sanitized text: the one
 * home of the card-to-display rule, used by `postern approvals …`, the TUI
 * and the approval page. Display logic, not wire: it sits beside the operator
 * protocol (../operator/), which only carries the card, and below it.
 *
 * Invariants: every value taken from the card passes through
 * ../../rules/terminal-text.ts (control, escape, bidi, zero-width and other invisible
 * characters escaped; long values cut with a visible "… +N more");
 * `fullyShown` is false as soon as any row hid something, and then session
 * approval is not offered; so is it for a card that widens authority or only
 * allows per-call approval (`sessionApproval.why` says which). An MCP
 * annotation never lowers the risk shown: the effect row shows Postern's own
 * effect class, and the annotations beside it are marked when they claim less.
 * Rows carry no terminal styling; `tone` lets a front end colour them.
 * Every surface opens a card with the same two summaries from here: one
 * sentence of what will happen (`cardSentence`) and one row naming every
 * argument with its size, LONG when it is, and where normalization changed
 * it (`argumentSummary`). What counts as having seen a card whole is
 * ../operator/presentation.ts.
 */
import type { ApprovalCard } from '../approvals.js';
import { sanitizeWithInfo } from '../../rules/terminal-text.js';
import { describeUsage } from '../limit-usage.js';

/** Characters a value may take before it is folded with "+N more". */
export const CARD_VALUE_MAX = 2_000;

export type RowTone = 'normal' | 'notice' | 'danger';

export interface CardRow {
  /** A fixed label chosen by Postern (never from the card). */
  readonly label: string;
  /** Sanitized, possibly folded. */
  readonly value: string;
  /** Characters of this value not shown (0 = shown whole). */
  readonly hidden: number;
  readonly tone: RowTone;
}

type SessionApproval = { readonly offered: true } | { readonly offered: false; readonly why: string };

export interface CardView {
  readonly id: string;
  /** One sentence of what will happen, sanitized (`cardSentence`). */
  readonly sentence: string;
  /** Every argument's name and size, sanitized and never folded (`argumentSummary`). */
  readonly summary: CardRow;
  readonly rows: readonly CardRow[];
  /** Characters hidden over all rows. */
  readonly hidden: number;
  readonly fullyShown: boolean;
  readonly sessionApproval: SessionApproval;
}

interface CardViewOptions {
  /** Characters per value before folding (default CARD_VALUE_MAX). */
  readonly maxValue?: number;
}

function shellWord(a: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`;
}

/** One line naming where the call goes: method + URL, or ssh user@host and argv (unsanitized: sanitize before printing). */
export function targetSummary(card: ApprovalCard): string {
  const t = card.target;
  switch (t.kind) {
    case 'http': {
      const query = t.query.length === 0 ? '' : `?${t.query.map(([k, v]) => `${k}=${v}`).join('&')}`;
      return `${t.method} ${t.origin}${t.path}${query}`;
    }
    case 'ssh':
      return `ssh ${t.user}@${t.host}${t.port === 22 ? '' : `:${t.port}`} ${t.argv.map(shellWord).join(' ')}`;
  }
}

const json = (v: unknown): string => JSON.stringify(v) ?? 'undefined';

/** True when a host name is not plain ASCII or is punycode: shown flagged so a look-alike stands out. */
export function unusualHost(host: string): boolean {
  return /[^\x21-\x7e]/.test(host) || /(^|\.)xn--/i.test(host);
}

function annotationsRow(card: ApprovalCard): { value: string; tone: RowTone } | null {
  const a = card.annotations;
  if (a === null) return null;
  const hints = [a.readOnlyHint ? 'readOnly' : null, a.destructiveHint ? 'destructive' : null, a.idempotentHint ? 'idempotent' : null, a.openWorldHint ? 'openWorld' : null].filter((x) => x !== null);
  const claimsLess = (a.readOnlyHint && card.effect !== 'read') || (!a.destructiveHint && card.effect === 'destructive');
  const text = hints.length === 0 ? '(none)' : hints.join(', ');
  return claimsLess ? { value: `${text} — claims less than the effect class ${card.effect}; the effect class is what applies`, tone: 'danger' } : { value: text, tone: 'normal' };
}

export function cardView(card: ApprovalCard, opts: CardViewOptions = {}): CardView {
  const max = opts.maxValue ?? CARD_VALUE_MAX;
  const rows: CardRow[] = [];
  const row = (label: string, value: string, tone: RowTone = 'normal'): void => {
    const s = sanitizeWithInfo(value, max);
    rows.push({ label, value: s.text, hidden: s.hidden, tone });
  };
  const s = card.session;
  row('id', card.id);
  row('session', `${s.client_name ?? '?'} ${s.client_version ?? ''} pid ${s.pid ?? '?'} (session ${s.id})`);
  row('tool', card.tool);
  const seen = card.revision_seen === null ? 'never listed by the session' : card.revision_seen === card.revision ? 'as the session saw it' : `the session saw r${card.revision_seen}`;
  row('revision', `r${card.revision} (${seen})`, card.revision_seen !== null && card.revision_seen !== card.revision ? 'notice' : 'normal');
  row('effect', card.effect, card.effect === 'read' ? 'normal' : card.effect === 'destructive' ? 'danger' : 'notice');
  const ann = annotationsRow(card);
  if (ann !== null) row('annotations', ann.value, ann.tone);
  if (card.widening.length === 0) row('authority', 'does not widen');
  else for (const w of card.widening) row('WIDENS', w, 'danger');
  for (const r of card.reasons) row('reason', r);
  row('target', targetSummary(card), 'notice');
  const t = card.target;
  switch (t.kind) {
    case 'http':
      row('host', `${t.host} port ${t.port}${unusualHost(t.host) ? '  [non-ASCII or punycode host]' : ''}`, unusualHost(t.host) ? 'danger' : 'normal');
      row('method', t.method);
      row('path', t.path);
      for (const [k, v] of t.query) row('query', `${k}=${v}`);
      for (const [k, v] of t.headers) row('header', `${k}: ${v}`);
      if (t.body !== null) row('body', t.body);
      break;
    case 'ssh':
      row('host', `${t.host} port ${t.port}${unusualHost(t.host) ? '  [non-ASCII or punycode host]' : ''}`, unusualHost(t.host) ? 'danger' : 'normal');
      row('user', t.user);
      row('host key', t.host_key === null ? 'NOT PINNED' : `pinned ${t.host_key}`, t.host_key === null ? 'danger' : 'normal');
      t.argv.forEach((a, i) => row(`argv[${i}]`, a));
      row('command', t.command);
      break;
  }
  row('credential', card.credential ?? '-');
  const raw = json(card.raw_arguments);
  const normalized = json(card.normalized_arguments);
  if (raw === normalized) row('arguments', raw);
  else {
    row('raw args', raw);
    row('normalized', normalized, 'notice');
  }
  if (card.adapter !== null) row('adapter', card.adapter, 'notice');
  row('idempotency', card.idempotency_key ?? '-');
  // "3 of 10 this session": the call about to be approved would take the next one (the last one: notice).
  for (const u of card.limits) row('limit', `${u.limit}: ${describeUsage(u)}`, u.used + 1 >= u.max ? 'notice' : 'normal');
  row('digest', card.call_digest);
  row('expires', card.expires_at);
  const hidden = rows.reduce((n, r) => n + r.hidden, 0);
  const fullyShown = hidden === 0;
  let sessionApproval: SessionApproval = { offered: true };
  if (card.widening.length > 0) sessionApproval = { offered: false, why: 'session approval is not offered: this revision widens authority' };
  else if (card.scope_allowed !== 'session') sessionApproval = { offered: false, why: 'session approval is not offered: this tool needs approval for every call' };
  else if (!fullyShown) sessionApproval = { offered: false, why: `session approval is not offered: ${hidden} characters of this card are not shown` };
  return { id: card.id, sentence: cardSentence(card), summary: { label: SUMMARY_LABEL, value: argumentSummary(card), hidden: 0, tone: 'normal' }, rows, hidden, fullyShown, sessionApproval };
}

/** The summary row's label. */
export const SUMMARY_LABEL = 'arg sizes';
/** An argument this long (characters of its value or of its JSON) is marked LONG in the summary. */
const LONG_ARGUMENT = 200;
/** The longest the sentence may be before it is folded (its parts are in the rows, whole). */
const SENTENCE_MAX = 400;

function sizeOf(v: unknown): string {
  if (typeof v === 'string') {
    const n = Array.from(v).length;
    return `${n.toLocaleString('en-US')} char${n === 1 ? '' : 's'}${n >= LONG_ARGUMENT ? ' (LONG)' : ''}`;
  }
  const n = Array.from(JSON.stringify(v) ?? 'null').length;
  const what = Array.isArray(v) ? `${v.length} item${v.length === 1 ? '' : 's'}, ` : '';
  return `${what}${n.toLocaleString('en-US')} chars of JSON${n >= LONG_ARGUMENT ? ' (LONG)' : ''}`;
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Every argument's name and size, in the order the call gives them, marked
 * where normalization changed it: "body 1,900 chars (LONG) · title 12 chars
 * (normalized differs)". Sanitized; names are cut at 40 characters (the
 * values themselves are in the rows, whole).
 */
function argumentSummary(card: Pick<ApprovalCard, 'raw_arguments' | 'normalized_arguments'>): string {
  const norm = card.normalized_arguments;
  const raw = card.raw_arguments;
  const differs = json(raw) !== json(norm);
  if (!isRecord(norm)) return `one value, ${sizeOf(norm)}${differs ? ' (normalized differs)' : ''}`;
  const rawRec = isRecord(raw) ? raw : {};
  const parts: string[] = [];
  for (const [k, v] of Object.entries(norm)) {
    const mark = !isRecord(raw) ? '' : !(k in rawRec) ? ' (added by normalization)' : json(rawRec[k]) !== json(v) ? ' (normalized differs)' : '';
    parts.push(`${sanitizeWithInfo(k, 40).text} ${sizeOf(v)}${mark}`);
  }
  for (const k of Object.keys(rawRec)) if (!(k in norm)) parts.push(`${sanitizeWithInfo(k, 40).text} ${sizeOf(rawRec[k])} (dropped by normalization)`);
  if (!isRecord(raw) && differs) parts.push('(normalized differs)');
  return parts.length === 0 ? 'none' : parts.join(' · ');
}

/**
 * One sentence of what will happen: "POST /tickets on api.example.com with
 * credential tok — write, does not widen". Sanitized; folded past
 * SENTENCE_MAX characters (every part of it is a row of the card, whole).
 */
function cardSentence(card: ApprovalCard): string {
  const t = card.target;
  const cred = card.credential === null ? 'without a credential' : `with credential ${card.credential}`;
  const what = t.kind === 'http' ? `${t.method} ${t.path} on ${t.host}` : `run ${t.command} on ${t.host} as ${t.user}`;
  const widens = card.widening.length === 0 ? 'does not widen' : `WIDENS authority (${card.widening.join('; ')})`;
  return sanitizeWithInfo(`${what} ${cred} — ${card.effect}, ${widens}`, SENTENCE_MAX).text;
}
