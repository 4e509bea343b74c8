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
 * Widths no terminal agrees on are escaped too: enclosing marks (a keycap's
 * U+20E3), the conjoining Hangul jamo — leading, vowel and final
 * (U+1100–U+11FF, U+A960–U+A97F, U+D7B0–U+D7FF; a run of them is one
 * grapheme that a terminal may join or draw 2 cells apiece) — and every code
 * point Unicode assigned after 14.0 (a terminal with an older width table
 * draws them 0–2 cells). A grapheme no row could hold (counted at its
 * widest) is shown as escapes when folded, so it never overruns a row.
 *
 * Rows: `cellWidth` counts the widest a terminal may draw a string — each
 * code point on its own (a terminal that does not join a cluster draws every
 * part), wide, emoji, regional-indicator, skin-tone and East Asian ambiguous
 * code points as 2, a combining mark as 1 — never less than string-width
 * (what ink measures). `foldToWidth` cuts a line into rows of at most that
 * many cells and starts every row after the first with a visible
 * continuation mark; screens lay rows out `ROW_MARGIN` short of the
 * terminal's width. So text an agent controls can never begin a screen row
 * of its own, whatever the terminal's width table (a soft-wrapped value
 * could otherwise print a row that reads like one of Postern's fields).
 */
import { createRequire } from 'node:module';
import { eastAsianWidth } from 'get-east-asian-width';
import type measureWidth from 'string-width';

let measure: typeof measureWidth | undefined;
/**
 * string-width, required on first use, as src/libraries.ts loads its libraries (which this
 * layer, imported by the UI, does not reach). As it loads it builds an emoji table and a
 * grapheme segmenter, about 40 ms of every command and more on a busy machine, and text of
 * printable ASCII never needs it. It is an ES module: Node 20.19 and later require one.
 */
const stringWidth: typeof measureWidth = (s, options) => (measure ??= (createRequire(import.meta.url)('string-width') as { default: typeof measureWidth }).default)(s, options);
let segmenter: Intl.Segmenter | undefined;

/**
 * Text in which every code point is a grapheme cluster of its own, whatever its neighbours:
 * printable ASCII and blocks of letters, punctuation and symbols (Latin-1 and Latin Extended,
 * general punctuation, currency, letterlike, arrows, mathematical and technical signs, box
 * drawing, shapes, dingbats) that hold no mark, joiner, format character, regional indicator,
 * Hangul, spacing mark or prepended character, the only characters UAX #29 joins to a
 * neighbour. Postern's own marks ("…", "→", "—", "┆") are all here.
 */
export const ONE_CLUSTER_PER_CODE_POINT = /^[\x20-\x7e\u00a0-\u00ac\u00ae-\u024f\u2010-\u2027\u2030-\u205e\u20a0-\u20c0\u2100-\u214f\u2190-\u23ff\u2500-\u27bf]*$/u;

function* segmented(s: string): Generator<string> {
  // The first segmenter in a process loads ICU's break rules (about 15 ms): made on first use.
  segmenter ??= new Intl.Segmenter(undefined, { granularity: 'grapheme' });
  for (const { segment } of segmenter.segment(s)) yield segment;
}

/** The grapheme clusters of `s`, in order (its code points, when each is a cluster of its own). */
const graphemes = (s: string): Iterable<string> => (ONE_CLUSTER_PER_CODE_POINT.test(s) ? s : segmented(s));

// Characters that render as nothing or as a plain space although they are not one.
const INVISIBLE = new Set([0x034f, 0x115f, 0x1160, 0x17b4, 0x17b5, 0x2800, 0x3164, 0xffa0]);
const MAX_COMBINING_RUN = 4;
const NEEDS_ESCAPE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Cn}\p{Zs}\p{Default_Ignorable_Code_Point}]/u;
const IS_MARK = /\p{M}/u;
/** Enclosing marks and conjoining Hangul jamo: drawn 0, 1 or 2 cells (a run joined or not) depending on the terminal. */
const UNSETTLED_WIDTH = /[\p{Me}\u1100-\u11FF\uA960-\uA97F\uD7B0-\uD7FF]/u;

/**
 * Code points Unicode 15.0–17.0 assigned (ranges, hex). A terminal whose
 * width table is Unicode 14 or older does not know them; one newer than the
 * runtime's is \p{Cn} here and escaped as unassigned.
 */
