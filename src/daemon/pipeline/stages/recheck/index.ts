/**
 * The one re-check: after any await, the call runs only if the catalog in
 * use now plans it the same way (replan.ts compares the plans). Nothing
 * to do while the catalog the plan was made against is still in use.
 *
 * `recheckNow` answers for the approval stage, which asks again for a
 * migrated plan; `stillSame` is the check the later stages make (before the
 * charge, after the intent's commit): there a migrated plan is as stale as
 * any other change, since nobody approved it.
 */
import type { Catalog } from '../../../../contracts/index.js';
import { PosternError } from '../../../../rules/errors.js';
import { recheckPlan, type Recheck } from './replan.js';
import type { Services } from '../../context.js';
import { need, type CallState } from '../call-state.js';
import { next, refuse, type Step } from '../step.js';

type Rechecked = { readonly changed: false } | { readonly changed: true; readonly catalog: Catalog; readonly result: Recheck };

/** The plan against the catalog in use now, if another one is in use than the plan was made against. */
export function recheckNow(call: CallState): Rechecked {
  const svc: Pick<Services, 'state'> = call.svc;
  const inUse = svc.state.snapshot().catalog;
  if (inUse === need(call, 'planCatalog')) return { changed: false };
  const plan = need(call, 'plan');
  const { callArgs, key } = need(call, 'admitted');
  call.trail.currentRevision = inUse.tools.get(plan.tool.name)?.current.revision ?? null;
  return { changed: true, catalog: inUse, result: recheckPlan(plan, inUse, callArgs, key) };
}

/** A stage: the call goes on only if nothing in the catalog in use changed its plan. */
export function stillSame(call: CallState): Step {
  const r = recheckNow(call);
  if (!r.changed) return next(call);
  if (r.result.kind === 'same') return next({ ...call, planCatalog: r.catalog });
  call.trail.step('recheck:stale');
  // Refused before the executor (after the intent too): nothing ran under any revision.
  call.trail.notExecuted();
  const tool = need(call, 'plan').tool.name;
  return refuse(r.result.kind === 'stale' ? r.result.error : new PosternError('CONTRACT_STALE', `${tool}: the accepted catalog changed just before the call ran; nothing was run. List the tools again and plan the call anew`));
}
