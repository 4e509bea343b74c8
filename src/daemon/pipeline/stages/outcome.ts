/**
 * The outcome: the result redacted (the newest redactor covers the values
 * of every vault generation since the unlock, this call's included), shaped
 * for the revision the agent planned against (output contract), journaled,
 * and answered — marked when its outcome is not durable yet.
 */
import { outputContractOf, shapeResult } from '../result.js';
import { need, type CallState } from './call-state.js';
import { answer, type Step } from './step.js';

export async function outcome(call: CallState): Promise<Step> {
  const { svc, trail } = call;
  const plan = need(call, 'plan');
  const exec = need(call, 'exec');
  trail.step('redact');
  const redactor = svc.state.locked ? need(call, 'redactor') : svc.state.redactor();
  const shaped = shapeResult(exec.result, plan.revision, trail.redactor('result', redactor), trail, outputContractOf(plan.decision));
  return answer(await trail.outcome(shaped, svc.clock.monotonicMs() - exec.startedMs, exec.result));
}
