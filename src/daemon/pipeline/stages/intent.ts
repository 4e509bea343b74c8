/**
 * The intent: journaled (and the key claimed) before anything can leave the
 * machine. A call whose intent is not in the journal did not run and costs
 * nothing (its limits charge is refunded). The intent's commit may have
 * waited (group commit): the orchestrator's next stage re-checks the catalog.
 */
import { recordIntent, type IntentServices } from '../journal-port.js';
import { need, type CallState } from './call-state.js';
import { next, refuse, type Step } from './step.js';

export async function intent(call: CallState): Promise<Step> {
  const { trail } = call;
  trail.step('journal:intent');
  trail.executes();
  const svc: IntentServices = call.svc;
  const written = await recordIntent(svc, trail, need(call, 'plan').action);
  if (written.kind === 'recorded') return next(call);
  if (!trail.intentRecorded) {
    call.charge?.refund();
    trail.notExecuted();
  }
  return refuse(written.error);
}
