/**
 * The approval card on screen: the rows of the project's card view
 * (src/protocol/operator/card-view.ts — what a card shows, sanitized) folded
 * to the terminal width under their labels, and the countdown.
 *
 * Invariants: `fullyShown` is false whenever a value was cut, by the card
 * view's character budget or by the compact card's row budget; the first row
 * names every argument with its size, so a huge value is obvious even when
 * it is cut; the countdown is computed from the injected clock only.
 */
import { cardView, type ApprovalCard, type CardView } from './contract.js';
import { sanitizeForTerminal } from '../rules/terminal-text.js';
import { foldField } from './text.js';
import type { Line, Tone } from './lines.js';

/**
 * Rows the compact card leaves to the details view: the id and digest are
 * the daemon's own, the expiry is the countdown, and method and path are
 * already in the target row.
 */
const DETAILS_ONLY: ReadonlySet<string> = new Set(['id', 'digest', 'expires', 'method', 'path']);
/** Rows per value in the compact card. */
export const COMPACT_ROWS = 3;
/** Characters per value in the details view: enough to reach what long padding would push away. */
export const DETAILS_VALUE_MAX = 100_000;

export interface CardRows {
  readonly lines: Line[];
  readonly fullyShown: boolean;
  readonly view: CardView;
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

function toneOf(t: CardView['rows'][number]['tone']): Tone {
  switch (t) {
    case 'normal':
      return 'plain';
    case 'notice':
      return 'warn';
    case 'danger':
      return 'danger';
  }
}

/** The summary row's label. */
export const SIZES_LABEL = 'arg sizes';
/** An argument this long is marked, so it stands out in the summary. */
const LONG_VALUE = 200;

function sizeOf(v: unknown): string {
  if (typeof v === 'string') {
    const n = Array.from(v).length;
    return `${n.toLocaleString('en-US')} char${n === 1 ? '' : 's'}${n >= LONG_VALUE ? ' (LONG)' : ''}`;
  }
  const n = Array.from(JSON.stringify(v) ?? 'null').length;
  const what = Array.isArray(v) ? `${v.length} item${v.length === 1 ? '' : 's'}, ` : '';
  return `${what}${n.toLocaleString('en-US')} chars of JSON${n >= LONG_VALUE ? ' (LONG)' : ''}`;
}

/** Every argument's name and size, in the order the call gives them: "body 1,900 chars (LONG) · title 12 chars". */
export function argumentSizes(args: unknown): string {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return `one value, ${sizeOf(args)}`;
  const entries = Object.entries(args as Record<string, unknown>);
  if (entries.length === 0) return 'none';
  return entries.map(([k, v]) => `${sanitizeForTerminal(k, 40)} ${sizeOf(v)}`).join(' · ');
}

/** Rows of the card; a compact card gives each value a few rows, details give it all. */
export function cardRows(card: ApprovalCard, width: number, expanded: boolean): CardRows {
  const view = cardView(card, expanded ? { maxValue: DETAILS_VALUE_MAX } : {});
  const maxRows = expanded ? Number.POSITIVE_INFINITY : COMPACT_ROWS;
  const lines: Line[] = [];
  // A summary, not the call: cutting it leaves nothing unseen.
  for (const r of foldField(SIZES_LABEL, argumentSizes(card.normalized_arguments), 0, width, maxRows).rows) lines.push([{ text: r, tone: 'plain' }]);
  let fullyShown = view.fullyShown;
  for (const row of view.rows) {
    if (!expanded && DETAILS_ONLY.has(row.label)) continue;
    const f = foldField(row.label, row.value, row.hidden, width, maxRows);
    if (!f.complete) fullyShown = false;
    const tone = toneOf(row.tone);
    for (const r of f.rows) lines.push([{ text: r, tone }]);
  }
  return { lines, fullyShown, view };
}
