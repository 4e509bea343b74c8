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

// Escaping text for a terminal lives in src/rules/terminal-text.ts (one home for that rule).
