/**
 * Character-class tests shared by the parsers, resolvers and renderers, written
 * as code point loops rather than regular expressions with control characters,
 * so the exact set each rule refuses (or escapes) is visible in one place.
 */

/** C0 controls (U+0000–U+001F) and DEL. */
export function hasControl(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

/** Space, C0 and C1 controls, DEL and backslash: what a host or origin may never contain. */
export function hasSpaceControlOrBackslash(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c <= 0x20 || (c >= 0x7f && c <= 0x9f) || c === 0x5c) return true;
  }
  return false;
}

/** Only printable ASCII and horizontal tab: what an HTTP header value may contain. */
export function isHeaderText(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (!(c === 0x09 || (c >= 0x20 && c <= 0x7e))) return false;
  }
  return true;
}

const INVISIBLE = new Set([0x061c, 0x200b, 0x200c, 0x200d, 0x200e, 0x200f, 0x2060, 0xfeff, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069]);

/**
 * Text safe to print on a terminal: control characters (C0, DEL, C1), bidi
 * controls and zero-width characters are shown as `\u{…}` instead of being
 * interpreted. Used for every report line that may carry catalog or journal text.
 */
export function printable(s: string): string {
  let out = '';
  for (const ch of s) {
    const c = ch.codePointAt(0) ?? 0;
    out += c < 0x20 || (c >= 0x7f && c <= 0x9f) || INVISIBLE.has(c) ? `\\u{${c.toString(16)}}` : ch;
  }
  return out;
}
