/**
 * Shared pieces of the list views: a window of rows around the cursor (the
 * selected row inverted), table cells cut to their column, and the filter
 * language `/` sets (`field:value` tokens and bare words, case-insensitive).
 */
import { cutCells, padCells, sanitizeForTerminal } from '../../rules/terminal-text.js';
import { cells, clipCells } from '../text.js';
import { line, type Line } from '../lines.js';

/**
 * One table cell: sanitized, cut to `w - 1` cells at the widest (a cut value
 * never runs into the next column) and padded to `w` cells as drawn, so the
 * columns after it line up.
 */
export function col(value: string, w: number): string {
  return padCells(cutCells(sanitizeForTerminal(value, 400), Math.max(1, w - 1)), w);
}

function clampCursor(cursor: number, count: number): number {
  return count === 0 ? 0 : Math.min(Math.max(0, cursor), count - 1);
}

/** Marks the selected row (visible without colour too). */
const CURSOR = '› ';
export const NO_CURSOR = '  ';

/** The rows that fit in `height`, keeping the cursor row visible, marked and inverted. */
export function windowRows(rows: readonly Line[], cursor: number, height: number, width: number): Line[] {
  if (rows.length === 0) return [];
  const c = clampCursor(cursor, rows.length);
  const h = Math.max(1, height);
  const from = Math.max(0, Math.min(c - Math.floor(h / 2), rows.length - h));
  return rows.slice(from, from + h).map((r, i) => {
    if (from + i !== c) return [{ text: NO_CURSOR }, ...r];
    const text = CURSOR + r.map((s) => s.text).join('');
    const pad = ' '.repeat(Math.max(0, width - cells(text)));
    return [{ text: text + pad, tone: 'selected' }];
  });
}

interface Filter {
  readonly fields: ReadonlyArray<readonly [string, string]>;
  readonly words: readonly string[];
}

export function parseFilter(text: string): Filter {
  const fields: [string, string][] = [];
  const words: string[] = [];
  for (const tok of text.trim().toLowerCase().split(/\s+/).filter((t) => t !== '')) {
    const at = tok.indexOf(':');
    if (at > 0) fields.push([tok.slice(0, at), tok.slice(at + 1)]);
    else words.push(tok);
  }
  return { fields, words };
}

/** True when the record's named fields match every token of the filter. */
export function matches(f: Filter, record: Readonly<Record<string, string>>): boolean {
  const all = Object.values(record).join(' ').toLowerCase();
  for (const [k, v] of f.fields) {
    const field = record[k];
    if (field === undefined || !field.toLowerCase().includes(v)) return false;
  }
  return f.words.every((w) => all.includes(w));
}

export function filterLine(filter: string, shown: number, total: number, width: number): Line {
  if (filter === '') return line(clipCells(`${total} total · / to filter`, width), 'dim');
  return [
    { text: 'filter ', tone: 'dim' },
    { text: clipCells(sanitizeForTerminal(filter, 200), Math.max(1, width - 30)), tone: 'key' },
    { text: `  ${shown} of ${total}`, tone: 'dim' },
  ];
}

export function timeOf(iso: string): string {
  const m = /T(\d\d:\d\d:\d\d)/.exec(iso);
  return m?.[1] ?? iso.slice(0, 8);
}
