/**
 * Fitting text into terminal cells for the TUI. Escaping and folding rules
 * live in src/rules/terminal-text.ts (sanitizeWithInfo, foldToWidth,
 * cellWidth); this module only arranges them into labelled rows.
 *
 * Invariants: no returned row is wider than the width asked for; a field
 * that needs more than one row continues on rows that begin with the
 * project's continuation mark under the label, so text an agent controls
 * never begins a screen row; a field cut short says so with "+N more" and
 * reports `complete: false`.
 */
import { CONTINUATION, cellWidth, cutCells, foldToWidth, sanitizeWithInfo, type FoldOptions } from '../rules/terminal-text.js';

export const LABEL_WIDTH = 12;

export function cells(s: string): number {
  return cellWidth(s);
}

/** Cuts Postern-authored (or already sanitized) text to `width` cells, the "…" included (the one rule: cutCells). */
export function clipCells(text: string, width: number): string {
  return cutCells(text, width);
}

/** Folds sanitized text to `width`; rows after the first start with the continuation mark. */
export function foldCells(text: string, width: number, indent = '', opts: FoldOptions = {}): string[] {
  return foldToWidth(text, width, indent, opts);
}

interface FieldRows {
  readonly rows: string[];
  readonly complete: boolean;
}

/**
 * One labelled field: the label column, then the sanitized value folded to
 * the width; continuation rows carry the continuation mark under the label.
 * At most `maxRows` rows; the rest is summarized as "+N more". `maxChars`
 * bounds the sanitized value before folding.
 */
export function fieldRows(label: string, value: string, width: number, maxRows: number, maxChars = 4000): FieldRows {
  const s = sanitizeWithInfo(value, maxChars);
  return foldField(label, s.text, s.hidden, width, maxRows);
}

/** fieldRows for a value already sanitized (a card view row); `hidden` says it was cut. */
export function foldField(label: string, text: string, hidden: number, width: number, maxRows: number): FieldRows {
  const labelCol = clipCells(label, LABEL_WIDTH - 1).padEnd(LABEL_WIDTH);
  // The mark sits under the label's last cells; the fold counts it at its widest.
  const indent = ' '.repeat(LABEL_WIDTH - Array.from(CONTINUATION).length);
  const rows = foldToWidth(`${labelCol}${text}`, width, indent);
  let complete = hidden === 0;
  if (rows.length > maxRows) {
    const keep = Math.max(1, maxRows - 1);
    const lead = Array.from(`${indent}${CONTINUATION}`).length;
    const restChars = rows.slice(keep).reduce((n, r) => n + Array.from(r).length - lead, 0);
    const more = `${indent}${CONTINUATION}… +${restChars} more characters (x: details)`;
    complete = false;
    return { rows: [...rows.slice(0, keep), clipCells(more, width)], complete };
  }
  return { rows, complete };
}
