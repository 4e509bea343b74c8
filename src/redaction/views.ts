/**
 * Views of a text with reversible, character-level transforms undone, so a
 * literal matcher finds a secret that a target spread out or escaped
 * character by character. Each character of a view remembers the span of the
 * original text it came from, so a match in a view redacts the right bytes.
 *
 * - `decodedView`: one pass that undoes, wherever they occur, JSON/JS string
 *   escapes (`\uXXXX` in any case, `\xHH`, `\/`, `\"`, `\\`, `\n`…),
 *   percent-escapes (`%HH`, any case, each byte as a Latin-1 character),
 *   HTML character references (`&#NN;`, `&#xHH;`, `&amp;` and the other four
 *   XML entities), and drops every whitespace character (original or decoded).
 *   So base64 or hex wrapped at any line width (MIME 76 + CRLF, PEM 64 + LF,
 *   `xxd -p` 60), a token with every character `\u`-escaped or every byte
 *   percent-encoded, and JSON text holding `\r\n`-wrapped base64 all read as
 *   their plain form.
 * - `hexViews`: the runs of hex digits of the decoded view in lower case with
 *   `:` dropped, for hex in mixed case or with colon-separated bytes.
 *
 * Invariants: pure; one escape layer is undone (literal forms in
 * encodings.ts cover the common double encodings); a view is null when it
 * would equal its input, so plain text costs one scan and no copy.
 */

export interface View {
  readonly text: string;
  /** Index in the original text where view character i starts. */
  readonly start: Int32Array;
  /** Index in the original text just after view character i. */
  readonly end: Int32Array;
}

/** Whitespace a wrapped encoding may carry between its characters. */
function isWrapSpace(code: number): boolean {
  return code === 0x20 || (code >= 0x09 && code <= 0x0d) || code === 0xa0 || code === 0x2028 || code === 0x2029 || code === 0xfeff;
}

/** `s` without the characters a view drops, for building view patterns. */
export function withoutWrapSpace(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) if (!isWrapSpace(s.charCodeAt(i))) out += s[i];
  return out;
}

function hexValue(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  const lower = code | 0x20;
  if (lower >= 0x61 && lower <= 0x66) return lower - 0x61 + 10;
  return -1;
}

/** The value of `count` hex digits of `s` at `at`, or -1. */
function hexAt(s: string, at: number, count: number): number {
  if (at + count > s.length) return -1;
  let v = 0;
  for (let i = 0; i < count; i++) {
    const h = hexValue(s.charCodeAt(at + i));
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

const SIMPLE_ESCAPES: Readonly<Record<string, number>> = { '/': 0x2f, '\\': 0x5c, '"': 0x22, "'": 0x27, b: 0x08, n: 0x0a, r: 0x0d, t: 0x09, f: 0x0c, v: 0x0b };
const ENTITIES: Readonly<Record<string, number>> = { amp: 0x26, lt: 0x3c, gt: 0x3e, quot: 0x22, apos: 0x27 };
const ENTITY = /^&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|(amp|lt|gt|quot|apos));/;

interface Decoded {
  /** UTF-16 code units the escape stands for. */
  readonly units: string;
  /** Original characters it takes. */
  readonly length: number;
}

/** The escape starting at `i`, or null when the character stands for itself. */
function escapeAt(s: string, i: number): Decoded | null {
  const c = s.charCodeAt(i);
  if (c === 0x5c /* \ */) {
    const next = s[i + 1];
    if (next === 'u') {
      const v = hexAt(s, i + 2, 4);
      return v < 0 ? null : { units: String.fromCharCode(v), length: 6 };
    }
    if (next === 'x') {
      const v = hexAt(s, i + 2, 2);
      return v < 0 ? null : { units: String.fromCharCode(v), length: 4 };
    }
    const simple = next === undefined ? undefined : SIMPLE_ESCAPES[next];
    return simple === undefined ? null : { units: String.fromCharCode(simple), length: 2 };
  }
  if (c === 0x25 /* % */) {
    const v = hexAt(s, i + 1, 2);
    return v < 0 ? null : { units: String.fromCharCode(v), length: 3 };
  }
  if (c === 0x26 /* & */) {
    const m = ENTITY.exec(s.slice(i, i + 12));
    if (m === null) return null;
    const cp = m[1] !== undefined ? Number(m[1]) : m[2] !== undefined ? parseInt(m[2], 16) : (ENTITIES[m[3] ?? ''] ?? -1);
    if (cp < 0 || cp > 0x10ffff) return null;
    return { units: String.fromCodePoint(cp), length: m[0].length };
  }
  return null;
}

const NEEDS_DECODING = /[\\%&\s\u00a0\u2028\u2029\ufeff]/;
// Views only serve matching; a lone surrogate read back as U+FFFD keeps every index in place.
const utf16 = new TextDecoder('utf-16le', { ignoreBOM: true });

/** `s` with one layer of character escapes undone and whitespace dropped; null when that changes nothing. */
export function decodedView(s: string): View | null {
  if (!NEEDS_DECODING.test(s)) return null;
  const units = new Uint16Array(s.length);
  const start = new Int32Array(s.length);
  const end = new Int32Array(s.length);
  let n = 0;
  let changed = false;
  for (let i = 0; i < s.length; ) {
    const c0 = s.charCodeAt(i);
    // Fast path: only `\`, `%` and `&` can start an escape.
    const esc = c0 === 0x5c || c0 === 0x25 || c0 === 0x26 ? escapeAt(s, i) : null;
    if (esc !== null) {
      for (let k = 0; k < esc.units.length; k++) {
        const u = esc.units.charCodeAt(k);
        if (isWrapSpace(u)) continue;
        units[n] = u;
        start[n] = i;
        end[n] = i + esc.length;
        n++;
      }
      changed = true;
      i += esc.length;
      continue;
    }
    const c = s.charCodeAt(i);
    if (isWrapSpace(c)) changed = true;
    else {
      units[n] = c;
      start[n] = i;
      end[n] = i + 1;
      n++;
    }
    i++;
  }
  if (!changed) return null;
  return { text: utf16.decode(units.subarray(0, n)), start: start.subarray(0, n), end: end.subarray(0, n) };
}

const HEX_RUN = /[0-9a-fA-F:]{8,}/g;

/**
 * The runs of hex digits (and `:`) in `decoded` (or in `s` itself when there
 * is no decoded view), each in ASCII lower case with `:` dropped: hex in
 * mixed case or as `de:ad:be:ef`. Runs shorter than 8 characters hold no
 * hex form (a secret has at least 4 bytes).
 */
export function hexViews(s: string, decoded: View | null): View[] {
  const text = decoded?.text ?? s;
  const out: View[] = [];
  for (const m of text.matchAll(HEX_RUN)) {
    const run = m[0];
    const at = m.index;
    const start = new Int32Array(run.length);
    const end = new Int32Array(run.length);
    let lower = '';
    for (let i = 0; i < run.length; i++) {
      const c = run.charCodeAt(i);
      if (c === 0x3a) continue;
      start[lower.length] = decoded === null ? at + i : (decoded.start[at + i] ?? 0);
      end[lower.length] = decoded === null ? at + i + 1 : (decoded.end[at + i] ?? 0);
      lower += String.fromCharCode(c >= 0x41 && c <= 0x46 ? c | 0x20 : c);
    }
    out.push({ text: lower, start: start.subarray(0, lower.length), end: end.subarray(0, lower.length) });
  }
  return out;
}
