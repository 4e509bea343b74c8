/**
 * Argument validation against a compiled schema, with field-level problems an
 * agent can repair ("region: is required", "tags[2]: must be at most 40
 * characters"). Raw input is first checked to be shallow enough that no
 * validator walks a hostile structure; the result is plain JSON (checked by
 * canonicalizing it) with defaults applied and no undefined values.
 */
import type { z } from 'zod';
import { canonicalJson } from '../../rules/canonical.js';
import type { JsonObject } from './json.js';
import type { CompiledSchema } from './schema-zod.js';

export interface FieldIssue {
  /** `branch`, `tags[2]`, or `(arguments)` for the whole object. */
  readonly field: string;
  readonly problem: string;
}

export type Validation = { readonly ok: true; readonly value: JsonObject } | { readonly ok: false; readonly issues: readonly FieldIssue[] };

const MAX_RAW_DEPTH = 64;

function fieldName(path: readonly PropertyKey[], root = ''): string {
  let out = root;
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : out === '' ? String(seg) : `.${String(seg)}`;
  return out === '' ? '(arguments)' : out;
}

function tooDeep(raw: unknown): boolean {
  const stack: [unknown, number][] = [[raw, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop() as [unknown, number];
    if (typeof v !== 'object' || v === null) continue;
    if (d >= MAX_RAW_DEPTH) return true;
    for (const x of Object.values(v)) stack.push([x, d + 1]);
  }
  return false;
}

function withoutUndefined(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutUndefined);
  if (typeof v === 'object' && v !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (x !== undefined) Object.defineProperty(out, k, { value: withoutUndefined(x), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return v;
}

/** One readable problem per zod issue. */
function issuesFromZod(error: z.ZodError, raw: unknown, root = ''): FieldIssue[] {
  const out: FieldIssue[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const k of issue.keys) out.push({ field: fieldName([...issue.path, k], root), problem: root === '' ? 'is not a field of this tool' : 'is not a declared field' });
      continue;
    }
    let at: unknown = raw;
    for (const seg of issue.path) at = typeof at === 'object' && at !== null ? (at as Record<PropertyKey, unknown>)[seg] : undefined;
    const missing = issue.path.length > 0 && at === undefined;
    out.push({ field: fieldName(issue.path, root), problem: missing ? 'is required' : issue.message });
  }
  return out;
}

/** Field-level problems of a result against a declared output schema, named from `root` (`body`, `stdout_json`); empty when it matches. */
export function resultIssues(schema: CompiledSchema, value: unknown, root: string): FieldIssue[] {
  const parsed = schema.zod.safeParse(value);
  return parsed.success ? [] : issuesFromZod(parsed.error, value, root);
}

export function validateArguments(schema: CompiledSchema, raw: unknown): Validation {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return { ok: false, issues: [{ field: '(arguments)', problem: 'must be a JSON object' }] };
  }
  if (tooDeep(raw)) return { ok: false, issues: [{ field: '(arguments)', problem: `is nested deeper than ${MAX_RAW_DEPTH} levels` }] };
  const parsed = schema.zod.safeParse(raw);
  if (!parsed.success) return { ok: false, issues: issuesFromZod(parsed.error, raw) };
  const value = withoutUndefined(parsed.data) as JsonObject;
  try {
    canonicalJson(value); // what passed must also be digestible: plain JSON, no lone surrogates
  } catch (e) {
    return { ok: false, issues: [{ field: '(arguments)', problem: e instanceof Error ? e.message : 'is not plain JSON' }] };
  }
  return { ok: true, value };
}

export function describeIssues(issues: readonly FieldIssue[]): string {
  return issues.map((i) => `${i.field}: ${i.problem}`).join('; ');
}
