/**
 * The idempotency key: a completed call with the same key and arguments is
 * replayed (its stored result, no new effect); a key used for other
 * arguments, still running, past its window or of unknown outcome is
 * refused; otherwise the key is reserved in memory until the call ends
 * (the journal's intent claims it durably, intent.ts). A keyless call passes.
 */
import { PosternError } from '../../../rules/errors.js';
import { decideIdempotency } from '../idempotency.js';
import { recordReplay } from '../journal-port.js';
import { replayedResult } from '../respond.js';
import { holding, need, type CallState } from './call-state.js';
import { answer, next, refuse, type Step } from './step.js';

const inProgress = (): PosternError => new PosternError('CALL_IN_PROGRESS', 'a call with this idempotency_key is still running; check it later with postern_call_status');

export function idempotencyKey(call: CallState): Step {
  const { svc, trail } = call;
  const { tool, key } = need(call, 'admitted');
  if (key === undefined) return next(call);
  const plan = need(call, 'plan');
  trail.step('idempotency');
  const journaled = svc.journals.activity.findByKey(tool.name, key);
  // A finished call whose outcome is not journaled yet answers from memory.
  const pending = svc.pendingOutcomes.holder(tool.name, key);
  const retention = { now: svc.clock.now(), days: svc.config.idempotency_retention_days };
  const idem = decideIdempotency(pending ?? journaled, svc.reservations.held(tool.name, key), plan.argsDigest, retention);
  switch (idem.kind) {
    case 'replay':
      recordReplay(svc, trail, idem.holder);
      return answer(replayedResult(idem.holder, pending === undefined));
    case 'expired':
      // Past the window the stored result is no longer served, and the key never runs again.
      return refuse(new PosternError('IDEMPOTENCY_KEY_EXPIRED', `this idempotency_key completed more than ${retention.days} days ago; use a new key for a new action`));
    case 'conflict':
      return refuse(new PosternError('IDEMPOTENCY_KEY_CONFLICT', 'this idempotency_key was already used with other arguments; use a new key for a new action'));
    case 'in_progress':
      return refuse(inProgress());
    case 'outcome_unknown':
      return refuse(new PosternError('OUTCOME_UNKNOWN', 'an earlier call with this idempotency_key may or may not have run (the daemon stopped mid-call); it will not be run again — ask the operator to check the target'));
    case 'proceed':
      if (!svc.reservations.reserve(tool.name, key, trail.callId, plan.argsDigest)) return refuse(inProgress());
      return next(holding(call, () => svc.reservations.release(tool.name, key, trail.callId)));
  }
}
