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
/** Code units a string can hold: the root's moves are a table of this size. */
const CODE_UNITS = 0x10000;

export class LiteralMatcher {
  /**
   * The trie, numbered breadth-first, so the children of a state are one
   * run of states (`firstChild`, `childCount`), sorted by the code unit on
   * the edge into them (`edge`), and every state comes after its parent and
   * its failure state.
   */
  private readonly edge: Uint16Array;
  private readonly firstChild: Int32Array;
  private readonly childCount: Int32Array;
  private readonly fail: Int32Array;
  /** Length of the longest pattern ending at each state (0 = none). */
  private readonly bestLength: Int32Array;
  private readonly bestLabel: Int32Array;
  /** Length of the pattern prefix each state stands for. */
  private readonly depth: Int32Array;
  /** The root's transitions by code unit (0 = stay at the root). */
  private readonly rootNext = new Int32Array(CODE_UNITS);
  readonly isEmpty: boolean;
  /** Length of the longest pattern. */
  readonly longest: number;

  constructor(patterns: readonly Pattern[]) {
    const trie = buildTrie(patterns);
    const n = trie.states;
    this.edge = new Uint16Array(n);
    this.firstChild = new Int32Array(n);
    this.childCount = new Int32Array(n);
    this.fail = new Int32Array(n);
    this.bestLength = new Int32Array(n);
    this.bestLabel = new Int32Array(n).fill(-1);
    this.depth = new Int32Array(n);
    const parent = new Int32Array(n);
    // Breadth-first renumbering: `order[i]` is the trie state numbered i.
    const order = new Int32Array(n);
    let tail = 1;
    for (let i = 0; i < n; i++) {
      const t = order[i] ?? ROOT;
      this.edge[i] = trie.code[t] ?? 0;
      this.depth[i] = trie.depth[t] ?? 0;
      this.bestLength[i] = trie.endLength[t] ?? 0;
      this.bestLabel[i] = trie.endLabel[t] ?? -1;
      this.firstChild[i] = tail;
      for (let c = trie.firstChild[t] ?? -1; c !== -1; c = trie.nextSibling[c] ?? -1) {
        parent[tail] = i;
        order[tail++] = c;
      }
      this.childCount[i] = tail - (this.firstChild[i] ?? tail);
    }
    this.isEmpty = n === 1;
    this.longest = trie.longest;
    for (let c = this.firstChild[ROOT] ?? 1, end = c + (this.childCount[ROOT] ?? 0); c < end; c++) this.rootNext[this.edge[c] ?? 0] = c;
    // Failure links, breadth-first. A state that ends no pattern itself inherits the longest
    // match of its failure state (a suffix of it); a state that does end a pattern already has
    // the longest match possible there.
    for (let s = 1; s < n; s++) {
      const p = parent[s] ?? ROOT;
      const f = p === ROOT ? ROOT : this.step(this.fail[p] ?? ROOT, this.edge[s] ?? 0);
      this.fail[s] = f;
      if ((this.bestLength[s] ?? 0) === 0 && (this.bestLength[f] ?? 0) > 0) {
        this.bestLength[s] = this.bestLength[f] ?? 0;
        this.bestLabel[s] = this.bestLabel[f] ?? -1;
      }
    }
  }

  private step(state: number, code: number): number {
    for (let s = state; ; s = this.fail[s] ?? ROOT) {
      // Most characters of most texts start no pattern: the root's moves are a table.
      if (s === ROOT) return this.rootNext[code] ?? ROOT;
      let lo = this.firstChild[s] ?? 0;
      let hi = lo + (this.childCount[s] ?? 0) - 1;
      while (lo <= hi) {
        const mid = (lo + hi) >>> 1;
        const c = this.edge[mid] ?? 0;
        if (c === code) return mid;
        if (c < code) lo = mid + 1;
        else hi = mid - 1;
      }
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

/** A trie built from patterns in sorted order, its states numbered as they were made. */
interface Trie {
  readonly states: number;
  readonly longest: number;
  readonly code: Uint16Array;
  readonly depth: Int32Array;
  readonly endLength: Int32Array;
  readonly endLabel: Int32Array;
  /** Each state's children as a list, in rising code-unit order (-1 ends it). */
  readonly firstChild: Int32Array;
  readonly nextSibling: Int32Array;
}

/**
 * Inserting the patterns sorted means each one shares with the trie exactly its common prefix
 * with the previous one: no lookup per character, and each state's children come in rising
 * order. Of equal patterns, the first given keeps its label.
 */
function buildTrie(patterns: readonly Pattern[]): Trie {
  const texts = patterns.filter((p) => p.text.length > 0);
  const sorted = texts
    .map((_, i) => i)
    .sort((a, b) => {
      const x = texts[a]?.text ?? '';
      const y = texts[b]?.text ?? '';
      return x < y ? -1 : x > y ? 1 : a - b;
    });
  const capacity = texts.reduce((sum, p) => sum + p.text.length, 1);
  const trie = {
    code: new Uint16Array(capacity),
    depth: new Int32Array(capacity),
    endLength: new Int32Array(capacity),
    endLabel: new Int32Array(capacity).fill(-1),
    firstChild: new Int32Array(capacity).fill(-1),
    nextSibling: new Int32Array(capacity).fill(-1),
  };
  const lastChild = new Int32Array(capacity).fill(-1);
  /** The states along the previous pattern, by depth. */
  const path = [ROOT];
  let previous = '';
  let states = 1;
  let longest = 0;
  for (const i of sorted) {
    const { text, label } = texts[i] ?? { text: '', label: -1 };
    longest = Math.max(longest, text.length);
    let shared = 0;
    while (shared < Math.min(previous.length, text.length) && previous.charCodeAt(shared) === text.charCodeAt(shared)) shared++;
    let state = path[shared] ?? ROOT;
    for (let d = shared; d < text.length; d++) {
      const s = states++;
      trie.code[s] = text.charCodeAt(d);
      trie.depth[s] = d + 1;
      const last = lastChild[state] ?? -1;
      if (last === -1) trie.firstChild[state] = s;
      else trie.nextSibling[last] = s;
      lastChild[state] = s;
      path[d + 1] = s;
      state = s;
    }
    if (trie.endLength[state] === 0) {
      trie.endLength[state] = text.length;
      trie.endLabel[state] = label;
    }
    previous = text;
  }
  return { ...trie, states, longest };
}
