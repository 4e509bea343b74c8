/**
 * The idempotency key: a completed call with the same key and arguments is
 * replayed (its stored result, no new effect); a key used for other
 * arguments, still running, past its window or of unknown outcome is
 * refused; otherwise the key is reserved in memory until the call ends
 * (the journal's intent claims it durably, intent.ts). A keyless call passes.
 */
import type { GapRefusal } from '../../../../journal/gap.js';
import { PosternError } from '../../../../rules/errors.js';
import { decideIdempotency, whyOutcomeUnknown, type UnknownOutcome } from './idempotency.js';
import type { Services } from '../../context.js';
import { recordReplay, type RecordServices } from '../../journal-port.js';
import { replayedResult } from '../../respond.js';
import { holding, need, type CallState } from '../call-state.js';
import { answer, next, refuse, type Step } from '../step.js';

const inProgress = (): PosternError => new PosternError('CALL_IN_PROGRESS', 'a call with this idempotency_key is still running; check it later with postern_call_status');

/** OUTCOME_UNKNOWN for a retry of `earlier`, saying why its effect is unknown (from its outcome, in memory or journaled). */
function outcomeUnknown(call: CallState, earlier: string): PosternError {
  const svc: Pick<Services, 'pendingOutcomes' | 'journals'> = call.svc;
  let recorded: UnknownOutcome | undefined;
  const pending = svc.pendingOutcomes.pendingStatus(earlier)?.outcome;
  if (pending !== undefined) recorded = { errorCode: pending.error_code ?? null, recovered: false };
  else {
    try {
      const o = svc.journals.activity.getCall(earlier)?.outcome;
      if (o !== undefined && o !== null) recorded = { errorCode: o.error_code, recovered: o.recovered };
    } catch {
      // the reason is a courtesy: the key is refused either way
    }
  }
  const why = whyOutcomeUnknown(recorded);
  return new PosternError('OUTCOME_UNKNOWN', `an earlier call with this idempotency_key may or may not have taken effect: ${why.phrase}; it will not be run again — check it with postern_call_status, or ask the operator to check the target`, {
    details: { unknown_because: why.because, earlier_call_id: earlier },
  });
}

/** What the idempotency stage reads of the services: the journal, the outcomes not journaled yet, the reservations, the restored journal's gap, the retention. */
type KeyServices = Pick<Services, 'pendingOutcomes' | 'reservations' | 'gap' | 'clock' | 'config'> & RecordServices;

export function idempotencyKey(call: CallState): Step {
  const { trail } = call;
  const svc: KeyServices = call.svc;
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
      // The stored result is answered as the revision this call was validated against, as before.
      trail.executes();
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
      return refuse(outcomeUnknown(call, idem.holder.call_id));
    case 'proceed': {
      // No holder in this journal: a restore's gap may still hold the key (journal/gap.ts).
      const gap = svc.gap.refusal(tool.name, key);
      if (gap !== undefined) return refuse(gapUnknown(tool.name, key, gap));
      if (!svc.reservations.reserve(tool.name, key, trail.callId, plan.argsDigest)) return refuse(inProgress());
      return next(holding(call, () => svc.reservations.release(tool.name, key, trail.callId)));
    }
  }
}

/** OUTCOME_UNKNOWN for a key a restored journal's gap may hold: the operator checks the target and releases it. */
function gapUnknown(tool: string, key: string, why: GapRefusal): PosternError {
  return new PosternError(
    'OUTCOME_UNKNOWN',
    `an earlier call with this idempotency_key may or may not have taken effect: ${why.phrase}; it will not be run until the operator checks the target and releases it (\`postern anchor release-key ${tool} <key>\`, or \`postern anchor close-gap\`)`,
    { details: { unknown_because: why.because, earlier_call_id: null, tool, idempotency_key: key } },
  );
}
