/**
 * The catalog's limits, twice. Before the approval: a call over a limit
 * never reaches the queue (the check counts nothing; the usage it saw is on
 * the card and in the decision path). After the last re-check: the call is
 * charged, synchronously with that check, so concurrent calls cannot all
 * slip under a limit; the charge ends with the call.
 */
import { limitsOf, unlimited } from '../../../contracts/index.js';
import type { LimitSubject } from '../../services/limits.js';
import type { Services } from '../context.js';
import { holding, need, type CallPlan, type CallState } from './call-state.js';
import { next, refuse, type Step } from './step.js';

/** The call as the limits see it, or null when the tool has none (contracts/catalog/limits.ts). */
function limitSubject(call: CallState, plan: CallPlan): LimitSubject | null {
  const limits = limitsOf(plan.tool, plan.revision);
  return unlimited(limits) ? null : { tool: plan.tool.name, limits, sessionId: call.session.id, runId: call.trail.runId };
}

export function limitsCheck(call: CallState): Step {
  const subject = limitSubject(call, need(call, 'plan'));
  if (subject === null) return next({ ...call, usage: [] });
  const svc: Pick<Services, 'limits'> = call.svc;
  const c = svc.limits.check(subject);
  if (c.kind === 'limited') return refuse(c.error);
  // `audit show` reads the usage each call saw in its decision path: "limits:per_session 3/10".
  for (const u of c.usage) call.trail.step(`limits:${u.limit} ${u.used}/${u.max}`);
  return next({ ...call, usage: c.usage });
}

export function limitsCharge(call: CallState): Step {
  const subject = limitSubject(call, need(call, 'plan'));
  if (subject === null) return next(call);
  const svc: Pick<Services, 'limits'> = call.svc;
  const charged = svc.limits.charge(subject);
  if (charged.kind === 'limited') {
    call.trail.step('limits:reached');
    return refuse(charged.error);
  }
  const { charge } = charged;
  return next(holding({ ...call, charge }, () => charge.end()));
}
