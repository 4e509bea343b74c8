/**
 * The effect: the executor runs the resolved action with the call's own
 * copy of the credential. A failure is journaled as the intent's outcome
 * (an error, or outcome_unknown once the request may have been written) and
 * refused. The credential is marked used in the vault it came from.
 */
import { isPosternError, PosternError } from '../../../../rules/errors.js';
import { executeAction } from './execute.js';
import type { Services } from '../../context.js';
import { recordOutcome, type OutcomeServices } from '../../journal-port.js';
import { callErrorResult } from '../../respond.js';
import { need, type CallState } from '../call-state.js';
import { next, refuse, type Step } from '../step.js';

/**
 * An executor failure: journal the outcome and return the error to refuse
 * with. Once the request may have been written, a failure that came before
 * any answer (a timeout, a reset or closed connection, a cancellation) leaves
 * the effect unknown: it is journaled as outcome_unknown, so a retry with the
 * key is told so instead of being replayed a failure that may have
 * succeeded. A failure that proves nothing was delivered (the TLS handshake
 * failed) or that came with an answer (a response too large) stays an error.
 */
export async function failedExecution(call: CallState, e: unknown, ms: number): Promise<PosternError> {
  const { trail } = call;
  const svc: OutcomeServices = call.svc;
  const err = isPosternError(e) ? e : new PosternError('TARGET_ERROR', 'the action failed', { sideEffectStarted: trail.effect, cause: e });
  const started = err.sideEffectStarted || trail.effect;
  const final = started === err.sideEffectStarted ? err : new PosternError(err.code, err.message, { details: err.details, sideEffectStarted: started });
  const unknown = started && (final.code === 'TARGET_TIMEOUT' || final.code === 'CALL_CANCELLED' || (final.code === 'TARGET_ERROR' && final.details['phase'] !== 'tls'));
  // A refused SSH host key: the journal keeps the offered fingerprint beside the pinned one of the intent.
  const offered = final.details['offered_fingerprint'];
  const durable = await recordOutcome(svc, trail, {
    status: unknown ? 'outcome_unknown' : 'error',
    side_effect_started: started,
    error_code: final.code,
    duration_ms: Math.round(ms),
    result: callErrorResult(trail, final),
    ...(typeof offered === 'string' ? { target_extra: { offered_fingerprint: offered, pinned_fingerprint: final.details['pinned_fingerprint'] ?? null } } : {}),
  });
  if (durable) return final;
  return new PosternError(final.code, final.message, { details: { ...final.details, outcome_durable: false }, sideEffectStarted: final.sideEffectStarted, cause: final });
}

/** What the execution stage reads of the services: the executors' pools, settings, token cache and clock. */
type ExecutionServices = Pick<Services, 'clock' | 'config' | 'ssh' | 'http' | 'state' | 'tokens' | 'keepRefreshToken'>;

export async function execution(call: CallState): Promise<Step> {
  const { trail, req } = call;
  const svc: ExecutionServices = call.svc;
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
    return refuse(await failedExecution(call, e, svc.clock.monotonicMs() - startedMs));
  }
  if (!vault.locked && vault.get(action.credential) !== undefined) vault.markUsed(action.credential);
  return next({ ...call, exec: { result, startedMs } });
}
