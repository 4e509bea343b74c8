/**
 * URL paths: the templates of fixed HTTP tools, the patterns of broad ones, the
 * percent-encoding of agent values and the containment test used by authority.
 * Invariants: an agent value always lands inside exactly one path segment; it
 * never produces a segment that a server resolves as empty, `.` or `..`, nor a
 * `/` or a `\` — not after the target decodes it once or more (`%2e%2e`,
 * `%252f`), trims whitespace, NUL or format characters, folds it (NFKC) or
 * cuts it at `;` (the rule is src/rules/path-segments.ts); every byte
 * outside the RFC 3986 unreserved set is percent-encoded as UTF-8.
 */
import { describeSegmentProblem, pathSegmentProblem } from '../../rules/path-segments.js';
import { decodedForms } from '../../rules/percent-readings.js';
import { isWellFormedText } from '../../rules/canonical.js';
import { hasControl } from '../text.js';
import { parseStringTemplate, shapeOf, type StringTemplate, type TemplatePart } from './string-template.js';

export interface PathTemplate {
  readonly source: string;
  /** One template per segment; a trailing slash is a final literal '' segment. */
  readonly segments: readonly StringTemplate[];
  /** Placeholder names replaced by `{}` — the authority form. */
  readonly shape: string;
}

type PatternSegment = { readonly kind: 'literal'; readonly text: string } | { readonly kind: 'param' } | { readonly kind: 'rest' };

export interface PathPattern {
  readonly source: string;
  readonly segments: readonly PatternSegment[];
  readonly shape: string;
}

type Parsed<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problem: string };

const LITERAL_CHARS = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-Fa-f]{2})*$/;

