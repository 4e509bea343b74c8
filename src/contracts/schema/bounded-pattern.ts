/**
 * Patterns of pre-approval rules, matched in linear time. A pattern is
 * compiled to a small NFA (Thompson's construction) and run as a set of
 * states over the input (Pike's simulation, no captures, no backtracking):
 * the work is at most (states × input length), whatever the pattern, so an
 * agent cannot stall the daemon with an input crafted against a rule
 * (ReDoS). A pattern always matches the whole value (anchored at both ends).
 *
 * The syntax is the safe core of regular expressions: literals, `.`,
 * escapes `\d \D \w \W \s \S` and escaped punctuation, classes `[a-z_]` and
 * `[^…]`, groups `( )` and `(?: )`, `|`, and the quantifiers `* + ? {n}
 * {n,} {n,m}` (m at most MAX_REPEAT). Everything else — backreferences,
 * lookaround, `^`/`$` inside the pattern, flags — is refused when the rule is
 * parsed, with the reason. A leading `^` and a trailing `$` are accepted and
 * mean nothing more (every match is whole). Matching is per code point.
 */

/** Longest pattern source accepted. */
export const MAX_PATTERN_LENGTH = 512;
/** Largest bound in `{n,m}`. */
export const MAX_REPEAT = 100;
/** Largest compiled program: bounds both memory and the per-character work. */
export const MAX_STATES = 5000;

type CharTest = (cp: number) => boolean;

type Node =
  | { readonly kind: 'char'; readonly test: CharTest }
  | { readonly kind: 'empty' }
  | { readonly kind: 'seq'; readonly items: readonly Node[] }
  | { readonly kind: 'alt'; readonly options: readonly Node[] }
  | { readonly kind: 'repeat'; readonly node: Node; readonly min: number; readonly max: number | null };

type Inst =
  | { op: 'char'; test: CharTest; next: number }
  | { op: 'split'; a: number; b: number }
  | { op: 'jump'; to: number }
  | { op: 'match' };

export interface BoundedPattern {
  readonly source: string;
  /** True when the whole of `value` matches. */
  matches(value: string): boolean;
}

export type PatternCompile = { readonly ok: true; readonly pattern: BoundedPattern } | { readonly ok: false; readonly problem: string };

class PatternSyntaxError extends Error {}

const cp = (s: string): number => s.codePointAt(0) as number;
const isDigit: CharTest = (c) => c >= 48 && c <= 57;
const isWord: CharTest = (c) => isDigit(c) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
const isSpace: CharTest = (c) => c === 32 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0xfeff || c === 0x2028 || c === 0x2029 || (c >= 0x2000 && c <= 0x200a);
const SPECIAL = new Set([...'\\^$.|?*+()[]{}/-']);
const CONTROL: Readonly<Record<string, number>> = { n: 10, t: 9, r: 13 };

