/**
 * Runs a zod shape over one part of the catalog document and files every
 * problem as a catalog issue at its full document path, in words an operator
 * understands ("is required", "unknown field"), so callers never see raw zod
 * output.
 */
import type { z } from 'zod';
import { didYouMean } from '../../rules/suggest.js';
import type { DocPath, IssueSink } from '../issues.js';

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let at = root;
  for (const seg of path) at = typeof at === 'object' && at !== null ? (at as Record<PropertyKey, unknown>)[seg] : undefined;
  return at;
}

type Def = { type?: string; shape?: Record<string, unknown>; innerType?: unknown; element?: unknown; valueType?: unknown; in?: unknown; options?: unknown[] };
const defOf = (s: unknown): Def | undefined => (s as { _zod?: { def?: Def } } | undefined)?._zod?.def;

/** The field names an object schema knows at `path` (best effort: wrappers, arrays, records and unions are followed). */
function knownKeysAt(schema: unknown, path: readonly PropertyKey[]): string[] {
  let at: unknown[] = [schema];
  const unwrap = (s: unknown): unknown[] => {
    const d = defOf(s);
    if (d === undefined) return [];
    if (d.innerType !== undefined) return unwrap(d.innerType);
    if (d.type === 'pipe' && d.in !== undefined) return unwrap(d.in);
    if (d.type === 'union' && Array.isArray(d.options)) return d.options.flatMap(unwrap);
    return [s];
  };
  for (const seg of path) {
    at = at.flatMap(unwrap).flatMap((s) => {
      const d = defOf(s)!;
      if (d.type === 'object' && typeof seg === 'string' && d.shape !== undefined) return d.shape[seg] === undefined ? [] : [d.shape[seg]];
      if (d.type === 'array') return [d.element];
      if (d.type === 'record') return [d.valueType];
      return [];
    });
  }
  return at.flatMap(unwrap).flatMap((s) => Object.keys(defOf(s)?.shape ?? {}));
}

function toDocPath(path: readonly PropertyKey[]): (string | number)[] {
  return path.map((p) => (typeof p === 'number' ? p : String(p)));
}

/** The parsed value, or undefined when the shape did not match (issues filed). */
export function checkShape<S extends z.ZodType>(schema: S, value: unknown, at: DocPath, sink: IssueSink): z.output<S> | undefined {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  for (const issue of r.error.issues) {
    const sub = toDocPath(issue.path);
    if (issue.code === 'unrecognized_keys') {
      const known = knownKeysAt(schema, issue.path);
      for (const k of issue.keys) sink.add([...at, ...sub, k], `unknown field${didYouMean(k, known)}`);
      continue;
    }
    const missing = valueAt(value, issue.path) === undefined;
    const message = missing ? 'is required' : issue.message.replace(/^Invalid input: /, '');
    sink.add([...at, ...sub], message);
  }
  return undefined;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
