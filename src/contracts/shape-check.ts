/**
 * Runs a zod shape over one part of the catalog document and files every
 * problem as a catalog issue at its full document path, in words an operator
 * understands ("is required", "unknown field"), so callers never see raw zod
 * output.
 */
import type { z } from 'zod';
import type { DocPath, IssueSink } from './issues.js';

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let at = root;
  for (const seg of path) at = typeof at === 'object' && at !== null ? (at as Record<PropertyKey, unknown>)[seg] : undefined;
  return at;
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
      for (const k of issue.keys) sink.add([...at, ...sub, k], 'unknown field');
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