const ASSIGNED_AFTER_14 = parseRanges(
  '88f 897 c5c cdc cf3 ece 1acf-1add 1ae0-1aeb 1b4e-1b4f 1b7f 1c89-1c8a 20c1 2427-2429 2b96 2ffc-2fff ' +
  '31e4-31e5 31ef a7cb-a7cf a7d2 a7d4 a7da-a7dc a7f1 fbc3-fbd2 fd90-fd91 fdc8-fdce 105c0-105f3 ' +
  '10940-10959 10d40-10d65 10d69-10d85 10d8e-10d8f 10ec2-10ec7 10ed0-10ed8 10efa-10eff 1123f-11241 ' +
  '11380-11389 1138b 1138e 11390-113b5 113b7-113c0 113c2 113c5 113c7-113ca 113cc-113d5 113d7-113d8 ' +
  '113e1-113e2 116d0-116e3 11b00-11b09 11b60-11b67 11bc0-11be1 11bf0-11bf9 11db0-11ddb 11de0-11de9 ' +
  '11f00-11f10 11f12-11f3a 11f3e-11f5a 1342f 13439-13455 13460-143fa 16100-16139 16d40-16d79 ' +
  '16ea0-16eb8 16ebb-16ed3 16ff2-16ff6 187f8-187ff 18cff 18d09-18d1e 18d80-18df2 1b132 1b155 ' +
  '1cc00-1ccfc 1cd00-1ceb3 1ceba-1ced0 1cee0-1cef0 1d2c0-1d2d3 1df25-1df2a 1e030-1e06d 1e08f ' +
  '1e4d0-1e4f9 1e5d0-1e5fa 1e5ff 1e6c0-1e6de 1e6e0-1e6f5 1e6fe-1e6ff 1f6d8 1f6dc 1f774-1f77f 1f7d9 ' +
  '1f8b2-1f8bb 1f8c0-1f8c1 1f8d0-1f8d8 1fa54-1fa57 1fa75-1fa77 1fa87-1fa8a 1fa8e-1fa8f 1faad-1faaf ' +
  '1fabb-1fabf 1fac6 1fac8 1facd-1facf 1fada-1fadc 1fadf 1fae8-1faea 1faef 1faf7-1faf8 1fbcb-1fbef ' +
  '1fbfa 2b739-2b73f 2cea2-2cead 2ebf0-2ee5d 31350-33479',
);
/** The newest Unicode version ASSIGNED_AFTER_14 covers. */
export const WIDTH_TABLE_UNICODE = 17;

function parseRanges(spec: string): readonly (readonly [number, number])[] {
  return spec.split(' ').map((r) => {
    const [a = '0', b = a] = r.split('-');
    return [parseInt(a, 16), parseInt(b, 16)] as const;
  });
}

function assignedAfter14(cp: number): boolean {
  let lo = 0;
  let hi = ASSIGNED_AFTER_14.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const [a, b] = ASSIGNED_AFTER_14[mid] ?? [0, -1];
    if (cp < a) hi = mid - 1;
    else if (cp > b) lo = mid + 1;
    else return true;
  }
  return false;
}

/** True when terminals disagree on how many cells the code point takes, so it is shown as an escape. */
function widthUnsettled(ch: string, cp: number): boolean {
  return cp >= 0x300 && (UNSETTLED_WIDTH.test(ch) || assignedAfter14(cp));
}

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
  if (!NEEDS_ESCAPE.test(ch) && !INVISIBLE.has(cp) && !widthUnsettled(ch, cp)) return null;
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

const JSON_ESCAPE = /[\u007f-\u009f\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Cn}\p{Default_Ignorable_Code_Point}]/u;

/**
 * JSON for a terminal: JSON.stringify already escapes C0 controls; this also
 * escapes DEL, C1, format, separator, surrogate, default-ignorable,
 * unassigned and width-unsettled characters as \uXXXX, which keeps the text
 * valid JSON with the same value.
 */
