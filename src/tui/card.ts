/**
 * The rows of one approval card (DESIGN §9): session, tool and revision,
 * widening, the resolved target, credential name, raw vs normalized
 * arguments, idempotency key and countdown. Every value from the agent, the
 * target or the catalog goes through the project's sanitizer (via
 * fieldRows) and is folded to the width.
 *
 * Invariants: `fullyShown` is false whenever any value was cut (by the
 * character budget or by the row budget), and then a session grant is not
 * offered for the card; the countdown is computed from the injected clock.
 */
import type { ApprovalCard } from './contract.js';
import { fieldRows } from './text.js';
import type { Line, Tone } from './lines.js';

export interface CardRows {
  readonly lines: Line[];
  readonly fullyShown: boolean;
}

export function duration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

export function countdown(card: ApprovalCard, nowMs: number): { text: string; expired: boolean } {
  const left = Date.parse(card.expires_at) - nowMs;
  if (!Number.isFinite(left)) return { text: 'expiry unknown', expired: false };
  return left <= 0 ? { text: 'expired', expired: true } : { text: `expires in ${duration(left)}`, expired: false };
}

function json(v: unknown): string {
  return JSON.stringify(v) ?? 'undefined';
}

function shellWord(a: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`;
}

/** The field list of a card: [label, value, tone]. Values are raw; fieldRows sanitizes them. */
function fields(card: ApprovalCard): [string, string, Tone][] {
  const out: [string, string, Tone][] = [];
  const s = card.session;
  out.push(['session', `${s.client_name ?? '?'} ${s.client_version ?? ''} pid ${s.pid ?? '?'} (${s.id})`, 'plain']);
  const seen = card.revision_seen === null ? 'none' : `r${card.revision_seen}`;
  out.push(['tool', `${card.tool}  r${card.revision} (session saw ${seen})`, 'title']);
  out.push(['effect', card.effect, 'plain']);
  for (const w of card.widening) out.push(['WIDENS', w, 'danger']);
  for (const r of card.reasons) out.push(['why asked', r, 'plain']);
  const t = card.target;
  switch (t.kind) {
    case 'http': {
      const query = t.query.length === 0 ? '' : `?${t.query.map(([k, v]) => `${k}=${v}`).join('&')}`;
      out.push(['target', `${t.method} ${t.origin}${t.path}${query}`, 'title']);
      out.push(['host', `${t.host} port ${t.port}`, 'plain']);
      for (const [k, v] of t.headers) out.push(['header', `${k}: ${v}`, 'plain']);
      if (t.body !== null) out.push(['body', t.body, 'plain']);
      break;
    }
    case 'ssh':
      out.push(['target', `ssh ${t.user}@${t.host}${t.port === 22 ? '' : `:${t.port}`} ${t.argv.map(shellWord).join(' ')}`, 'title']);
      out.push(['host', `${t.host} port ${t.port}, host key ${t.host_key ?? 'NOT PINNED'}`, t.host_key === null ? 'warn' : 'plain']);
      t.argv.forEach((a, i) => out.push([`argv[${i}]`, a, 'plain']));
      break;
  }
  out.push(['credential', card.credential ?? '-', 'plain']);
  const raw = json(card.raw_arguments);
  const norm = json(card.normalized_arguments);
  if (raw !== norm) {
    out.push(['raw args', raw, 'warn']);
    out.push(['normalized', norm, 'warn']);
    if (card.adapter !== null) out.push(['adapter', card.adapter, 'plain']);
  } else {
    out.push(['arguments', raw, 'plain']);
  }
  out.push(['idempotency', card.idempotency_key ?? '-', 'plain']);
  return out;
}

/** Rows of the card; compact cards give each field a few rows, expanded ones many. */
export function cardRows(card: ApprovalCard, width: number, expanded: boolean): CardRows {
  const maxRows = expanded ? 200 : 3;
  const lines: Line[] = [];
  let fullyShown = true;
  for (const [label, value, tone] of fields(card)) {
    const f = fieldRows(label, value, width, maxRows);
    if (!f.complete) fullyShown = false;
    for (const r of f.rows) lines.push([{ text: r, tone }]);
  }
  return { lines, fullyShown };
}
