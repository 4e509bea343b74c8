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

import { decodedReadings } from './percent-readings.js';

/** Characters some parsers read as a full stop although NFKC keeps them (ideographic full stops). */
const EXTRA_DOTS = /[\u3002\uff61]/g;
/** Removed everywhere before the dot test: whitespace, C0/C1 controls (NUL included), DEL, format characters (Cf: zero-width, BOM, bidi marks) and other default-ignorable code points (variation selectors, fillers, tags). */
const INVISIBLE = /[\p{White_Space}\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}]/gu;
/** Path parameters and anything a decoding proxy would take as query or fragment start here. */
const PARAMETER_START = /[;?#]/;

/** What a server that trims, folds and cuts path parameters keeps of one decoded reading. */
export function resolvedSegmentText(reading: string): string {
  const folded = reading.normalize('NFKC').replace(EXTRA_DOTS, '.').replace(INVISIBLE, '');
  const cut = PARAMETER_START.exec(folded);
  return cut === null ? folded : folded.slice(0, cut.index);
}

type SegmentProblem = 'empty' | 'dot' | 'separator' | 'too_deep';

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
