/**
 * The release gate: may this candidate catalog replace the old one without
 * surprising a session that planned against the old one? It fails when a
 * breaking, behaviour-changing or widening change has no `previous` policy (or
 * one that cannot cover it), when a semantic change keeps the tool's name,
 * when a published revision was edited or removed without being retired, when
 * a revision still served is routed to results it cannot read (no safe output
 * path: unchanged, additive, or a proved output adapter), and when a journaled
 * call that was valid would now fail (the seeds' historical log test). Pure: the caller supplies both catalogs and the journal records.
 */
import type { Change } from '../change-vocabulary.js';
import { classifyCatalogChange } from './classify-catalog.js';
import { prepareCall, resolveContract } from '../calls/contract.js';
import { resolveAction } from '../calls/resolve-action.js';
import { splitIdempotencyKey } from '../calls/advertise.js';
import { RESERVED_PREFIX } from '../catalog/build-tools.js';
import type { Catalog, Revision } from '../types.js';
import { describeIssues, type FieldIssue } from '../schema/validate.js';

export const GateRules = {
  breaking_without_policy: 'a breaking change needs a previous policy: pin, adapt (if it can carry every old call) or reject',
  adapter_incomplete: 'the adapt policy does not carry every old call over to the new revision',
  output_breaking_with_adapt: 'old consumers routed to the new revision would get results they cannot read: declare an output adapter (previous.output), or use pin or reject',
  output_adapter_incomplete: 'the output adapter does not carry every result of the new revision into the shape of the old one',
  behavior_change_without_policy: 'old calls would silently run a different action: declare a previous policy',
  widening_without_policy: 'a revision that widens authority needs a previous policy',
  semantic_change_keeps_name: 'a change of meaning needs a new tool name: add a new tool and retire this one with retired: { replacement }',
  tool_removed_without_retiring: 'retire a tool (retired: { replacement }) and let sessions drain before removing it',
  revision_removed_without_retiring: 'retire a revision before removing it',
  revision_edited_in_place: 'a published revision cannot change: add a new revision instead',
  history_rewritten: 'new revisions must come after the last published one',
  widened_in_place: 'a published revision cannot gain authority (check edited targets): add a new revision',
  effect_raised_in_place: "raising a tool's effect needs a new revision",
  historical_call_fails: 'a journaled call that was valid would now fail',
} as const;
export type GateRule = keyof typeof GateRules;

export interface GateFailure {
  readonly rule: GateRule;
  readonly tool: string;
  readonly from: number | undefined;
  readonly to: number | undefined;
  readonly reasons: readonly string[];
  readonly message: string;
}

export interface HistoryRecord {
  readonly tool: string;
  /** The revision the call was planned against; absent = the old catalog's current one. */
  readonly revision?: number | undefined;
  readonly raw_arguments: unknown;
  /** The code the call was refused with when it was made, if it was. */
  readonly error_code?: string | null | undefined;
}

/** Why a journaled call is not revalidated: it was never a valid call, so its failing now is no regression. */
export const HistoricalSkips = {
  never_valid: 'refused as invalid when it was made (invalid arguments, unknown tool, missing idempotency_key, a secret in the arguments, too large)',
  built_in: "a call of Postern's built-in tools, which no catalog defines",
  invalid_key: 'its idempotency_key was malformed (the pipeline refuses such a call before validation)',
  invalid_before: 'it does not validate under the accepted catalog either',
} as const;
export type HistoricalSkip = keyof typeof HistoricalSkips;
const NEVER_VALID: ReadonlySet<string> = new Set(['VALIDATION_FAILED', 'TOOL_NOT_FOUND', 'IDEMPOTENCY_KEY_REQUIRED', 'SECRET_IN_ARGUMENTS', 'REQUEST_TOO_LARGE']);

export interface HistoricalFailure {
  readonly index: number;
  readonly tool: string;
  readonly revision: number | undefined;
  readonly problem: string;
  readonly issues: readonly FieldIssue[];
}

export interface GateReport {
  readonly ok: boolean;
  readonly changes: readonly Change[];
  readonly failures: readonly GateFailure[];
  readonly historical: {
    readonly checked: number;
    readonly passed: number;
    readonly rejectedByPolicy: number;
    /** The sum of `skipped`. */
    readonly skippedInvalid: number;
    readonly skipped: Readonly<Record<HistoricalSkip, number>>;
  };
  readonly historicalFailures: readonly HistoricalFailure[];
}

/** The gate rule a change breaks, if any. */
export function gateRuleFor(c: Change): GateRule | undefined {
  const codes = new Set(c.reasons.map((r) => r.code));
  const link = c.policy !== undefined;
  switch (c.class) {
    case 'breaking':
      if (codes.has('revision_edited_in_place')) return 'revision_edited_in_place';
      if (codes.has('history_rewritten')) return 'history_rewritten';
      if (!link || c.policy === 'none') return 'breaking_without_policy';
      if (c.policy !== 'adapt' && c.policy !== 'migrate') return undefined;
      if (c.aspect !== 'output') return 'adapter_incomplete';
      return codes.has('output_adapter') ? 'output_adapter_incomplete' : 'output_breaking_with_adapt';
    case 'behavior_change':
      return c.policy === 'none' ? 'behavior_change_without_policy' : undefined;
    case 'authority_widening':
      // An addition, or a raised limit, widens the agent's reach but breaks no session: shown, never gated.
      if (codes.has('tool_added') || codes.has('target_added') || codes.has('limit_raised')) return undefined;
      // So does a new or loosened pre-approval rule: shown as a widening for the operator who accepts it.
      if (codes.has('rule_added') || codes.has('rule_loosened')) return undefined;
      if (codes.has('widened_in_place')) return 'widened_in_place';
      if (codes.has('effect_raised_in_place')) return 'effect_raised_in_place';
      return c.policy === 'none' || !link ? 'widening_without_policy' : undefined;
    case 'semantic_change':
      return 'semantic_change_keeps_name';
    case 'removal':
      if (codes.has('tool_removed')) return 'tool_removed_without_retiring';
      if (codes.has('revision_removed')) return 'revision_removed_without_retiring';
      return undefined;
    case 'additive':
    case 'bounded_migration':
    case 'metadata':
      return undefined;
  }
}

