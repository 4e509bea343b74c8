/**
 * Making untrusted strings (agent-controlled card fields, journaled
 * arguments, catalog text, daemon messages) safe to print on the operator's
 * terminal. The one home of this rule: the CLI, the catalog reports and the
 * TUI all print through it.
 *
 * Invariants: the output contains no C0/C1 control, DEL, escape sequence,
 * format character (bidi controls, zero-width characters, soft hyphen, tag
 * characters, BOM), line/paragraph separator, lone surrogate, non-ASCII space,
 * invisible filler or unassigned code point — each is shown as a visible
 * escape (`\x1b`, `\r`, `\u202E`, `\u{E0041}`), and a backslash is doubled so
 * an escape in the input cannot pass for one we wrote. Output longer than
 * `max` characters is cut and ends with a visible "… +N more" (N = input
 * characters not shown), so nothing hides past the edge of the screen.
 */

// Characters that render as nothing or as a plain space although they are not one.
const INVISIBLE = new Set([0x034f, 0x115f, 0x1160, 0x17b4, 0x17b5, 0x2800, 0x3164, 0xffa0]);
const MAX_COMBINING_RUN = 4;
const NEEDS_ESCAPE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Cn}\p{Zs}]/u;
const IS_MARK = /\p{M}/u;

/** Variation selectors (VS1–16, VS17–256, Mongolian FVS1–4): invisible marks that change how a neighbour looks. */
function isVariationSelector(cp: number): boolean {
  return (cp >= 0xfe00 && cp <= 0xfe0f) || (cp >= 0xe0100 && cp <= 0xe01ef) || (cp >= 0x180b && cp <= 0x180f);
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
  if (!NEEDS_ESCAPE.test(ch) && !INVISIBLE.has(cp) && !isVariationSelector(cp)) return null;
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
 * escapes DEL, C1, format, separator, surrogate and unassigned characters as
 * \uXXXX, which keeps the text valid JSON with the same value.
 */
export function jsonForTerminal(value: unknown, indent = 2): string {
  const text = JSON.stringify(value, null, indent) ?? 'null';
  return text.replace(/[\u007f-\u009f\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Cn}]/gu, (m) =>
    Array.from({ length: m.length }, (_, i) => `\\u${hex(m.charCodeAt(i), 4).toLowerCase()}`).join(''),
  );
}
