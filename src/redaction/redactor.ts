/**
 * Replaces every recognizable form of a set of secrets with a stable marker,
 * `[REDACTED:<credential name>]`, in text and in JSON-like values (keys too).
 * The marker names the credential, never its length or any of its bytes.
 *
 * Invariants:
 * - One combined scan per text (an Aho–Corasick automaton over every form of
 *   every secret), so cost does not grow with the number of secrets; plus
 *   one scan of the text's decoded view and of its hex runs (views.ts) when
 *   the text has anything to decode, so wrapped and escaped forms are found
 *   and redacted in the original text.
 * - `redactCut` redacts a text read past a cap before cutting it there: no
 *   cut result ends in the start of a recognized form.
 * - After `redactText`, no form of any secret (of at least
 *   MIN_SUBSTRING_BYTES) occurs outside a marker, even where a marker's own
 *   characters combined with neighbouring text to form one: redaction repeats
 *   until nothing changes, and existing markers are recognized and kept.
 *   Hence it is idempotent.
 * - Text and values that hold no secret come back unchanged (same string,
 *   equal structure).
 * - Pure: no I/O; the secret forms live only inside the redactor's private
 *   state (SecretText), reachable through the returned object alone.
 */
import { MIN_SUBSTRING_BYTES, secretForms } from './encodings.js';
import type { Interval, Pattern } from './matcher.js';
import { LiteralMatcher } from './matcher.js';
import type { View } from './views.js';
import { decodedView, hexViews } from './views.js';

export interface NamedSecret {
  /** Credential name shown in the marker; anything not a credential name shows as "secret". */
  readonly name: string;
  readonly bytes: Uint8Array;
  /** Opaque, reported with each hit (the keyed fingerprint of the value this form came from). */
  readonly fingerprint?: string;
}

/** One real redaction: which secret was found (never a marker that was already in the text). */
export interface SecretHit {
  readonly name: string;
  readonly fingerprint: string | null;
}

export type SecretInput = Uint8Array | NamedSecret;

export interface Redactor {
  /** `s` with every secret form replaced by a marker. */
  redactText(s: string): string;
  /**
   * `s` was read past a size cap, which falls after its first `keep`
   * characters: the redacted text of those characters, where an occurrence
   * that straddles the cut is dropped whole and a trailing partial form of a
   * secret is stripped, so the result never ends in the start of a secret.
   */
  redactCut(s: string, keep: number): string;
  /** A deep copy of `v` with secrets in strings, numbers and object keys replaced. */
  redactValue(v: unknown): unknown;
  /** True when `v` holds any secret form anywhere (strings, numbers, keys, bytes). */
  findSecret(v: unknown): boolean;
  /**
   * How far past a cap a reader must read so that any occurrence of a
   * secret that starts before the cap ends inside what was read: the
   * longest span, in UTF-8 bytes, that one recognized form can take.
   */
  readonly readPastCapBytes: number;
  /**
   * The same redactor, reporting each secret it replaces (or finds) to
   * `onHit` — at least one hit per replaced occurrence; where forms of two
   * secrets overlap, the first one's.
   */
  track(onHit: (hit: SecretHit) => void): Redactor;
}

const DEFAULT_NAME = 'secret';
const MARKER_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
/** Each changing round shortens the text after the first; this only bounds pathological inputs. */
const MAX_ROUNDS = 32;
/** The most original characters one view character can come from (`&#1114111;`). */
const MAX_ESCAPE_CHARS = 10;
/** UTF-8 bytes per UTF-16 code unit, at most. */
const MAX_BYTES_PER_UNIT = 3;

export function redactionMarker(name: string = DEFAULT_NAME): string {
  return `[REDACTED:${MARKER_NAME.test(name) ? name : DEFAULT_NAME}]`;
}

/**
 * The text side of a redactor: the automata over every form of every secret
 * and what they find in one string or byte array. Hits go to `sink` while a
 * tracked redactor runs (the walks are synchronous, so one slot suffices).
 */