function failureOf(c: Change, rule: GateRule): GateFailure {
  const link = c.from !== undefined && c.to !== undefined && c.from !== c.to ? ` r${c.from} → r${c.to}` : '';
  return {
    rule,
    tool: c.tool,
    from: c.from,
    to: c.to,
    reasons: c.reasons.map((r) => r.text),
    message: `${c.tool}${link}: ${GateRules[rule]}`,
  };
}

function checkHistory(old: Catalog | undefined, candidate: Catalog, history: Iterable<HistoryRecord>) {
  let checked = 0, passed = 0, rejectedByPolicy = 0;
  const skipped: Record<HistoricalSkip, number> = { never_valid: 0, built_in: 0, invalid_key: 0, invalid_before: 0 };
  const failures: HistoricalFailure[] = [];
  let index = -1;
  for (const rec of history) {
    index++;
    checked++;
    const oldTool = old?.tools.get(rec.tool);
    const tool = candidate.tools.get(rec.tool);
    const seen = rec.revision ?? oldTool?.current.revision ?? tool?.current.revision;
    const fail = (problem: string, issues: readonly FieldIssue[] = []): void => {
      failures.push({ index, tool: rec.tool, revision: seen, problem, issues });
    };
    if (rec.error_code !== undefined && rec.error_code !== null && NEVER_VALID.has(rec.error_code)) {
      skipped.never_valid++;
      continue;
    }
    if (rec.tool.toLowerCase().startsWith(RESERVED_PREFIX)) {
      skipped.built_in++;
      continue;
    }
    // What the pipeline validates: the arguments without the reserved idempotency_key (split exactly as a call is).
    const split = splitIdempotencyKey(rec.raw_arguments);
    if (split.kind === 'invalid_key') {
      skipped.invalid_key++;
      continue;
    }
    const args = split.args;
    if (oldTool !== undefined && prepareCall(resolveContract(oldTool, seen), args).kind !== 'ready') {
      skipped.invalid_before++; // it did not pass under the old catalog either: not a regression
      continue;
    }
    if (tool === undefined) {
      if (oldTool?.current.retired !== undefined) rejectedByPolicy++;
      else fail(`tool ${rec.tool} is not in the candidate catalog`);
      continue;
    }
    const decision = resolveContract(tool, seen);
    if (decision.kind === 'reject') {
      if (decision.reason === 'unknown_revision') fail(decision.message);
      else rejectedByPolicy++;
      continue;
    }
    const prepared = prepareCall(decision, args);
    if (prepared.kind === 'invalid') {
      fail(`invalid for revision ${prepared.revision}: ${describeIssues(prepared.issues)}`, prepared.issues);
      continue;
    }
    if (prepared.kind === 'reject') {
      rejectedByPolicy++;
      continue;
    }
    const action = resolveAction(prepared.revision, prepared.normalized, { idempotencyKey: split.key });
    if (action.kind === 'refused') fail(`refused by revision ${prepared.revision.revision}: ${action.field}: ${action.problem}`, [{ field: action.field, problem: action.problem }]);
    else passed++;
  }
  const skippedInvalid = Object.values(skipped).reduce((a, b) => a + b, 0);
  return { summary: { checked, passed, rejectedByPolicy, skippedInvalid, skipped }, failures };
}

/**
 * The links `tool:from→to` that some still-served revision's calls cross (by
 * the policies alone: a pin or reject stops the route). A result breaking old
 * readers only matters on such a link: a revision that is retired, or whose
 * calls are pinned or rejected before, never receives the newer results.
 */
function servedOutputLinks(catalog: Catalog): Set<string> {
  const out = new Set<string>();
  for (const tool of catalog.tools.values()) {
    if (tool.current.retired !== undefined) continue;
    tool.revisions.forEach((start, i) => {
      if (start.retired !== undefined) return;
      for (let k = i + 1; k < tool.revisions.length; k++) {
        const to = tool.revisions[k] as Revision;
        if (to.previous?.policy === 'pin' || to.previous?.policy === 'reject') break;
        out.add(`${tool.name}:${(tool.revisions[k - 1] as Revision).revision}→${to.revision}`);
      }
    });
  }
  return out;
}

export function releaseGate(old: Catalog | undefined, candidate: Catalog, history?: Iterable<HistoryRecord>): GateReport {
  const changes = classifyCatalogChange(old, candidate);
  const failures: GateFailure[] = [];
  const served = servedOutputLinks(candidate);
  for (const c of changes) {
    const rule = gateRuleFor(c);
    if (rule === undefined) continue;
    if (c.aspect === 'output' && !served.has(`${c.tool}:${c.from}→${c.to}`)) continue; // no served plan receives these results
    failures.push(failureOf(c, rule));
  }
  const h = checkHistory(old, candidate, history ?? []);
  for (const f of h.failures.slice(0, 1)) {
    failures.push({ rule: 'historical_call_fails', tool: f.tool, from: f.revision, to: undefined, reasons: [f.problem], message: `${h.failures.length} journaled call(s) would now fail (first: ${f.tool} #${f.index})` });
  }
  return { ok: failures.length === 0, changes, failures, historical: h.summary, historicalFailures: h.failures };
}
