/**
 * Builds `preapprovals:` of catalog.yaml into `PreapprovalRule`s, every
 * problem filed at its document path (what a rule means, covers and widens is
 * authority/preapproval.ts).
 *
 * Invariants: a rule is checked against its tool's current input schema — the
 * tool exists, each constrained argument is declared, `equal` / `one_of`
 * values are valid for it, `max` only on numbers — and its patterns compile in
 * the bounded engine (bounded-pattern.ts: whole-value, linear time); it is
 * bound to a revision the tool has.
 */
import { z } from 'zod';
import { compileBoundedPattern } from '../schema/bounded-pattern.js';
import { NAME, TOOL_NAME } from './catalog-shape.js';
import type { DocPath, IssueSink } from '../issues.js';
import type { JsonValue } from '../schema/json.js';
import { findProperty } from '../schema/schema-node.js';
import { zodOf } from '../schema/schema-zod.js';
import { checkShape } from './shape-check.js';
import type { ArgConstraint, PreapprovalRule, Tool } from '../types.js';

export const MAX_RULE_BUDGET = 1_000_000;

const ConstraintShape = z
  .strictObject({
    equal: z.unknown().optional(),
    one_of: z.array(z.unknown()).min(1).max(1000).optional(),
    pattern: z.string().max(512).optional(),
    max: z.number().optional(),
  })
  .refine((c) => Object.keys(c).length > 0, { error: 'needs at least one of equal, one_of, pattern, max' });

export const RuleShape = z.strictObject({
  tool: z.string().regex(TOOL_NAME, 'must be a tool name'),
  arguments: z.record(z.string().min(1).max(128), ConstraintShape).optional(),
  budget: z.int().min(1).max(MAX_RULE_BUDGET),
  revision: z.int().min(1).optional(),
});

function toJson(v: unknown): JsonValue {
  return JSON.parse(JSON.stringify(v)) as JsonValue;
}

function buildRule(name: string, raw: unknown, sink: IssueSink, tools: ReadonlyMap<string, Tool>, declared: ReadonlySet<string>): PreapprovalRule | undefined {
  const at: DocPath = ['preapprovals', name];
  if (!NAME.test(name)) sink.add(at, 'rule names are lowercase letters, digits, ".", "_" or "-", at most 64');
  const shape = checkShape(RuleShape, raw, at, sink);
  if (shape === undefined) return undefined;
  const tool = tools.get(shape.tool);
  if (tool === undefined) {
    // A tool that is in the file but has problems of its own is reported there, not here.
    if (!declared.has(shape.tool)) sink.add([...at, 'tool'], `names tool "${shape.tool}", which is not in the catalog`);
    return undefined;
  }
  const bound = shape.revision ?? (tool.revisions[0] ?? tool.current).revision;
  if (!tool.revisions.some((r) => r.revision === bound)) {
    sink.add([...at, 'revision'], `tool ${tool.name} has no revision ${bound} (revisions ${tool.revisions.map((r) => r.revision).join(', ')})`);
    return undefined;
  }
  const input = tool.current.input.node;
  const args: [string, ArgConstraint[]][] = [];
  let ok = true;
  for (const [arg, c] of Object.entries(shape.arguments ?? {})) {
    const p = [...at, 'arguments', arg];
    const prop = input.kind === 'object' ? findProperty(input, arg) : undefined;
    if (prop === undefined) {
      sink.add(p, `tool ${tool.name} (revision ${tool.current.revision}) has no argument "${arg}"`);
      ok = false;
      continue;
    }
    const valid = (v: unknown): boolean => zodOf(prop.node).safeParse(v).success;
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
      const kind = prop.node.kind;
      const compiled = compileBoundedPattern(c.pattern);
      if (kind !== 'string' && kind !== 'enum') sink.add([...p, 'pattern'], `"${arg}" is not a string (its schema is ${kind})`);
      else if (!compiled.ok) sink.add([...p, 'pattern'], `the pattern is refused: ${compiled.problem}`);
      else list.push({ kind: 'pattern', pattern: compiled.pattern });
    }
    if (c.max !== undefined) {
      const kind = prop.node.kind;
      if (kind !== 'number' && kind !== 'integer') sink.add([...p, 'max'], `max applies to numbers; "${arg}" is ${kind}`);
      else list.push({ kind: 'max', value: c.max });
    }
    args.push([arg, list]);
  }
  if (!ok) return undefined;
  return { name, tool: tool.name, revision: bound, arguments: args, budget: shape.budget };
}

/** Builds `preapprovals:`; rules that do not check out are filed as issues (the catalog is then invalid). */
export function buildPreapprovals(raw: Record<string, unknown> | undefined, sink: IssueSink, tools: ReadonlyMap<string, Tool>, declared: ReadonlySet<string> = new Set(tools.keys())): Map<string, PreapprovalRule> {
  const rules = new Map<string, PreapprovalRule>();
  for (const [name, value] of Object.entries(raw ?? {})) {
    const r = buildRule(name, value, sink, tools, declared);
    if (r !== undefined) rules.set(name, r);
  }
  return rules;
}