class SecretText {
  sink: ((hit: SecretHit) => void) | null = null;
  /** How far past a cap a reader must read: see Redactor.readPastCapBytes. */
  readonly readPastCapBytes: number;
  readonly #named: readonly NamedSecret[];
  readonly #markers: readonly string[];
  readonly #markerSet: ReadonlySet<string>;
  readonly #matcher: LiteralMatcher;
  readonly #viewMatcher: LiteralMatcher;
  readonly #hexMatcher: LiteralMatcher;
  readonly #longestSpan: number;
  /** A short secret's whole forms: a value equal to one (as it is or trimmed) is that secret. */
  readonly #whole = new Map<string, number>();
  readonly #rawBytes: { bytes: Uint8Array; label: number }[] = [];

  constructor(secrets: readonly SecretInput[]) {
    const named = secrets.map((s): NamedSecret => (s instanceof Uint8Array ? { name: DEFAULT_NAME, bytes: s } : s));
    this.#named = named;
    this.#markers = [...new Set(named.map((s) => redactionMarker(s.name)))];
    this.#markerSet = new Set(this.#markers);
    const patterns: Pattern[] = [];
    const viewPatterns: Pattern[] = [];
    const hexPatterns: Pattern[] = [];
    // Labels: secret i is label i; marker j (recognized, never a hit) is label named.length + j.
    named.forEach((s, label) => {
      const forms = secretForms(s.bytes);
      for (const text of forms.substrings) patterns.push({ text, label });
      for (const text of forms.viewForms) viewPatterns.push({ text, label });
      for (const text of forms.hexForms) hexPatterns.push({ text, label });
      for (const text of forms.wholeValues) if (!this.#whole.has(text)) this.#whole.set(text, label);
      if (s.bytes.length > 0) this.#rawBytes.push({ bytes: s.bytes, label });
    });
    // Markers are patterns too, so a marker in the input is recognized as one.
    this.#markers.forEach((text, j) => patterns.push({ text, label: named.length + j }));
    this.#matcher = new LiteralMatcher(patterns);
    this.#viewMatcher = new LiteralMatcher(viewPatterns);
    this.#hexMatcher = new LiteralMatcher(hexPatterns);
    this.#longestSpan = Math.max(this.#matcher.longest, MAX_ESCAPE_CHARS * Math.max(this.#viewMatcher.longest, this.#hexMatcher.longest));
    this.readPastCapBytes = MAX_BYTES_PER_UNIT * this.#longestSpan;
  }

  redactText(s: string): string {
    let current = s;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const next = this.#redactOnce(current);
      if (next === current) return current;
      current = next;
    }
    return redactionMarker(); // fail closed: never reached by real inputs
  }

