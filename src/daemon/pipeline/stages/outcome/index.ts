/**
 * The outcome: the result redacted (the newest redactor covers the values
 * of every vault generation since the unlock, this call's included), shaped
 * for the revision the agent planned against (output contract), journaled,
 * and answered — marked when its outcome is not durable yet (journal-port.ts
 * keeps it and retries).
 */
import type { Services } from '../../context.js';
import { recordOutcome, type OutcomeServices } from '../../journal-port.js';
import { notDurable } from '../../respond.js';
import { outputContractOf, shapeResult } from './result.js';
import { need, type CallState } from '../call-state.js';
import { answer, type Step } from '../step.js';

export async function outcome(call: CallState): Promise<Step> {
  const { trail } = call;
  const svc: Pick<Services, 'state'> & OutcomeServices = call.svc;
  const plan = need(call, 'plan');
  const exec = need(call, 'exec');
  trail.step('redact');
  const redactor = svc.state.locked ? need(call, 'redactor') : svc.state.redactor();
  const shaped = shapeResult(exec.result, plan.revision, trail.redactor('result', redactor), trail, outputContractOf(plan.decision));
  const r = exec.result;
  const target = r.kind === 'http' ? { response_status: r.result.status, connected_ip: r.result.connected_ip } : { exit_code: r.result.exit_code };
  const durable = await recordOutcome(svc, trail, {
    status: shaped.status,
    side_effect_started: true,
    ...(shaped.errorCode === undefined ? {} : { error_code: shaped.errorCode }),
    ...target,
    duration_ms: Math.round(svc.clock.monotonicMs() - exec.startedMs),
    result: shaped.result,
    result_digest: shaped.digest,
    ...(shaped.outputAdapted === undefined ? {} : { output_adapter: shaped.outputAdapted.join('; ') }),
  });
  return answer(durable ? shaped.result : notDurable(shaped.result));
}
