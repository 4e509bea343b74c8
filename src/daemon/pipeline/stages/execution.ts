/**
 * The effect: the executor runs the resolved action with the call's own
 * copy of the credential. A failure is journaled as the intent's outcome
 * (an error, or outcome_unknown once the request may have been written) and
 * refused. The credential is marked used in the vault it came from.
 */
import { executeAction } from '../execute.js';
import { need, type CallState } from './call-state.js';
import { next, refuse, type Step } from './step.js';

export async function execution(call: CallState): Promise<Step> {
  const { svc, trail, req } = call;
  const { action } = need(call, 'plan');
  const { vault, credential } = need(call, 'held');
  const target = need(call, 'planCatalog').targets.get(action.target);
  trail.step('execute');
  const startedMs = svc.clock.monotonicMs();
  let result;
  try {
    result = await executeAction(action, credential, {
      config: svc.config,
      allowPrivate: target?.kind === 'http' && target.privateNetwork === 'allowed',
      ssh: svc.ssh,
      http: svc.http,
      signal: req.signal,
      onRequestSent: () => trail.effectStarted(),
      // The redactor of the vault the credential was taken from: it knows the longest form of that value.
      readPastCapBytes: svc.state.redactor().readPastCapBytes,
      now: () => svc.clock.now(),
      tokens: svc.tokens,
      keepRefreshToken: svc.keepRefreshToken,
    });
  } catch (e) {
    return refuse(await trail.failedExecution(e, svc.clock.monotonicMs() - startedMs));
  }
  if (!vault.locked && vault.get(action.credential) !== undefined) vault.markUsed(action.credential);
  return next({ ...call, exec: { result, startedMs } });
}
