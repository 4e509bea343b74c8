/**
 * Pre-approval rules (`preapprovals:` in catalog.yaml): what an unattended
 * daemon may approve without a person. A rule names one tool (or one kind of
 * SSH gateway call, whose binding is gateway-binding.ts), constraints on
 * the call's normalized top-level arguments, and a budget (calls per daemon
 * run). Pure: deciding whether a rule covers a call, and whether a changed
 * rule stays within the old one (the catalog diff reports a new or loosened
 * rule as a widening). Building the rules from the parsed document is
 * catalog/build-preapprovals.ts; counting the budget is the daemon's
 * (src/approvals/unattended.ts).
 *
 * Invariants: a call is covered only when every constraint holds; an absent
 * argument never satisfies a constraint. `ruleWithin` fails closed: "within"
 * only when every call the new rule covers is provably covered by the old one.
 *
 * A rule is bound to the authority it was accepted for: that of its tool's
 * revision `revision:` (the tool's first revision when the rule names none).
 * A call of a revision whose authority reaches beyond it is not covered
 * (`ruleOutgrown`, fail closed through widensAuthority), so accepting a
 * revision that widens a tool never widens what runs unattended: the operator
 * re-accepts the rule for that revision by naming it, a change the catalog
 * diff reports as a widening of the rule.
 */
import { canonicalJson } from '../../rules/canonical.js';
import { authorityOf, widensAuthority, type Widening } from './authority.js';
import type { JsonObject, JsonValue } from '../schema/json.js';
import { constraintHolds } from './rule-constraints.js';
import { describeGatewayCalls, gatewayRuleOutgrown, gatewayRuleRebinding } from './gateway-binding.js';
import type { ArgConstraint, Catalog, PreapprovalRule, Revision, Tool } from '../types.js';

export type { ArgConstraint, PreapprovalRule };


export type RuleVerdict = { readonly covered: true } | { readonly covered: false; readonly reason: string };

/** Does `rule` cover a call of its tool with these normalized arguments (budget aside)? */
export function ruleCovers(rule: PreapprovalRule, normalized: JsonObject): RuleVerdict {
  for (const [arg, constraints] of rule.arguments) {
    if (!Object.hasOwn(normalized, arg)) return { covered: false, reason: `argument ${arg} is absent` };
    const v = normalized[arg] as JsonValue;
    for (const c of constraints) if (!constraintHolds(c, v)) return { covered: false, reason: `argument ${arg} does not satisfy ${c.kind}` };
  }
  return { covered: true };
}

/** Every value `inner` admits is admitted by `outer` (fail closed: unsure → false). */
function constraintWithin(outer: ArgConstraint, inner: readonly ArgConstraint[]): boolean {
  // A finite set of admitted values (equal / one_of) is within when each value passes outer.
  for (const c of inner) {
    if (c.kind === 'equal' && constraintHolds(outer, c.value)) return true;
    if (c.kind === 'one_of' && c.values.every((v) => constraintHolds(outer, v))) return true;
  }
  switch (outer.kind) {
    case 'pattern':
      return inner.some((c) => c.kind === 'pattern' && c.pattern.source === outer.pattern.source);
    case 'max':
      return inner.some((c) => c.kind === 'max' && c.value <= outer.value);
    case 'equal':
    case 'one_of':
      return false;
  }
}

function describeConstraint(c: ArgConstraint): string {
  switch (c.kind) {
    case 'equal':
      return `equal ${canonicalJson(c.value)}`;
    case 'one_of':
      return `one_of ${canonicalJson(c.values)}`;
    case 'pattern':
      return `pattern ${JSON.stringify(c.pattern.source)}`;
    case 'max':
      return `max ${c.value}`;
  }
}

/** One line: `tool create_note, budget 5, title pattern "ci-[0-9]+"`; equal rules describe equally. */
export function describeRule(r: PreapprovalRule): string {
  const args = [...r.arguments].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).flatMap(([arg, cs]) => cs.map((c) => `${arg} ${describeConstraint(c)}`));
  return [r.gateway === undefined ? `tool ${r.tool}` : describeGatewayCalls(r.gateway), `budget ${r.budget}`, ...(args.length === 0 ? ['any arguments'] : args)].join(', ');
}

/** Why the new rule covers more than the old one; empty when it provably does not. */
export function ruleLoosening(old: PreapprovalRule, next: PreapprovalRule): string[] {
  const out: string[] = [];
  if (old.tool !== next.tool) out.push(`tool ${old.tool} → ${next.tool}`);
  if (next.budget > old.budget) out.push(`budget ${old.budget} → ${next.budget}`);
  const nextArgs = new Map(next.arguments);
  for (const [arg, constraints] of old.arguments) {
    const inner = nextArgs.get(arg) ?? [];
    for (const c of constraints) if (!constraintWithin(c, inner)) out.push(`argument ${arg}: ${c.kind} ${inner.length === 0 ? 'removed' : 'relaxed or changed'}`);
  }
  return out;
}

/** The revision the rule was accepted for, in `catalog` (undefined when the tool or the revision is gone). */
function boundRevision(rule: PreapprovalRule, catalog: Catalog): { readonly tool: Tool; readonly revision: Revision } | undefined {
  const tool = catalog.tools.get(rule.tool);
  const revision = tool?.revisions.find((r) => r.revision === rule.revision);
  return tool === undefined || revision === undefined ? undefined : { tool, revision };
}

/**
 * Does revision `revision` of the rule's tool reach beyond the authority the
 * rule was accepted for? Fails closed: a tool or bound revision that is not
 * in `catalog` counts as beyond.
 */
export function ruleOutgrown(rule: PreapprovalRule, catalog: Catalog, revision: Revision): Widening {
  if (rule.gateway !== undefined) return gatewayRuleOutgrown(rule.gateway, catalog);
  const bound = boundRevision(rule, catalog);
  if (bound === undefined) return { widens: true, reasons: [`${rule.tool} r${rule.revision} is not in the catalog`] };
  if (bound.revision === revision) return { widens: false };
  return widensAuthority(authorityOf(bound.tool, bound.revision), authorityOf(bound.tool, revision));
}

/** Why the rule, as accepted in `candidate`, reaches beyond the rule as accepted in `old` (its bound revision's authority); empty when it does not. */
export function ruleRebinding(old: Catalog, oldRule: PreapprovalRule, candidate: Catalog, rule: PreapprovalRule): string[] {
  // A rule that now names other calls is reported by ruleLoosening (its tool changed).
  if (rule.gateway !== undefined || oldRule.gateway !== undefined) return rule.gateway !== undefined && oldRule.gateway !== undefined ? gatewayRuleRebinding(oldRule.gateway, rule.gateway) : [];
  const before = boundRevision(oldRule, old);
  const after = boundRevision(rule, candidate);
  if (after === undefined) return [];
  if (before === undefined) return [`now accepted for ${rule.tool} r${rule.revision}`];
  const w = widensAuthority(authorityOf(before.tool, before.revision), authorityOf(after.tool, after.revision));
  return w.widens ? [`accepted for ${rule.tool} r${rule.revision} instead of r${oldRule.revision}: ${w.reasons.join(', ')}`] : [];
}
