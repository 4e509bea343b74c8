/**
 * The output contract of one call: the revision it was planned against
 * (pinned, adapted or current) and the links from there to the revision that
 * ran. A result is carried back through the links' output adapters and
 * checked against the planned revision's output schema; a result that does
 * not fit is OUTPUT_CONTRACT_MISMATCH — the effect happened — naming the first
 * field that broke and what was expected. Pure: the caller passes the
 * already-redacted result.
 */
import { carryResultBack, resultIssues, type ContractDecision, type OutputHop, type Rejection, type Revision } from '../../../../contracts/index.js';
import { PosternError } from '../../../../rules/errors.js';

/**
 * The output contract a result is given under: the revision the call was
 * planned against (pinned, adapted or current) and the links from it to the
 * revision that ran, newest last.
 */
export interface OutputContract {
  readonly planned: Revision;
  readonly hops: readonly OutputHop[];
}

export function outputContractOf(decision: Exclude<ContractDecision, Rejection>): OutputContract {
  return decision.kind === 'current' ? { planned: decision.execute, hops: [] } : { planned: decision.seen, hops: decision.links };
}

/** The result broke the planned revision's output contract (the effect happened). */
export interface Mismatch {
  readonly field: string;
  readonly expected: string;
  readonly issues: readonly string[];
}


export type Checked = { readonly ok: true; readonly value: unknown; readonly adapted: readonly string[] } | { readonly ok: false; readonly mismatch: Mismatch; readonly adapted: readonly string[] };

const MAX_ISSUES = 5;
const under = (root: string, field: string): string => (field === '(result)' ? root : /^[[]/.test(field) ? `${root}${field}` : `${root}.${field}`);

/**
 * The value a consumer planned against `contract.planned` receives: the result
 * carried back through the links' output adapters, then validated against the
 * planned revision's output schema. A planned revision without an output
 * schema promised nothing: the value is passed on as it is.
 */
export function checkOutput(value: unknown, contract: OutputContract, root: string): Checked {
  const schema = contract.planned.output;
  if (schema === undefined) return { ok: true, value, adapted: [] };
  const carried = carryResultBack(contract.hops, value);
  if (!carried.ok) return { ok: false, mismatch: { field: under(root, carried.field), expected: carried.problem, issues: [] }, adapted: carried.applied };
  const issues = resultIssues(schema, carried.value, root);
  const first = issues[0];
  if (first === undefined) return { ok: true, value: carried.value, adapted: carried.applied };
  return { ok: false, mismatch: { field: first.field, expected: first.problem, issues: issues.slice(0, MAX_ISSUES).map((i) => `${i.field}: ${i.problem}`) }, adapted: carried.applied };
}

/** The distinct contract error: the effect happened, the result does not fit the plan. */
export function mismatchError(m: Mismatch, revision: Revision, contract: OutputContract, currentRevision: number | null, adapted: readonly string[]): PosternError {
  const planned = contract.planned.revision;
  const current = currentRevision === null ? '' : `; current revision is ${currentRevision}`;
  const via = planned === revision.revision ? '' : ` (revision ${revision.revision} ran)`;
  const message = `${revision.tool}: the action ran, but its result does not match the output schema of revision ${planned}, which this call was planned against${via}: ${m.field}: ${m.expected}${current}`;
  return new PosternError('OUTPUT_CONTRACT_MISMATCH', message, {
    sideEffectStarted: true,
    details: {
      field: m.field,
      expected: m.expected,
      planned_revision: planned,
      ...(m.issues.length > 1 ? { issues: m.issues } : {}),
      ...(adapted.length > 0 ? { output_adapter: adapted } : {}),
    },
  });
}