/** Percent-encodes every byte outside A-Z a-z 0-9 - . _ ~ (UTF-8). The value must be well-formed text. */
export function encodeComponent(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** `%2e` → `%2E`: the one normalization applied to literal segments. */
function normalizeLiteral(text: string): string {
  return text.replace(/%([0-9a-fA-F]{2})/g, (_, h: string) => `%${h.toUpperCase()}`);
}

/** Why a raw (unencoded) segment value is unsafe, or undefined. */
export function segmentValueProblem(value: string): string | undefined {
  if (!isWellFormedText(value)) return 'contains a lone surrogate';
  if (decodedForms(value).some(hasControl)) return 'contains a control character';
  const p = pathSegmentProblem(value);
  return p === 'separator' ? describeSegmentProblem(p) : undefined;
}

/** Why a whole composed segment (literal text + values, before encoding) is unsafe, or undefined. */
export function composedSegmentProblem(segment: string): string | undefined {
  const p = pathSegmentProblem(segment);
  return p === undefined ? undefined : describeSegmentProblem(p);
}

function checkLiteral(text: string): string | undefined {
  if (!LITERAL_CHARS.test(text)) return `"${text}" has characters that must be percent-encoded`;
  if (/%(2f|5c)/i.test(text)) return `"${text}" encodes "/" or "\\"`;
  try {
    decodeURIComponent(text);
  } catch {
    return `"${text}" is not valid percent-encoded UTF-8`;
  }
  return undefined;
}

function splitPath(source: string): Parsed<string[]> {
  if (!source.startsWith('/')) return { ok: false, problem: 'must start with "/"' };
  if (/[?#]/.test(source)) return { ok: false, problem: 'must not contain "?" or "#" (use query:)' };
  if (source.length > 2048) return { ok: false, problem: 'is longer than 2048 characters' };
  const segs = source === '/' ? [''] : source.slice(1).split('/');
  if (segs.slice(0, -1).some((s) => s === '')) return { ok: false, problem: 'has an empty segment ("//")' };
  return { ok: true, value: segs };
}

/** Parses `/repos/{owner}/{repo}/issues` (placeholders may share a segment with literal text). */
export function parsePathTemplate(source: string): Parsed<PathTemplate> {
  const split = splitPath(source);
  if (!split.ok) return split;
  const segments: StringTemplate[] = [];
  for (const seg of split.value) {
    const t = parseStringTemplate(seg);
    if (!t.ok) return { ok: false, problem: t.problem };
    const parts: TemplatePart[] = [];
    for (const p of t.template.parts) {
      if (p.kind === 'splice') return { ok: false, problem: '"{...param}" is not allowed in a path' };
      if (p.kind === 'literal') {
        const problem = checkLiteral(p.text);
        if (problem !== undefined) return { ok: false, problem };
        parts.push({ kind: 'literal', text: normalizeLiteral(p.text) });
      } else parts.push(p);
    }
    if (parts.every((p) => p.kind === 'literal') && seg !== '' && composedSegmentProblem(seg) !== undefined) {
      return { ok: false, problem: `segment "${seg}" is a dot segment` };
    }
    segments.push({ source: seg, parts });
  }
  return { ok: true, value: { source, segments, shape: '/' + segments.map(shapeOf).join('/') } };
}

/** Parses a broad-tool pattern: literal segments, whole-segment `{name}`, and an optional final `{...name}`. */
export function parsePathPattern(source: string): Parsed<PathPattern> {
  const split = splitPath(source);
  if (!split.ok) return split;
  const segments: PatternSegment[] = [];
  for (const [i, seg] of split.value.entries()) {
    const t = parseStringTemplate(seg);
    if (!t.ok) return { ok: false, problem: t.problem };
    const [only, ...more] = t.template.parts;
    if (only !== undefined && only.kind !== 'literal' && more.length === 0) {
      if (only.kind === 'splice' && i !== split.value.length - 1) return { ok: false, problem: '"{...name}" must be the last segment' };
      segments.push(only.kind === 'splice' ? { kind: 'rest' } : { kind: 'param' });
      continue;
    }
    if (t.template.parts.some((p) => p.kind !== 'literal')) return { ok: false, problem: `segment "${seg}": a placeholder must be a whole segment in a pattern` };
    const problem = checkLiteral(seg) ?? (seg !== '' ? composedSegmentProblem(seg) : undefined);
    if (problem !== undefined) return { ok: false, problem };
    segments.push({ kind: 'literal', text: normalizeLiteral(seg) });
  }
  const shape = '/' + segments.map((s) => (s.kind === 'literal' ? s.text : s.kind === 'param' ? '{}' : '{...}')).join('/');
  return { ok: true, value: { source, segments, shape } };
}

function decodeSegment(raw: string): Parsed<string> {
  if (!LITERAL_CHARS.test(raw)) return { ok: false, problem: `segment "${raw}" has characters that must be percent-encoded` };
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    return { ok: false, problem: `segment "${raw}" is not valid percent-encoded UTF-8` };
  }
  const problem = segmentValueProblem(decoded) ?? composedSegmentProblem(decoded);
  return problem === undefined ? { ok: true, value: decoded } : { ok: false, problem: `segment "${raw}" ${problem}` };
}

/** Matches an agent-supplied path against the declared patterns (first match wins) and rebuilds it canonically. */
export function matchPath(patterns: readonly PathPattern[], path: string): Parsed<{ path: string; pattern: PathPattern }> {
  const split = splitPath(path);
  if (!split.ok) return { ok: false, problem: `path ${split.problem}` };
  const trailing = split.value.length > 1 && split.value[split.value.length - 1] === '';
  const raw = trailing ? split.value.slice(0, -1) : split.value;
  const decoded: string[] = [];
  for (const r of raw) {
    if (r === '' && raw.length === 1) break; // the root path "/"
    const d = decodeSegment(r);
    if (!d.ok) return d;
    decoded.push(d.value);
  }
  for (const pattern of patterns) {
    const out = matchOne(pattern.segments, decoded, trailing);
    if (out !== undefined) return { ok: true, value: { path: out, pattern } };
  }
  return { ok: false, problem: `path ${path} matches none of the allowed patterns: ${patterns.map((p) => p.source).join(', ')}` };
}

function matchOne(segments: readonly PatternSegment[], decoded: readonly string[], trailing: boolean): string | undefined {
  const patTrailing = segments.length > 1 && segments[segments.length - 1]?.kind === 'literal' && (segments[segments.length - 1] as { text: string }).text === '';
  const segs = patTrailing ? segments.slice(0, -1) : segments;
  if (patTrailing !== trailing) return undefined;
  const rootOnly = segs.length === 1 && segs[0]?.kind === 'literal' && segs[0].text === '';
  if (rootOnly) return decoded.length === 0 ? '/' : undefined;
  const out: string[] = [];
  for (let i = 0; i < segs.length; i++) {
    const s = segs[i] as PatternSegment;
    if (s.kind === 'rest') {
      const rest = decoded.slice(i);
      if (rest.length === 0) return undefined;
      out.push(...rest.map(encodeComponent));
      return '/' + out.join('/') + (trailing ? '/' : '');
    }
    const d = decoded[i];
    if (d === undefined) return undefined;
    if (s.kind === 'literal') {
      if (decodeURIComponent(s.text) !== d) return undefined;
      out.push(s.text);
    } else out.push(encodeComponent(d));
  }
  if (decoded.length !== segs.length) return undefined;
  return '/' + out.join('/') + (trailing ? '/' : '');
}

/** What an agent value looks like once encoded: unreserved characters and %XX only. */
const ENCODED_VALUE = '(?:[A-Za-z0-9\\-._~]|%[0-9A-F]{2})+';
const ONLY_ENCODED = new RegExp(`^${ENCODED_VALUE}$`);
const LITERAL_PART = /^(?:[A-Za-z0-9\-._~]|%[0-9A-F]{2})*$/;

/** Can a single `{}` segment produce every path segment `seg` stands for? */
function anySegmentCovers(seg: string): boolean {
  if (seg === '' || seg === '{...}') return false;
  if (!seg.includes('{}')) return ONLY_ENCODED.test(seg);
  return seg.split('{}').every((part) => LITERAL_PART.test(part));
}

function segmentCovers(outer: string, inner: string): boolean {
  if (outer === inner) return true;
  if (outer === '{}') return anySegmentCovers(inner);
  if (!outer.includes('{}') || inner.includes('{}')) return false;
  const re = outer.split('{}').map((p) => p.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&')).join(ENCODED_VALUE);
  return new RegExp(`^${re}$`).test(inner);
}

/**
 * True when every path reachable through shape `inner` is reachable through
 * `outer`. Fail closed: a partial segment such as `v{}` covers only literal
 * segments it provably produces, never another template.
 */
export function pathShapeWithin(outer: string, inner: string): boolean {
  if (outer === inner) return true;
  const a = outer.split('/').slice(1);
  const b = inner.split('/').slice(1);
  for (let i = 0; i < a.length; i++) {
    const sa = a[i] as string;
    if (sa === '{...}' && i === a.length - 1) {
      const rest = b.slice(i);
      return rest.length > 0 && rest.every((s) => s === '{...}' || anySegmentCovers(s));
    }
    const sb = b[i];
    if (sb === undefined || !segmentCovers(sa, sb)) return false;
  }
  return a.length === b.length;
}
