/**
 * An Aho–Corasick automaton over UTF-16 code units: one left-to-right pass
 * finds every occurrence of every pattern, so scanning a 1 MiB response for
 * hundreds of secret forms costs one pass, not one pass per form.
 *
 * Invariants:
 * - `cover()` returns sorted, non-overlapping intervals whose union is
 *   exactly the union of all pattern occurrences (overlapping occurrences are
 *   merged, so no byte of any occurrence is left outside an interval).
 * - Pure and immutable after construction; safe to share.
 */

export interface Pattern {
  readonly text: string;
  /** Caller-defined tag carried to the intervals (e.g. which secret). */
  readonly label: number;
}

export interface Interval {
  readonly start: number;
  /** Exclusive. */
  readonly end: number;
  /** Label of the occurrence that starts the interval. */
  readonly label: number;
}

const ROOT = 0;
// Transition key: state * 2^16 + code unit. States stay far below 2^36, so the
// product is an exact integer in a double.
const CODE_UNITS = 0x10000;

export class LiteralMatcher {
  private readonly goto = new Map<number, number>();
  private readonly fail: number[] = [ROOT];
  /** Length of the longest pattern ending at each state (0 = none). */
  private readonly bestLength: number[] = [0];
  private readonly bestLabel: number[] = [-1];
  /** Length of the pattern prefix each state stands for. */
  private readonly depth: number[] = [0];
  /** The root's transitions by code unit (0 = stay at the root). */
  private readonly rootNext = new Int32Array(CODE_UNITS);
  readonly isEmpty: boolean;
  /** Length of the longest pattern. */
  readonly longest: number;

  constructor(patterns: readonly Pattern[]) {
    let longest = 0;
    for (const { text, label } of patterns) {
      if (text.length === 0) continue;
      longest = Math.max(longest, text.length);
      let state = ROOT;
      for (let i = 0; i < text.length; i++) {
        const key = state * CODE_UNITS + text.charCodeAt(i);
        let next = this.goto.get(key);
        if (next === undefined) {
          next = this.fail.length;
          this.goto.set(key, next);
          this.fail.push(ROOT);
          this.bestLength.push(0);
          this.bestLabel.push(-1);
          this.depth.push(i + 1);
        }
        state = next;
      }
      if (this.bestLength[state] === 0) {
        this.bestLength[state] = text.length;
        this.bestLabel[state] = label;
      }
    }
    this.isEmpty = this.fail.length === 1;
    this.longest = longest;
    for (const [key, child] of this.goto) if (key < CODE_UNITS) this.rootNext[key] = child;
    this.linkFailures();
  }

  /**
   * Breadth-first failure links. A state that ends no pattern itself inherits
   * the longest match of its failure state (a suffix of it); a state that does
   * end a pattern already has the longest match possible there.
   */
  private linkFailures(): void {
    const children = new Map<number, [number, number][]>();
    for (const [key, child] of this.goto) {
      const parent = Math.floor(key / CODE_UNITS);
      let list = children.get(parent);
      if (list === undefined) children.set(parent, (list = []));
      list.push([key % CODE_UNITS, child]);
    }
    const queue: number[] = [ROOT];
    for (let qi = 0; qi < queue.length; qi++) {
      const parent = queue[qi] ?? ROOT;
      for (const [code, child] of children.get(parent) ?? []) {
        queue.push(child);
        if (parent !== ROOT) this.fail[child] = this.step(this.fail[parent] ?? ROOT, code);
        const f = this.fail[child] ?? ROOT;
        if ((this.bestLength[child] ?? 0) === 0 && (this.bestLength[f] ?? 0) > 0) {
          this.bestLength[child] = this.bestLength[f] ?? 0;
          this.bestLabel[child] = this.bestLabel[f] ?? -1;
        }
      }
    }
  }

  private step(state: number, code: number): number {
    let s = state;
    for (;;) {
      // Most characters of most texts start no pattern: the root's moves are a table, not a map lookup.
      if (s === ROOT) return this.rootNext[code] ?? ROOT;
      const next = this.goto.get(s * CODE_UNITS + code);
      if (next !== undefined) return next;
      s = this.fail[s] ?? ROOT;
    }
  }

  /**
   * The length of the longest suffix of `s` that is a prefix of some pattern
   * (what a cut at the end of `s` may have left of an occurrence).
   */
  openSuffix(s: string): number {
    if (this.isEmpty) return 0;
    let state = ROOT;
    for (let i = Math.max(0, s.length - this.longest); i < s.length; i++) state = this.step(state, s.charCodeAt(i));
    return this.depth[state] ?? 0;
  }

  /** Sorted, merged intervals covering every occurrence of every pattern in `s`. */
  cover(s: string): Interval[] {
    const out: { start: number; end: number; label: number }[] = [];
    if (this.isEmpty) return out;
    let state = ROOT;
    for (let i = 0; i < s.length; i++) {
      state = this.step(state, s.charCodeAt(i));
      const length = this.bestLength[state] ?? 0;
      if (length === 0) continue;
      const current = { start: i + 1 - length, end: i + 1, label: this.bestLabel[state] ?? -1 };
      // Occurrences arrive by end position; a longer one may start before
      // earlier intervals, so fold back every interval it overlaps.
      for (let top = out.at(-1); top !== undefined && current.start < top.end; top = out.at(-1)) {
        if (top.start <= current.start) {
          current.start = top.start;
          current.label = top.label;
        }
        out.pop();
      }
      out.push(current);
    }
    return out;
  }
}
