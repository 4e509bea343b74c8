/**
 * Shadow (seed 004 phase 1): a pending catalog the operator started in shadow
 * plans every live call too — same planner, same inputs — and the two plans
 * are compared. Nothing is sent for the shadow plan, no approval is asked, no
 * key is reserved: planning is pure (plan.ts).
 *
 * Verdicts, the first that applies: `would_fail` (the candidate refuses the
 * call: its error code), `new_approval` (the authority the call would run
 * under differs, so a grant would not cover it), `other_request` (another
 * revision, arguments or resolved request: the call digest differs), `same`.
 */
import { authorityDigest } from '../../../../contracts/index.js';
import { isPosternError } from '../../../../rules/errors.js';
import type { ShadowRecord } from '../../../../journal/index.js';
import type { ShadowCandidate } from '../../context.js';
import type { CallPlan } from '../call-state.js';
import { planCall, type PlanInput } from './plan.js';

export function shadowVerdict(candidate: ShadowCandidate, input: PlanInput, live: CallPlan): ShadowRecord {
  let plan: CallPlan;
  try {
    plan = planCall(candidate.catalog, input);
  } catch (e) {
    return { digest: candidate.digest, verdict: 'would_fail', error_code: isPosternError(e) ? e.code : 'INTERNAL' };
  }
  if (authorityDigest(plan.authority) !== authorityDigest(live.authority)) return { digest: candidate.digest, verdict: 'new_approval' };
  if (plan.callDigest !== live.callDigest) return { digest: candidate.digest, verdict: 'other_request' };
  return { digest: candidate.digest, verdict: 'same' };
}
