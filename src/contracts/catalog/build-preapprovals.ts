/**
 * Builds `preapprovals:` of catalog.yaml into `PreapprovalRule`s, every
 * problem filed at its document path (what a rule means, covers and widens is
 * authority/preapproval.ts).
 *
 * Invariants: a rule is checked against its tool's current input schema — the
 * tool exists, each constrained argument is declared, `equal` / `one_of`
 * values are valid for it, `max` only on numbers — and its patterns compile in
 * the bounded engine (bounded-pattern.ts: whole-value, linear time); it is
 * bound to a revision the tool has. A rule names either a tool (`tool:`) or
 * SSH gateway calls (`gateway:` and `action:`, built by
 * gateway/gateway-rules.ts); the constraint checks are shared
 * (authority/rule-constraints.ts).
 */
import { z } from 'zod';
import { NAME, TOOL_NAME } from './catalog-shape.js';
import type { DocPath, IssueSink } from '../issues.js';
import { buildGatewayRule } from '../gateway/gateway-rules.js';
import { GATEWAY_ACTIONS } from '../gateway/gateway-tool.js';
import { buildConstraints, ConstraintShape } from '../authority/rule-constraints.js';
import { checkShape } from './shape-check.js';
import type { PreapprovalRule, Target, Tool } from '../types.js';

export const MAX_RULE_BUDGET = 1_000_000;

const RuleShape = z.strictObject({
  tool: z.string().regex(TOOL_NAME, 'must be a tool name').optional(),
  gateway: z.string().regex(NAME, 'must be an SSH target name').optional(),
  action: z.enum(GATEWAY_ACTIONS, { error: `must be one of ${GATEWAY_ACTIONS.join(', ')}` }).optional(),
  arguments: z.record(z.string().min(1).max(128), ConstraintShape).optional(),
  budget: z.int().min(1).max(MAX_RULE_BUDGET),
  revision: z.int().min(1).optional(),
});

type RuleShapeOut = z.infer<typeof RuleShape>;

function buildToolRule(name: string, at: DocPath, shape: RuleShapeOut & { tool: string }, sink: IssueSink, tools: ReadonlyMap<string, Tool>, declared: ReadonlySet<string>): PreapprovalRule | undefined {
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
  const args = buildConstraints(at, shape.arguments ?? {}, tool.current.input.node, `tool ${tool.name} (revision ${tool.current.revision})`, sink);
  if (args === undefined) return undefined;
  return { name, tool: tool.name, revision: bound, arguments: args, budget: shape.budget };
}

/** What one rule is built against: the catalog's tools and targets, and the names the file declares (those with problems of their own are reported there). */
interface RuleContext {
  readonly tools: ReadonlyMap<string, Tool>;
  readonly targets: ReadonlyMap<string, Target>;
  readonly declaredTools: ReadonlySet<string>;
  readonly declaredTargets: ReadonlySet<string>;
}

function buildRule(name: string, raw: unknown, sink: IssueSink, ctx: RuleContext): PreapprovalRule | undefined {
  const at: DocPath = ['preapprovals', name];
  if (!NAME.test(name)) sink.add(at, 'rule names are lowercase letters, digits, ".", "_" or "-", at most 64');
  const shape = checkShape(RuleShape, raw, at, sink);
  if (shape === undefined) return undefined;
  if (shape.tool !== undefined) {
    for (const k of ['gateway', 'action'] as const) if (shape[k] !== undefined) sink.add([...at, k], 'a rule names either a tool (tool:) or a gateway call (gateway: and action:), not both');
    return buildToolRule(name, at, { ...shape, tool: shape.tool }, sink, ctx.tools, ctx.declaredTools);
  }
  if (shape.gateway === undefined || shape.action === undefined) {
    sink.add(at, 'a rule names a tool (tool:) or a gateway call (gateway: <ssh target> and action: git-push, git-fetch or exec)');
    return undefined;
  }
  return buildGatewayRule(name, at, { ...shape, gateway: shape.gateway, action: shape.action }, sink, ctx);
}

/** Builds `preapprovals:`; rules that do not check out are filed as issues (the catalog is then invalid). */
export function buildPreapprovals(raw: Record<string, unknown> | undefined, sink: IssueSink, ctx: RuleContext): Map<string, PreapprovalRule> {
  const rules = new Map<string, PreapprovalRule>();
  for (const [name, value] of Object.entries(raw ?? {})) {
    const r = buildRule(name, value, sink, ctx);
    if (r !== undefined) rules.set(name, r);
  }
  return rules;
}
