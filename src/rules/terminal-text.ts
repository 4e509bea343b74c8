/**
 * Making untrusted strings (agent-controlled card fields, journaled
 * arguments, catalog text, daemon messages) safe to print on the operator's
 * terminal. The one home of this rule: the CLI, the catalog reports and the
 * TUI all print through it.
 *
 * Invariants: the output contains no C0/C1 control, DEL, escape sequence,
 * format character (bidi controls, zero-width characters, soft hyphen, tag
 * characters, BOM), line/paragraph separator, lone surrogate, non-ASCII space,
 * invisible filler, default-ignorable code point (variation selectors
 * U+FE00–FE0F and U+E0100–E01EF, Hangul fillers, …) or unassigned code point
 * — each is shown as a visible
 * escape (`\x1b`, `\r`, `\u202E`, `\u{E0041}`), and a backslash is doubled so
 * an escape in the input cannot pass for one we wrote. Output longer than
 * `max` characters is cut and ends with a visible "… +N more" (N = input
 * characters not shown), so nothing hides past the edge of the screen.
 *
 * Rows: `foldToWidth` cuts a line into rows no wider than the terminal and
 * starts every row after the first with a visible continuation mark, so text
 * an agent controls can never begin a screen row of its own (a soft-wrapped
 * value could otherwise print a row that reads like one of Postern's fields).
 */
import stringWidth from 'string-width';

// Characters that render as nothing or as a plain space although they are not one.
const INVISIBLE = new Set([0x034f, 0x115f, 0x1160, 0x17b4, 0x17b5, 0x2800, 0x3164, 0xffa0]);
const MAX_COMBINING_RUN = 4;
const NEEDS_ESCAPE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Cn}\p{Zs}\p{Default_Ignorable_Code_Point}]/u;
const IS_MARK = /\p{M}/u;

function hex(n: number, width: number): string {
  return n.toString(16).toUpperCase().padStart(width, '0');
}

/** The visible escape for one code point, or null when it may be printed as is. */
function escapeOf(ch: string, cp: number): string | null {
  switch (ch) {
    case '\\':
      return '\\\\';
    case '\n':
      return '\\n';
    case '\r':
      return '\\r';
    case '\t':
      return '\\t';
    case ' ':
      return null;
  }
  if (!NEEDS_ESCAPE.test(ch) && !INVISIBLE.has(cp)) return null;
  if (cp < 0x100) return `\\x${hex(cp, 2).toLowerCase()}`;
  if (cp <= 0xffff) return `\\u${hex(cp, 4)}`;
  return `\\u{${hex(cp, 5)}}`;
}

export interface Sanitized {
  readonly text: string;
  /** Input characters not shown because of the length limit (0 = shown in full). */
  readonly hidden: number;
}

/** Sanitizes and folds; `hidden` tells whether the whole value was shown. */
export function sanitizeWithInfo(s: string, max = 200): Sanitized {
  const chars = Array.from(s); // code points; lone surrogates stay single units
  let out = '';
  let used = 0;
  let marks = 0;
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i] ?? '';
    const cp = ch.codePointAt(0) ?? 0;
    let piece = escapeOf(ch, cp);
    if (piece === null && IS_MARK.test(ch)) {
      marks++;
      // Stacked combining marks can paint over neighbouring lines.
      if (marks > MAX_COMBINING_RUN) piece = `\\u${hex(cp, 4)}`;
    } else if (piece === null) {
      marks = 0;
    }
    const shown = piece ?? ch;
    const width = piece === null ? 1 : piece.length;
    if (used + width > max) {
      return { text: `${out}… +${chars.length - i} more`, hidden: chars.length - i };
    }
    out += shown;
    used += width;
  }
  return { text: out, hidden: 0 };
}

export function sanitizeForTerminal(s: string, max = 200): string {
  return sanitizeWithInfo(s, max).text;
}

/** The same escaping with no length limit: for report lines that must be shown whole. */
export function escapeForTerminal(s: string): string {
  return sanitizeWithInfo(s, Number.POSITIVE_INFINITY).text;
}

/**
 * JSON for a terminal: JSON.stringify already escapes C0 controls; this also
 * escapes DEL, C1, format, separator, surrogate, default-ignorable and unassigned characters as
 * \uXXXX, which keeps the text valid JSON with the same value.
 */
export function jsonForTerminal(value: unknown, indent = 2): string {
  const text = JSON.stringify(value, null, indent) ?? 'null';
  return text.replace(/[\u007f-\u009f\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Cn}\p{Default_Ignorable_Code_Point}]/gu, (m) =>
    Array.from({ length: m.length }, (_, i) => `\\u${hex(m.charCodeAt(i), 4).toLowerCase()}`).join(''),
  );
}

/** Terminal cells a printable string occupies (wide characters 2, combining marks 0). */
export function cellWidth(s: string): number {
  return stringWidth(s);
}

/** Starts every folded row after the first: visible, and never produced by sanitized text at a row's start. */
export const CONTINUATION = '\u2506 ';

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * Folds one line into rows of at most `width` cells. Rows after the first are
 * `indent` + CONTINUATION + the next part of the line. The line should
 * already be sanitized; a character that still needs escaping (a newline, a
 * control) is escaped here rather than printed, so a caller's mistake cannot
 * reach the terminal raw. Grapheme clusters are never split. Every row has at
 * least one cluster, so a terminal narrower than the indent still progresses.
 */
export function foldToWidth(line: string, width: number, indent = ''): string[] {
  const lead = `${indent}${CONTINUATION}`;
  const leadWidth = cellWidth(lead);
  const rows: string[] = [];
  let row = '';
  let used = 0;
  for (const { segment } of graphemes.segment(line)) {
    const piece = escapeStray(segment);
    const w = cellWidth(piece);
    if (used + w > width && row !== '' && row !== lead) {
      rows.push(row);
      row = lead;
      used = leadWidth;
    }
    row += piece;
    used += w;
  }
  rows.push(row);
  return rows;
}

/** Folds text that may hold several lines (a JSON dump): each line folded on its own. */
export function foldLinesToWidth(text: string, width: number, indent = ''): string[] {
  return text.split('\n').flatMap((l) => foldToWidth(l, width, indent));
}

function escapeStray(segment: string): string {
  let out = '';
  for (const ch of segment) {
    const cp = ch.codePointAt(0) ?? 0;
    out += ch === '\\' || ch === ' ' ? ch : (escapeOf(ch, cp) ?? ch);
  }
  return out;
}