  redactCut(s: string, keep: number): string {
    if (keep >= s.length) return this.redactText(s);
    let cut = Math.max(0, keep);
    for (const iv of this.#intervalsOf(s)) if (iv.start < cut && iv.end > cut) cut = iv.start;
    let head = s.slice(0, cut);
    // Strip what may be the start of a form, again if what is left ends in one; bounded by the longest span.
    for (let budget = this.#longestSpan; budget > 0 && head.length > 0; ) {
      const open = this.#openTail(head);
      if (open === 0) break;
      head = head.slice(0, head.length - open);
      budget -= open;
    }
    return this.redactText(head);
  }

  hasSecret(s: string): boolean {
    if (this.#wholeMatch(s) !== undefined) return true;
    const found = this.#intervalsOf(s).find((iv) => !this.#isBareMarker(s, iv));
    if (found === undefined) return false;
    this.#markerOf(found.label);
    return true;
  }

  /** The marker for the first secret `b` holds (a short secret only as the whole value), or null. */
  bytesMarker(b: Uint8Array): string | null {
    const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
    for (const { bytes, label } of this.#rawBytes) {
      const found = bytes.length < MIN_SUBSTRING_BYTES ? buf.equals(bytes) : buf.indexOf(bytes) !== -1;
      if (found) return this.#markerOf(label);
    }
    return null;
  }

  /** The marker for `label`, reporting the hit when it is a secret's. */
  #markerOf(label: number): string {
    const secret = this.#named[label];
    if (secret === undefined) return this.#markers[label - this.#named.length] ?? redactionMarker();
    this.sink?.({ name: secret.name, fingerprint: secret.fingerprint ?? null });
    return redactionMarker(secret.name);
  }

  /** The marker for a value that is a short secret's form, as it is or trimmed. */
  #wholeMatch(s: string): string | undefined {
    if (this.#whole.size === 0) return undefined;
    const label = this.#whole.get(s) ?? this.#whole.get(s.trim());
    return label === undefined ? undefined : this.#markerOf(label);
  }

  /** The interval holds no secret form except inside one existing marker. */
  #isBareMarker(s: string, iv: Interval): boolean {
    return this.#markerSet.has(s.slice(iv.start, iv.end));
  }

