/**
 * The argument constraints of a pre-approval rule (`arguments:` of a rule in
 * `preapprovals:`), checked against the schema of the call's normalized
 * arguments: each constrained argument is declared, `equal` / `one_of` values
 * are valid for it, `pattern` only on strings and compiled in the bounded
 * engine (bounded-pattern.ts), `max` only on numbers. Shared by tool rules
 * (build-preapprovals.ts) and gateway rules (gateway/gateway-rules.ts).
 */
import { z } from 'zod';
import { compileBoundedPattern } from '../schema/bounded-pattern.js';
import type { DocPath, IssueSink } from '../issues.js';
import { canonicalJson } from '../../rules/canonical.js';
import type { JsonValue } from '../schema/json.js';
import { findProperty, type SchemaNode } from '../schema/schema-node.js';
import { zodOf } from '../schema/schema-zod.js';
import type { ArgConstraint } from '../types.js';

export const ConstraintShape = z
  .strictObject({
    equal: z.unknown().optional(),
    one_of: z.array(z.unknown()).min(1).max(1000).optional(),
    pattern: z.string().max(512).optional(),
    max: z.number().optional(),
  })
  .refine((c) => Object.keys(c).length > 0, { error: 'needs at least one of equal, one_of, pattern, max' });

export type ConstraintsIn = z.infer<typeof ConstraintShape>;

function toJson(v: unknown): JsonValue {
  return JSON.parse(JSON.stringify(v)) as JsonValue;
}

/**
 * The constraints of one rule, each checked against the argument it names in
 * `input` (the call's normalized arguments): `owner` says whose arguments they
 * are in messages. Undefined when an argument is not declared (filed).
 */
export function buildConstraints(at: DocPath, raw: Record<string, ConstraintsIn>, input: SchemaNode, owner: string, sink: IssueSink): [string, ArgConstraint[]][] | undefined {
  const args: [string, ArgConstraint[]][] = [];
  let ok = true;
  for (const [arg, c] of Object.entries(raw)) {
    const p = [...at, 'arguments', arg];
    const prop = input.kind === 'object' ? findProperty(input, arg) : undefined;
    if (prop === undefined) {
      sink.add(p, `${owner} has no argument "${arg}"`);
      ok = false;
      continue;
    }
    args.push([arg, argConstraints(p, arg, c, prop.node, sink)]);
  }
  return ok ? args : undefined;
}

function argConstraints(p: DocPath, arg: string, c: ConstraintsIn, node: SchemaNode, sink: IssueSink): ArgConstraint[] {
  const valid = (v: unknown): boolean => zodOf(node).safeParse(v).success;
  const list: ArgConstraint[] = [];
  if ('equal' in c) {
    if (!valid(c.equal)) sink.add([...p, 'equal'], `${JSON.stringify(c.equal)} is not a valid value for "${arg}"`);
    else list.push({ kind: 'equal', value: toJson(c.equal) });
  }
  if (c.one_of !== undefined) {
    c.one_of.forEach((v, i) => {
      if (!valid(v)) sink.add([...p, 'one_of', i], `${JSON.stringify(v)} is not a valid value for "${arg}"`);
    });
    list.push({ kind: 'one_of', values: c.one_of.map(toJson) });
  }
  if (c.pattern !== undefined) {
    const kind = node.kind;
    const compiled = compileBoundedPattern(c.pattern);
    if (kind !== 'string' && kind !== 'enum') sink.add([...p, 'pattern'], `"${arg}" is not a string (its schema is ${kind})`);
    else if (!compiled.ok) sink.add([...p, 'pattern'], `the pattern is refused: ${compiled.problem}`);
    else list.push({ kind: 'pattern', pattern: compiled.pattern });
  }
  if (c.max !== undefined) {
    const kind = node.kind;
    if (kind !== 'number' && kind !== 'integer') sink.add([...p, 'max'], `max applies to numbers; "${arg}" is ${kind}`);
    else list.push({ kind: 'max', value: c.max });
  }
  return list;
}


const same = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);

/** Does the normalized argument value `v` satisfy `c`? */
export function constraintHolds(c: ArgConstraint, v: JsonValue): boolean {
  switch (c.kind) {
    case 'equal':
      return same(c.value, v);
    case 'one_of':
      return c.values.some((x) => same(x, v));
    case 'pattern':
      return typeof v === 'string' && c.pattern.matches(v);
    case 'max':
      return typeof v === 'number' && v <= c.value;
  }
}