class Parser {
  readonly #cps: string[];
  #i = 0;
  constructor(source: string) {
    this.#cps = Array.from(source);
  }
  fail(msg: string): never {
    throw new PatternSyntaxError(`${msg} (at character ${this.#i + 1})`);
  }
  #peek(): string | undefined {
    return this.#cps[this.#i];
  }
  #eat(s: string): boolean {
    if (this.#cps[this.#i] !== s) return false;
    this.#i++;
    return true;
  }
  parse(): Node {
    if (this.#peek() === '^') this.#i++;
    const node = this.#alt(0);
    if (this.#i < this.#cps.length) this.fail(this.#peek() === ')' ? 'unbalanced ")"' : `unexpected "${this.#peek()}"`);
    return node;
  }
  #alt(depth: number): Node {
    if (depth > 20) this.fail('groups nest too deeply');
    const options = [this.#seq(depth)];
    while (this.#eat('|')) options.push(this.#seq(depth));
    return options.length === 1 ? (options[0] as Node) : { kind: 'alt', options };
  }
  #seq(depth: number): Node {
    const items: Node[] = [];
    for (;;) {
      const c = this.#peek();
      if (c === undefined || c === '|' || c === ')') break;
      if (c === '$' && this.#i === this.#cps.length - 1 && depth === 0) {
        this.#i++;
        break;
      }
      items.push(this.#quantified(this.#atom(depth)));
    }
    return items.length === 1 ? (items[0] as Node) : items.length === 0 ? { kind: 'empty' } : { kind: 'seq', items };
  }
  #quantified(node: Node): Node {
    const c = this.#peek();
    let min: number, max: number | null;
    if (c === '*') [min, max] = [0, null];
    else if (c === '+') [min, max] = [1, null];
    else if (c === '?') [min, max] = [0, 1];
    else if (c === '{') return this.#braces(node);
    else return node;
    this.#i++;
    if (this.#peek() === '?') this.fail('lazy quantifiers are not supported (every match is whole, so they change nothing)');
    if (this.#quantifierNext()) this.fail('a quantifier cannot follow a quantifier');
    return { kind: 'repeat', node, min, max };
  }
  #quantifierNext(): boolean {
    const c = this.#peek();
    return c === '*' || c === '+' || c === '?' || c === '{';
  }
  #number(): number {
    let s = '';
    while (isDigit(cp(this.#peek() ?? 'x'))) s += this.#cps[this.#i++];
    if (s === '' || s.length > 4) this.fail('expected a repetition count');
    return Number(s);
  }
  #braces(node: Node): Node {
    this.#i++;
    const min = this.#number();
    let max: number | null = min;
    if (this.#eat(',')) max = this.#peek() === '}' ? null : this.#number();
    if (!this.#eat('}')) this.fail('expected "}"');
    if (min > MAX_REPEAT || (max !== null && max > MAX_REPEAT)) this.fail(`repetition counts are at most ${MAX_REPEAT}`);
    if (max !== null && max < min) this.fail('{n,m} needs n ≤ m');
    if (this.#quantifierNext()) this.fail('a quantifier cannot follow a quantifier');
    return { kind: 'repeat', node, min, max };
  }
  #atom(depth: number): Node {
    const c = this.#cps[this.#i++] as string;
    switch (c) {
      case '(': {
        if (this.#eat('?')) {
          if (!this.#eat(':')) this.fail('lookaround and named groups are not supported; use (?: ) or ( )');
        }
        const inner = this.#alt(depth + 1);
        if (!this.#eat(')')) this.fail('missing ")"');
        return inner;
      }
      case '[':
        return { kind: 'char', test: this.#charClass() };
      case '.':
        return { kind: 'char', test: (x) => x !== 10 && x !== 13 && x !== 0x2028 && x !== 0x2029 };
      case '\\':
        return { kind: 'char', test: this.#escape(false) };
      case '*':
      case '+':
      case '?':
      case '{':
        return this.fail(`nothing to repeat before "${c}"`);
      case '^':
      case '$':
        return this.fail(`"${c}" is allowed only at the very start ("^") or end ("$"): every pattern matches the whole value`);
      case ']':
      case '}':
        return this.fail(`escape "${c}" as "\\${c}"`);
      default: {
        const v = cp(c);
        return { kind: 'char', test: (x) => x === v };
      }
    }
  }
  /** After a backslash. In a class, `\b` is not special either: only the listed escapes are. */
  #escape(inClass: boolean): CharTest {
    const c = this.#cps[this.#i++];
    if (c === undefined) this.fail('the pattern ends with "\\"');
    switch (c) {
      case 'd': return isDigit;
      case 'D': return (x) => !isDigit(x);
      case 'w': return isWord;
      case 'W': return (x) => !isWord(x);
      case 's': return isSpace;
      case 'S': return (x) => !isSpace(x);
      case 'n': return (x) => x === 10;
      case 't': return (x) => x === 9;
      case 'r': return (x) => x === 13;
      default:
        if (SPECIAL.has(c)) {
          const v = cp(c);
          return (x) => x === v;
        }
        return this.fail(isDigit(cp(c)) ? 'backreferences are not supported' : `"\\${c}" is not supported${inClass ? ' in a class' : ''}`);
    }
  }
  #classChar(): { test: CharTest; single: number | null } {
    const c = this.#cps[this.#i++];
    if (c === undefined) this.fail('missing "]"');
    if (c === '\\') {
      const next = this.#cps[this.#i] ?? '';
      const test = this.#escape(true);
      return { test, single: SPECIAL.has(next) ? cp(next) : (CONTROL[next] ?? null) };
    }
    if (c === '[') this.fail('escape "[" inside a class as "\\["');
    const v = cp(c);
    return { test: (x) => x === v, single: v };
  }
  #charClass(): CharTest {
    const negate = this.#eat('^');
    const parts: CharTest[] = [];
    for (;;) {
      if (this.#peek() === undefined) this.fail('missing "]"');
      if (this.#peek() === ']') break;
      const lo = this.#classChar();
      if (this.#peek() === '-' && this.#cps[this.#i + 1] !== ']' && this.#cps[this.#i + 1] !== undefined) {
        this.#i++;
        const hi = this.#classChar();
        if (lo.single === null || hi.single === null) this.fail('a range needs a single character at each end');
        const [a, b] = [lo.single, hi.single];
        if (a > b) this.fail('a range must go from low to high');
        parts.push((x) => x >= a && x <= b);
      } else parts.push(lo.test);
    }
    this.#i++; // ]
    if (parts.length === 0) this.fail('an empty class matches nothing');
    const any = (x: number): boolean => parts.some((p) => p(x));
    return negate ? (x) => !any(x) : any;
  }
}

/** Thompson's construction into a flat program; throws when it grows past MAX_STATES. */
function compile(root: Node): Inst[] {
  const prog: Inst[] = [];
  const emit = (i: Inst): number => {
    if (prog.length >= MAX_STATES) throw new PatternSyntaxError(`the pattern is too large once its repetitions are counted (more than ${MAX_STATES} states)`);
    prog.push(i);
    return prog.length - 1;
  };
  // Each fragment leaves its exits as holes to patch: [index, field].
  type Hole = [number, 'next' | 'a' | 'b' | 'to'];
  const patch = (holes: Hole[], to: number): void => {
    for (const [i, f] of holes) (prog[i] as Record<string, unknown>)[f] = to;
  };
  const frag = (n: Node): { start: number; out: Hole[] } => {
    switch (n.kind) {
      case 'char': {
        const i = emit({ op: 'char', test: n.test, next: -1 });
        return { start: i, out: [[i, 'next']] };
      }
      case 'empty': {
        const i = emit({ op: 'jump', to: -1 });
        return { start: i, out: [[i, 'to']] };
      }
      case 'seq': {
        let first: { start: number; out: Hole[] } | undefined;
        let out: Hole[] = [];
        for (const item of n.items) {
          const f = frag(item);
          if (first === undefined) first = f;
          else patch(out, f.start);
          out = f.out;
        }
        return { start: (first as { start: number }).start, out };
      }
      case 'alt': {
        // split chains: split(a, split(b, c))
        const out: Hole[] = [];
        const splits: number[] = [];
        const starts: number[] = [];
        n.options.forEach((o, k) => {
          if (k < n.options.length - 1) splits.push(emit({ op: 'split', a: -1, b: -1 }));
          const f = frag(o);
          starts.push(f.start);
          out.push(...f.out);
        });
        splits.forEach((s, k) => {
          const inst = prog[s] as Extract<Inst, { op: 'split' }>;
          inst.a = starts[k] as number;
          inst.b = k + 1 < splits.length ? (splits[k + 1] as number) : (starts[k + 1] as number);
        });
        return { start: splits[0] ?? (starts[0] as number), out };
      }
      case 'repeat': {
        const parts: { start: number; out: Hole[] }[] = [];
        for (let k = 0; k < n.min; k++) parts.push(frag(n.node));
        if (n.max === null) {
          const s = emit({ op: 'split', a: -1, b: -1 });
          const body = frag(n.node);
          (prog[s] as Extract<Inst, { op: 'split' }>).a = body.start;
          patch(body.out, s);
          parts.push({ start: s, out: [[s, 'b']] });
        } else {
          for (let k = n.min; k < n.max; k++) {
            const s = emit({ op: 'split', a: -1, b: -1 });
            const body = frag(n.node);
            (prog[s] as Extract<Inst, { op: 'split' }>).a = body.start;
            parts.push({ start: s, out: [...body.out, [s, 'b']] });
          }
        }
        if (parts.length === 0) return frag({ kind: 'empty' });
        for (let k = 1; k < parts.length; k++) patch((parts[k - 1] as { out: Hole[] }).out, (parts[k] as { start: number }).start);
        return { start: (parts[0] as { start: number }).start, out: (parts[parts.length - 1] as { out: Hole[] }).out };
      }
    }
  };
  const f = frag(root);
  patch(f.out, emit({ op: 'match' }));
  prog.push({ op: 'jump', to: f.start }); // entry, last: prog.length - 1
  return prog;
}

function run(prog: readonly Inst[], value: string): boolean {
  const entry = prog.length - 1;
  const mark = new Int32Array(prog.length).fill(-1);
  let current: number[] = [];
  let step = 0;
  // Follows jumps and splits without recursion; each state is added once per step.
  const add = (list: number[], from: number): void => {
    const stack = [from];
    while (stack.length > 0) {
      const i = stack.pop() as number;
      if (mark[i] === step) continue;
      mark[i] = step;
      const inst = prog[i] as Inst;
      if (inst.op === 'jump') stack.push(inst.to);
      else if (inst.op === 'split') stack.push(inst.b, inst.a);
      else list.push(i);
    }
  };
  add(current, entry);
  for (const ch of value) {
    const c = cp(ch);
    step++;
    const next: number[] = [];
    for (const i of current) {
      const inst = prog[i] as Inst;
      if (inst.op === 'char' && inst.test(c)) add(next, inst.next);
    }
    if (next.length === 0) return false;
    current = next;
  }
  return current.some((i) => (prog[i] as Inst).op === 'match');
}

export function compileBoundedPattern(source: string): PatternCompile {
  if (source.length > MAX_PATTERN_LENGTH) return { ok: false, problem: `a pattern is at most ${MAX_PATTERN_LENGTH} characters` };
  try {
    const prog = compile(new Parser(source).parse());
    return { ok: true, pattern: { source, matches: (value) => run(prog, value) } };
  } catch (e) {
    if (e instanceof PatternSyntaxError) return { ok: false, problem: e.message };
    throw e;
  }
}