  /** Occurrences in `s` and in its views, as sorted, merged intervals of `s`. */
  #intervalsOf(s: string): Interval[] {
    const direct = this.#matcher.cover(s);
    if (this.#viewMatcher.isEmpty && this.#hexMatcher.isEmpty) return direct;
    const decoded = decodedView(s);
    const mapped: Interval[] = [];
    const addFrom = (view: View | null, m: LiteralMatcher): void => {
      if (view === null) return;
      for (const iv of m.cover(view.text)) mapped.push({ start: view.start[iv.start] ?? 0, end: view.end[iv.end - 1] ?? s.length, label: iv.label });
    };
    addFrom(decoded, this.#viewMatcher);
    if (!this.#hexMatcher.isEmpty) for (const v of hexViews(s, decoded)) addFrom(v, this.#hexMatcher);
    if (mapped.length === 0) return direct;
    return mergeIntervals([...direct, ...mapped]);
  }

  #redactOnce(s: string): string {
    const wholeMarker = this.#wholeMatch(s);
    if (wholeMarker !== undefined) return wholeMarker;
    const intervals = this.#intervalsOf(s);
    if (intervals.every((iv) => this.#isBareMarker(s, iv))) return s;
    let out = '';
    let at = 0;
    for (const iv of intervals) {
      out += s.slice(at, iv.start) + (this.#isBareMarker(s, iv) ? s.slice(iv.start, iv.end) : this.#markerOf(iv.label));
      at = iv.end;
    }
    return out + s.slice(at);
  }

  /** How many characters at the end of `s` may be the start of a form, in `s` or in one of its views. */
  #openTail(s: string): number {
    let open = this.#matcher.openSuffix(s);
    const decoded = decodedView(s);
    const fromView = (view: View | null, m: LiteralMatcher): void => {
      if (view === null) return;
      const n = m.openSuffix(view.text);
      if (n > 0) open = Math.max(open, s.length - (view.start[view.text.length - n] ?? 0));
    };
    fromView(decoded, this.#viewMatcher);
    const last = hexViews(s, decoded).at(-1);
    // Only a run that reaches the end of the text can hold the start of a form there.
    if (last !== undefined && last.end.at(-1) === (decoded === null ? s.length : decoded.end.at(-1))) fromView(last, this.#hexMatcher);
    return open;
  }
}

/** A scalar redacted, or undefined for an object or array (walked by the caller). */
function redactScalar(t: SecretText, v: unknown): { value: unknown } | undefined {
  if (typeof v === 'string') return { value: t.redactText(v) };
  if (typeof v === 'number' || typeof v === 'bigint') {
    const text = String(v);
    const redacted = t.redactText(text);
    return { value: redacted === text ? v : redacted };
  }
  if (typeof v !== 'object' || v === null) return { value: v };
  if (v instanceof Uint8Array) return { value: t.bytesMarker(v) ?? v };
  return undefined;
}

// Both walks use an explicit stack: a value nested thousands deep (a target's JSON) must not exhaust the call stack.
function redactValue(t: SecretText, root: unknown): unknown {
  const seen = new WeakMap<object, unknown>();
  const pending: { src: object; out: unknown[] | Record<string, unknown> }[] = [];
  const convert = (v: unknown): unknown => {
    const scalar = redactScalar(t, v);
    if (scalar !== undefined) return scalar.value;
    const obj = v as object;
    const done = seen.get(obj);
    if (done !== undefined) return done;
    const out = Array.isArray(obj) ? [] : {};
    seen.set(obj, out);
    pending.push({ src: obj, out });
    return out;
  };
  const result = convert(root);
  for (let task = pending.pop(); task !== undefined; task = pending.pop()) {
    const { src, out } = task;
    if (Array.isArray(out)) {
      for (const item of src as unknown[]) out.push(convert(item));
      continue;
    }
    for (const [key, value] of Object.entries(src)) {
      // defineProperty: a key named "__proto__" stays a plain own property.
      Object.defineProperty(out, t.redactText(key), { value: convert(value), enumerable: true, writable: true, configurable: true });
    }
  }
  return result;
}

function findSecret(t: SecretText, root: unknown): boolean {
  const seen = new WeakSet<object>();
  const pending: unknown[] = [root];
  for (let i = 0; i < pending.length; i++) {
    const v = pending[i];
    pending[i] = undefined;
    if (typeof v === 'string') {
      if (t.hasSecret(v)) return true;
    } else if (typeof v === 'number' || typeof v === 'bigint') {
      if (t.hasSecret(String(v))) return true;
    } else if (typeof v === 'object' && v !== null) {
      if (v instanceof Uint8Array) {
        if (t.bytesMarker(v) !== null) return true;
      } else if (!seen.has(v)) {
        seen.add(v);
        if (Array.isArray(v)) for (const item of v as unknown[]) pending.push(item);
        else
          for (const [key, value] of Object.entries(v)) {
            if (t.hasSecret(key)) return true;
            pending.push(value);
          }
      }
    }
  }
  return false;
}

export function createRedactor(secrets: readonly SecretInput[]): Redactor {
  const t = new SecretText(secrets);
  const { readPastCapBytes } = t;
  function tracked(onHit: (hit: SecretHit) => void): Redactor {
    const run = <T>(fn: () => T): T => {
      const outer = t.sink;
      t.sink = outer === null ? onHit : (h) => (outer(h), onHit(h));
      try {
        return fn();
      } finally {
        t.sink = outer;
      }
    };
    return {
      redactText: (s) => run(() => t.redactText(s)),
      redactCut: (s, keep) => run(() => t.redactCut(s, keep)),
      redactValue: (v) => run(() => redactValue(t, v)),
      findSecret: (v) => run(() => findSecret(t, v)),
      readPastCapBytes,
      track: (next) => tracked((h) => (onHit(h), next(h))),
    };
  }
  return {
    redactText: (s) => t.redactText(s),
    redactCut: (s, keep) => t.redactCut(s, keep),
    redactValue: (v) => redactValue(t, v),
    findSecret: (v) => findSecret(t, v),
    readPastCapBytes,
    track: (onHit) => tracked(onHit),
  };
}

/** Sorted, merged intervals; the label of a merged run is that of its first interval. */
function mergeIntervals(all: Interval[]): Interval[] {
  all.sort((a, b) => a.start - b.start || b.end - a.end);
  const out: { start: number; end: number; label: number }[] = [];
  for (const iv of all) {
    const top = out.at(-1);
    if (top !== undefined && iv.start < top.end) top.end = Math.max(top.end, iv.end);
    else out.push({ ...iv });
  }
  return out;
}
