/**
 * Approvals when nobody is there (`postern daemon --unattended`): a call that
 * needs approval is decided at once by the accepted catalog's pre-approval
 * rules (src/contracts/authority/preapproval.ts), and everything else is unavailable —
 * never left waiting. This file owns the rules' budgets: how many calls each
 * rule has approved in this daemon run (in memory; a new run starts at zero).
 * Budgets here are the rules' own; general call limits are not this file's.
 *
 * Invariants: a call whose approval was raised because its revision widens
 * authority (a non-empty `widening`) is never pre-approved, whatever the rules
 * say; a rule covers a call only for its own tool, only when every
 * constraint holds, and only when the revision that runs stays within the
 * authority the rule was accepted for (preapproval.ts, ruleOutgrown); the
 * first covering rule with budget left is charged, one
 * unit, at the moment it approves (a call that then fails still used it); a
 * charge and its check happen together (no await between them), so concurrent
 * calls cannot overspend a budget.
 */
import { ruleCovers, ruleOutgrown, type Catalog, type JsonObject, type PreapprovalRule, type Revision } from '../contracts/index.js';

/** Why an unattended call could not be approved. */
export const UnavailableReasons = {
  widening: 'the revision that runs widens authority over the one the session planned against; widening revisions are never pre-approved',
  no_rule: 'no pre-approval rule in the accepted catalog covers this call',
  outgrown: 'the revision that runs reaches beyond the authority every covering pre-approval rule was accepted for; the operator must accept the rule for this revision (revision: in the rule) before it pre-approves it',
  budget_used: "the budget of every pre-approval rule that covers this call is used up for this daemon run",
} as const;
type UnavailableReason = keyof typeof UnavailableReasons;

type UnattendedDecision =
  | { readonly kind: 'preapproved'; readonly rule: string; readonly used: number; readonly budget: number }
  | { readonly kind: 'unavailable'; readonly reason: UnavailableReason; readonly rules: readonly string[] };

interface BudgetUse {
  readonly rule: string;
  readonly tool: string;
  readonly budget: number;
  readonly used: number;
  readonly left: number;
}

interface UnattendedRequest {
  readonly tool: string;
  /** The revision that runs. */
  readonly revision: Revision;
  readonly normalized: JsonObject;
  /** What widened, when that is why the call needs approval (approvals/policy.ts). */
  readonly widening: readonly string[];
}

export class RuleBudgets {
  readonly #used = new Map<string, number>();
  readonly #unavailable = new Map<UnavailableReason, number>();

  /** Decides and, when a rule approves, charges its budget. */
  decide(catalog: Catalog, req: UnattendedRequest): UnattendedDecision {
    if (req.widening.length > 0) return this.#refuse('widening', []);
    const covering: PreapprovalRule[] = [];
    for (const rule of catalog.preapprovals.values()) {
      if (rule.tool === req.tool && ruleCovers(rule, req.normalized).covered) covering.push(rule);
    }
    if (covering.length === 0) return this.#refuse('no_rule', []);
    const accepted = covering.filter((rule) => !ruleOutgrown(rule, catalog, req.revision).widens);
    if (accepted.length === 0) return this.#refuse('outgrown', covering.map((r) => r.name));
    for (const rule of accepted) {
      const used = this.#used.get(rule.name) ?? 0;
      if (used >= rule.budget) continue;
      this.#used.set(rule.name, used + 1);
      return { kind: 'preapproved', rule: rule.name, used: used + 1, budget: rule.budget };
    }
    return this.#refuse('budget_used', accepted.map((r) => r.name));
  }

  #refuse(reason: UnavailableReason, rules: string[]): UnattendedDecision {
    this.#unavailable.set(reason, (this.#unavailable.get(reason) ?? 0) + 1);
    return { kind: 'unavailable', reason, rules };
  }

  /** Calls each rule approved in this run, by rule name (rules no longer in the catalog included). */
  approvedByRule(): Record<string, number> {
    return Object.fromEntries([...this.#used].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }

  /** Calls refused as unavailable, by reason. */
  unavailableByReason(): Record<UnavailableReason, number> {
    return { widening: this.#unavailable.get('widening') ?? 0, no_rule: this.#unavailable.get('no_rule') ?? 0, outgrown: this.#unavailable.get('outgrown') ?? 0, budget_used: this.#unavailable.get('budget_used') ?? 0 };
  }

  /** Every rule of `catalog` with its budget and what this run used of it. */
  budgets(catalog: Catalog): BudgetUse[] {
    return [...catalog.preapprovals.values()].map((r) => {
      const used = this.#used.get(r.name) ?? 0;
      return { rule: r.name, tool: r.tool, budget: r.budget, used, left: Math.max(0, r.budget - used) };
    });
  }
}
