/**
 * "Did you mean": the closest known word to a misspelt one, by edit distance
 * (Damerau: an adjacent swap counts as one edit). The one home of this rule
 * for the CLI and the catalog. Pure; inputs are short words.
 */

/** Optimal-string-alignment distance between `a` and `b`. */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/** The known word closest to `word`, when it is close enough to be a slip (≤ 2 edits, and less than half the word). */
export function closest(word: string, known: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  const words = [...known];
  if (words.includes(word)) return undefined;
  for (const k of words) {
    const dist = editDistance(word.toLowerCase(), k.toLowerCase());
    if (dist < bestD) {
      best = k;
      bestD = dist;
    }
  }
  // Distance is measured ignoring case, so `Effect` finds `effect` (distance 0, not an exact match).
  return best !== undefined && bestD <= 2 && bestD * 2 < Math.max(word.length, 2) ? best : undefined;
}

/** ` (did you mean "x"?)`, or nothing. */
export function didYouMean(word: string, known: Iterable<string>): string {
  const c = closest(word, known);
  return c === undefined ? '' : ` (did you mean "${c}"?)`;
}
