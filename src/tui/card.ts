/**
 * The approval card on screen: the rows of the project's card view
 * (src/protocol/display/card-view.ts — what a card shows, sanitized) folded
 * to the terminal width under their labels, and the countdown.
 *
 * Invariants: `fullyShown` is false whenever a value was cut, by the card
 * view's character budget or by the compact card's row budget; the first row
 * names every argument with its size (the card view's summary), so a huge
 * value is obvious even when it is cut; the details are the card's whole
 * presentation, nothing cut; the countdown is computed from the injected
 * clock only.
 */
import { SUMMARY_LABEL, cardView, presentation, type ApprovalCard, type CardView } from './contract.js';
import { foldField } from './text.js';
import type { Line, Tone } from './lines.js';

/**
 * Rows the compact card leaves to the details view: the id and digest are
 * the daemon's own, the expiry is the countdown, and method and path are
 * already in the target row.
 */
const DETAILS_ONLY: ReadonlySet<string> = new Set(['id', 'digest', 'expires', 'method', 'path']);

/**
 * Rows the compact card also leaves out when they say nothing the card does
 * not: an HTTP host the target row already names (a host shown as a warning
 * stays), and an idempotency key the call does not have. Rows, so an
 * ordinary card fits 80×24 with a status line.
 */
function saysNothingMore(card: ApprovalCard, row: CardView['rows'][number]): boolean {
  if (row.label === 'idempotency') return card.idempotency_key === null;
  return row.label === 'host' && card.target.kind === 'http' && row.tone === 'normal';
}
/** Rows per value in the compact card. */
const COMPACT_ROWS = 3;

interface CardRows {
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

/** The summary row's label (the one card view's). */
const SIZES_LABEL = SUMMARY_LABEL;

/**
 * Rows of the card. The compact card gives each value a few rows; the
 * details are the card's whole presentation (presentation.ts: the sentence,
 * the summary and every row, nothing cut), the rows the seen rule counts.
 */
export function cardRows(card: ApprovalCard, width: number, expanded: boolean): CardRows {
  const key = `${width}:${expanded ? 'details' : 'compact'}`;
  let forCard = folded.get(card);
  if (forCard === undefined) {
    forCard = new Map();
    folded.set(card, forCard);
  }
  const known = forCard.get(key);
  if (known !== undefined) return known;
  const rows = foldCard(card, width, expanded);
  // A few widths per card at most (a resize); the map goes with the card.
  if (forCard.size > 8) forCard.clear();
  forCard.set(key, rows);
  return rows;
}

/** Folded rows already made, per card object and width (cards are immutable; rows are pure of card and width). */
const folded = new WeakMap<ApprovalCard, Map<string, CardRows>>();

function foldCard(card: ApprovalCard, width: number, expanded: boolean): CardRows {
  const view = cardView(card);
  if (expanded) {
    const lines: Line[] = [];
    for (const row of presentation(card).rows) {
      const tone = toneOf(row.tone);
      for (const r of foldField(row.label, row.value, 0, width, Number.POSITIVE_INFINITY).rows) lines.push([{ text: r, tone }]);
    }
    return { lines, fullyShown: view.fullyShown, view };
  }
  const lines: Line[] = [];
  // A summary, not the call: cutting it leaves nothing unseen.
  for (const r of foldField(SIZES_LABEL, view.summary.value, 0, width, COMPACT_ROWS).rows) lines.push([{ text: r, tone: 'plain' }]);
  let fullyShown = view.fullyShown;
  for (const row of view.rows) {
    if (DETAILS_ONLY.has(row.label) || saysNothingMore(card, row)) continue;
    const f = foldField(row.label, row.value, row.hidden, width, COMPACT_ROWS);
    if (!f.complete) fullyShown = false;
    const tone = toneOf(row.tone);
    for (const r of f.rows) lines.push([{ text: r, tone }]);
  }
  return { lines, fullyShown, view };
}
