/**
 * Which rows of a card's details have been on screen: the TUI's measure of
 * the seen rule (src/protocol/operator/presentation.ts). Pure.
 *
 * Invariants: coverage is kept per card as half-open row ranges, merged and
 * sorted; it belongs to one fold of the details (a width and a row count) —
 * at another width the rows are other rows, so the count starts again; a
 * card is covered only when every row from the first to the last was drawn,
 * so jumping to the end covers the end and nothing between.
 */

export interface Coverage {
  /** The width the details were folded to. */
  readonly width: number;
  /** Rows of the details at that width. */
  readonly total: number;
  /** Rows drawn, as sorted, disjoint [from, to) ranges. */
  readonly ranges: readonly (readonly [number, number])[];
}

/** The coverage for this fold: `prev` if it was kept for the same width and row count, else an empty one. */
export function coverageFor(prev: Coverage | undefined, width: number, total: number): Coverage {
  return prev !== undefined && prev.width === width && prev.total === total ? prev : { width, total, ranges: [] };
}

/** `c` with rows [from, to) added. */
export function cover(c: Coverage, from: number, to: number): Coverage {
  const a = Math.max(0, Math.min(from, c.total));
  const b = Math.max(a, Math.min(to, c.total));
  if (a === b) return c;
  const all = [...c.ranges, [a, b] as const].sort((x, y) => x[0] - y[0]);
  const merged: [number, number][] = [];
  for (const [s, e] of all) {
    const last = merged[merged.length - 1];
    if (last !== undefined && s <= last[1]) last[1] = Math.max(last[1], e);
    else merged.push([s, e]);
  }
  return { ...c, ranges: merged };
}

/** Rows drawn at least once. */
export function coveredRows(c: Coverage): number {
  return c.ranges.reduce((n, [s, e]) => n + (e - s), 0);
}

/** Every row was drawn. */
export function complete(c: Coverage): boolean {
  return c.total > 0 && coveredRows(c) >= c.total;
}
