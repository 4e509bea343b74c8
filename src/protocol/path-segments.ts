/**
 * The one rule for what a URL path segment may resolve to at the target.
 * Servers and the proxies in front of them decode a segment once or twice
 * more, as UTF-8 or Latin-1 (some leniently: overlong `%C0%AE`, IIS `%u002e`),
 * trim whitespace, NUL and invisible format characters, fold compatibility
 * forms (a fullwidth `．` is a `.` after NFKC) and cut path parameters at `;`
 * (Tomcat, Jetty). A segment is refused when any of those readings leaves it
 * empty, `.` or `..`, or puts a `/` or `\` inside it.
 *
 * Invariants:
 * - Pure and bounded: at most DECODE_ROUNDS rounds and MAX_FORMS readings; a
 *   segment still changing after that is refused (no ordinary segment is
 *   encoded eight times over).
 * - Fail closed: every reading is checked; one bad reading refuses the segment.
 * - Shared by the catalog (templates, patterns, agent values) and the HTTP
 *   executor's last check of the request path, so both refuse the same set.
 */

const DECODE_ROUNDS = 8;
const MAX_FORMS = 64;

/** Characters some parsers read as a full stop although NFKC keeps them (ideographic full stops). */
const EXTRA_DOTS = /[\u3002\uff61]/g;
/** Removed everywhere before the dot test: whitespace, C0/C1 controls (NUL included), DEL and format characters (Cf: zero-width, BOM, bidi marks). */
const INVISIBLE = /[\p{White_Space}\p{Cc}\p{Cf}]/gu;
/** Path parameters and anything a decoding proxy would take as query or fragment start here. */
const PARAMETER_START = /[;?#]/;

/** One byte run decoded leniently as UTF-8: overlong forms decode too (`C0 AE` → `.`), bad bytes become U+FFFD. */
function lenientUtf8(bytes: readonly number[]): string {
  let out = '';
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i] as number;
    const need = b >= 0xf0 && b < 0xf8 ? 3 : b >= 0xe0 ? 2 : b >= 0xc0 ? 1 : 0;
    if (b < 0x80) {
      out += String.fromCharCode(b);
      i++;
      continue;
    }
    const cont = bytes.slice(i + 1, i + 1 + need);
    if (need === 0 || cont.length < need || cont.some((c) => (c & 0xc0) !== 0x80)) {
      out += '\ufffd';
      i++;
      continue;
    }
    let cp = b & (0x3f >> need);
    for (const c of cont) cp = (cp << 6) | (c & 0x3f);
    out += cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ? '\ufffd' : String.fromCodePoint(cp);
    i += need + 1;
  }
  return out;
}

const ESCAPES = /(?:%[0-9A-Fa-f]{2})+|%[uU][0-9A-Fa-f]{4}/g;

function hexBytes(run: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < run.length; i += 3) out.push(parseInt(run.slice(i + 1, i + 3), 16));
  return out;
}

/** One decoding round, as UTF-8 (lenient) and as Latin-1; `%uXXXX` in both. */
function decodeOnce(s: string): string[] {
  const utf8 = s.replace(ESCAPES, (run) => (/^%u/i.test(run) ? String.fromCharCode(parseInt(run.slice(2), 16)) : lenientUtf8(hexBytes(run))));
  const latin1 = s.replace(ESCAPES, (run) => (/^%u/i.test(run) ? String.fromCharCode(parseInt(run.slice(2), 16)) : String.fromCharCode(...hexBytes(run))));
  return [utf8, latin1];
}

/**
 * The text itself and what it reads as after each further round of
 * percent-decoding (UTF-8 and Latin-1 readings), without duplicates;
 * `complete` is false when the readings were cut at the bounds.
 */
export function decodedReadings(s: string): { readonly forms: readonly string[]; readonly complete: boolean } {
  const seen = new Set([s]);
  let frontier = [s];
  for (let round = 0; round < DECODE_ROUNDS && frontier.length > 0; round++) {
    const next: string[] = [];
    for (const f of frontier) {
      for (const d of decodeOnce(f)) {
        if (seen.has(d)) continue;
        if (seen.size >= MAX_FORMS) return { forms: [...seen], complete: false };
        seen.add(d);
        next.push(d);
      }
    }
    frontier = next;
  }
  return { forms: [...seen], complete: frontier.length === 0 };
}

/** Every reading of `s` (see decodedReadings). */
export function decodedForms(s: string): readonly string[] {
  return decodedReadings(s).forms;
}

/** What a server that trims, folds and cuts path parameters keeps of one decoded reading. */
export function resolvedSegmentText(reading: string): string {
  const folded = reading.normalize('NFKC').replace(EXTRA_DOTS, '.').replace(INVISIBLE, '');
  const cut = PARAMETER_START.exec(folded);
  return cut === null ? folded : folded.slice(0, cut.index);
}

export type SegmentProblem = 'empty' | 'dot' | 'separator' | 'too_deep';

/**
 * Why a path segment (raw text, or percent-encoded text, as it will be seen
 * by the target before its own decoding) would resolve to something other
 * than one ordinary segment; undefined when every reading is safe.
 */
export function pathSegmentProblem(segment: string): SegmentProblem | undefined {
  const { forms, complete } = decodedReadings(segment);
  if (!complete) return 'too_deep';
  for (const reading of forms) {
    const folded = reading.normalize('NFKC');
    if (/[/\\]/.test(folded) || /[/\\]/.test(reading)) return 'separator';
    const kept = resolvedSegmentText(reading);
    if (kept === '') return 'empty';
    if (kept === '.' || kept === '..') return 'dot';
  }
  return undefined;
}

/** The problem in words, for error messages. */
export function describeSegmentProblem(p: SegmentProblem): string {
  switch (p) {
    case 'empty':
      return 'would produce an empty path segment';
    case 'dot':
      return 'would produce a "." or ".." path segment';
    case 'separator':
      return 'would contain "/" or "\\" inside a path segment';
    case 'too_deep':
      return 'is percent-encoded too many times over';
  }
}