export function jsonForTerminal(value: unknown, indent = 2): string {
  const text = JSON.stringify(value, null, indent) ?? 'null';
  return text.replace(/[\u007f-\u{10FFFF}]/gu, (m) =>
    JSON_ESCAPE.test(m) || widthUnsettled(m, m.codePointAt(0) ?? 0)
      ? Array.from({ length: m.length }, (_, k) => `\\u${hex(m.charCodeAt(k), 4).toLowerCase()}`).join('')
      : m,
  );
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
/** Drawn 2 cells by some terminal although a width table may say 1. */
const MAY_BE_WIDE = /[\p{Extended_Pictographic}\p{Regional_Indicator}\p{Emoji_Modifier}]/u;
/** A code point string-width counts at all: not default-ignorable, a control, a format character, a mark drawn in no cell of its own, or a lone surrogate. */
const COUNTED = /[^\p{Default_Ignorable_Code_Point}\p{Cc}\p{Cf}\p{Mn}\p{Me}\p{Cs}]/u;
/** Cells of a cluster already measured (string-width is slow, and a report repeats the same few marks on every row). */
const clusterCache = new Map<string, number>();

/**
 * What string-width counts one code point that is not an emoji (MAY_BE_WIDE) as: its East Asian
 * width, or 0 when it counts it not at all. The same answer without string-width, whose tables
 * cost a process about 0.1 s to build (test/unit/rules/terminal-width.test.ts compares the two
 * on every code point).
 */
const oneCodePointWidth = (ch: string, ambiguousAsWide: boolean): number => (COUNTED.test(ch) ? eastAsianWidth(ch.codePointAt(0) ?? 0, { ambiguousAsWide }) : 0);

/** The widest a terminal may draw one code point: 2 when any table counts it wide (ambiguous too), else 1. */
function codePointCells(ch: string): number {
  return MAY_BE_WIDE.test(ch) || oneCodePointWidth(ch, true) >= 2 ? 2 : 1;
}

const isOneCodePoint = (g: string): boolean => g.length === 1 || (g.length === 2 && (g.codePointAt(0) ?? 0) > 0xffff);

/** The widest a terminal may draw one grapheme cluster: every code point on its own, and never less than string-width. */
function clusterCells(g: string): number {
  if (PRINTABLE_ASCII.test(g)) return g.length;
  // string-width never counts one code point wider than codePointCells does.
  if (isOneCodePoint(g)) return codePointCells(g);
  let n = clusterCache.get(g);
  if (n === undefined) {
    n = 0;
    for (const ch of g) n += codePointCells(ch);
    n = Math.max(n, stringWidth(g));
    if (clusterCache.size < 4096) clusterCache.set(g, n);
  }
  return n;
}

/**
 * Terminal cells a printable string may occupy: the widest any terminal
 * draws it (see the header), so a row counted to fit fits on every terminal.
 */
export function cellWidth(s: string): number {
  if (PRINTABLE_ASCII.test(s)) return s.length;
  let n = 0;
  for (const segment of graphemes(s)) n += clusterCells(segment);
  return n;
}

/**
 * Cells most terminals draw a printable string in (string-width: East Asian
 * ambiguous characters and the "…" narrow, as ink measures). Columns are
 * padded by it, so they line up where text is drawn that way; whether a row
 * fits is counted by cellWidth, so a terminal that draws wider shifts a
 * column but never wraps a row.
 */
export function drawnWidth(s: string): number {
  if (PRINTABLE_ASCII.test(s)) return s.length;
  if (!ONE_CLUSTER_PER_CODE_POINT.test(s)) return stringWidth(s);
  // string-width's count is the sum of its clusters' counts, here each one code point.
  let n = 0;
  for (const ch of s) n += MAY_BE_WIDE.test(ch) ? stringWidth(ch) : oneCodePointWidth(ch, false);
  return n;
}

/** `text` followed by spaces up to `width` drawn cells (see drawnWidth). */
export function padCells(text: string, width: number): string {
  return text + ' '.repeat(Math.max(0, width - drawnWidth(text)));
}

/** What ends a value cut short by cutCells. */
const CUT_MARK = '…';

/**
 * Cuts printable (Postern's own or sanitized) text to at most `width` cells
 * counted at the widest (cellWidth), the mark included: the "…" is counted 2
 * cells as a terminal drawing ambiguous characters wide draws it, so the cut
 * text fits on every terminal; padded with padCells it keeps the space
 * before the next column where the mark is drawn 1 cell.
 */
export function cutCells(text: string, width: number): string {
  if (cellWidth(text) <= width) return text;
  const room = width - cellWidth(CUT_MARK);
  if (room < 0) return '.'.repeat(Math.max(0, width));
  let out = '';
  let used = 0;
  for (const segment of graphemes(text)) {
    const w = clusterCells(segment);
    if (used + w > room) break;
    out += segment;
    used += w;
  }
  return `${out}${CUT_MARK}`;
}

/** Cells a screen leaves empty at the end of every row: a row never touches the terminal's last column. */
export const ROW_MARGIN = 1;

/** The width rows are laid out to on a terminal `columns` wide. */
export function rowWidth(columns: number): number {
  return Math.max(1, Math.floor(columns) - ROW_MARGIN);
}

/** Starts every folded row after the first: visible, and never produced by sanitized text at a row's start. */
export const CONTINUATION = '\u2506 ';
/**
 * The cells CONTINUATION takes, as cellWidth counts them (U+2506 is East Asian Ambiguous: 2, then
 * a space). A constant, so folding ASCII text never builds string-width's tables, whose first
 * use costs a command about 40 ms; test/unit/rules/terminal-width.test.ts holds it equal to
 * cellWidth(CONTINUATION).
 */
export const CONTINUATION_CELLS = 3;

/** Cells a grapheme may take and still be kept whole on the narrowest row (a toned emoji, a flag). */
const MAX_WHOLE_CLUSTER = 4;

export interface FoldOptions {
  /**
   * Break at the last space of a row when it has one (words, timestamps and
   * links stay whole); a word longer than a row is still cut. Off: rows are
   * filled to the width (the TUI's card, whose rows the seen rule counts).
   */
  readonly atSpaces?: boolean;
}

/**
 * Folds one line into rows of at most `width` cells. Rows after the first are
 * `indent` + CONTINUATION + the next part of the line. The line should
 * already be sanitized; a character that still needs escaping (a newline, a
 * control) is escaped here rather than printed, so a caller's mistake cannot
 * reach the terminal raw. Grapheme clusters are never split; one wider than
 * a continuation row could hold is shown as escapes instead, so no row is
 * wider than `width` whatever the text. Every row has at least one cluster,
 * so a terminal narrower than the indent still progresses.
 */
export function foldToWidth(line: string, width: number, indent = '', opts: FoldOptions = {}): string[] {
  const lead = `${indent}${CONTINUATION}`;
  const leadWidth = cellWidth(indent) + CONTINUATION_CELLS;
  const pieces = foldPieces(line, Math.max(width - leadWidth, MAX_WHOLE_CLUSTER));
  // Cells of the word each piece begins: a row may end at a space only when the word after it fits a row of its own.
  const wordAfter = new Array<number>(pieces.length + 1).fill(0);
  for (let i = pieces.length - 1; i >= 0; i--) {
    const p = pieces[i];
    wordAfter[i] = p === undefined || p.text === ' ' ? 0 : p.w + (wordAfter[i + 1] ?? 0);
  }
  const rows: string[] = [];
  let row = '';
  let used = 0;
  // The last space of the row the row may end at: its index in `row` and the cells before it.
  let brk: { at: number; used: number } | null = null;
  pieces.forEach(({ text: piece, w }, i) => {
    if (used + w > width && row !== '' && row !== lead) {
      if (opts.atSpaces === true && brk !== null && piece !== ' ') {
        // The row ends at that space; the word it was in moves on whole.
        const rest = row.slice(brk.at + 1);
        const carried = used - brk.used - 1;
        rows.push(row.slice(0, brk.at).trimEnd());
        row = lead + rest;
        used = leadWidth + carried;
      } else {
        rows.push(piece === ' ' && opts.atSpaces === true ? row.trimEnd() : row);
        row = lead;
        used = leadWidth;
      }
      brk = null;
      if (piece === ' ' && opts.atSpaces === true) return;
    }
    const next = wordAfter[i + 1] ?? 0;
    const wordFits = next > 0 && leadWidth + next <= width;
    if (piece === ' ' && wordFits && (rows.length === 0 ? row : row.slice(lead.length)).trim() !== '') brk = { at: row.length, used };
    row += piece;
    used += w;
  });
  rows.push(row);
  return rows;
}

/** The line's graphemes as printed, with their cells; one wider than `most` cells becomes escapes of 1 cell each. */
function foldPieces(line: string, most: number): { text: string; w: number }[] {
  const out: { text: string; w: number }[] = [];
  for (const segment of graphemes(line)) {
    const piece = escapeStray(segment);
    const w = piece === segment ? clusterCells(piece) : cellWidth(piece);
    if (w > most) for (const ch of escapeAll(piece)) out.push({ text: ch, w: 1 });
    else out.push({ text: piece, w });
  }
  return out;
}

/** Folds text that may hold several lines (a JSON dump): each line folded on its own. */
export function foldLinesToWidth(text: string, width: number, indent = '', opts: FoldOptions = {}): string[] {
  return text.split('\n').flatMap((l) => foldToWidth(l, width, indent, opts));
}

/** Every code point outside printable ASCII as an escape: a grapheme too wide for any row, shown piece by piece. */
function escapeAll(piece: string): string {
  let out = '';
  for (const ch of piece) {
    const cp = ch.codePointAt(0) ?? 0;
    out += PRINTABLE_ASCII.test(ch) ? ch : cp <= 0xffff ? `\\u${hex(cp, 4)}` : `\\u{${hex(cp, 5)}}`;
  }
  return out;
}

function escapeStray(segment: string): string {
  let out = '';
  for (const ch of segment) {
    const cp = ch.codePointAt(0) ?? 0;
    out += ch === '\\' || ch === ' ' ? ch : (escapeOf(ch, cp) ?? ch);
  }
  return out;
}
