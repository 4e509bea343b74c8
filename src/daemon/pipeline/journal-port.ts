/**
 * The call pipeline's one way into the Activity journal: what a call is
 * recorded as, written, and what came of the write, returned as data. The
 * journal's failures are handled here, fail-closed, in one place:
 * - an intent that is not committed means nothing ran (the call is refused
 *   and costs nothing); one committed but not anchored still stops the call,
 *   which then gets an error outcome (releasing the key);
 * - an outcome the journal refuses for now (JOURNAL_UNAVAILABLE: locked,
 *   busy…) is kept in `svc.pendingOutcomes` and retried in the background;
 *   until then the intent stays open, so a restart makes it outcome_unknown —
 *   never a re-run — and the agent is told its outcome is not durable yet;
 * - a rejection or a replay that cannot be journaled changes nothing that
 *   happened: nothing ran.
 * Invariant: an intent is committed before `effectStarted` can ever be
 * called (the execution stage runs only after `recordIntent` said so).
 */
import type { ResolvedAction } from '../../contracts/index.js';
import type { IdempotencyRecord, OutcomeInput, TargetDetails } from '../../journal/index.js';
import { isPosternError, PosternError } from '../../rules/errors.js';
import type { Services } from './context.js';
import { journalWriteFailed } from '../services/journal-event.js';
import type { Trail } from './trail.js';

type IntentWrite = { readonly kind: 'recorded' } | { readonly kind: 'refused'; readonly error: unknown };

function targetDetails(a: ResolvedAction): TargetDetails {
  switch (a.kind) {
    case 'http':
      return { kind: 'http', method: a.method, url: a.url };
    case 'ssh':
      return { kind: 'ssh', host: a.host, port: a.port, user: a.user, argv: [...a.argv], host_key_fingerprint: a.hostKey.state === 'pinned' ? a.hostKey.fingerprint : 'untrusted' };
  }
}

/** What writing a call's intent reads of the services. */
export type IntentServices = Pick<Services, 'commits'>;
/** What writing a call's outcome reads of the services (an outcome the journal refused for now is kept for a retry). */
export type OutcomeServices = Pick<Services, 'commits' | 'pendingOutcomes' | 'clock'>;
/** What journaling a rejection or a replay reads of the services. */
export type RecordServices = Pick<Services, 'journals' | 'log'>;

/** Commits the intent (and claims the key) before anything can leave the machine. */
export async function recordIntent(svc: IntentServices, trail: Trail, action: ResolvedAction): Promise<IntentWrite> {
  let r;
  try {
    r = await svc.commits.intent({ ...trail.record(), target: targetDetails(action) });
  } catch (e) {
    // Committed but not anchored: nothing runs, and the failure is journaled as its outcome (releasing the key).
    if (isPosternError(e) && e.details['intent_committed'] === true) trail.noteIntent();
    return { kind: 'refused', error: e };
  }
  if (!r.claimed) return { kind: 'refused', error: new PosternError('CALL_IN_PROGRESS', 'another call holds this idempotency_key; check it with postern_call_status') };
  trail.noteIntent();
  trail.announce('in_progress', null, null);
  return { kind: 'recorded' };
}

/** Journals the outcome of a recorded intent; true when it is durable. */
export async function recordOutcome(svc: OutcomeServices, trail: Trail, input: OutcomeInput): Promise<boolean> {
  const exposures = trail.exposures();
  const o: OutcomeInput = exposures.length === 0 ? input : { ...input, exposures };
  trail.noteOutcome();
  trail.announce(o.status, o.error_code ?? null, o.duration_ms, o.side_effect_started);
  try {
    trail.mark('journal:outcome');
    await svc.commits.outcome(trail.callId, o);
    trail.mark('respond');
    return true;
  } catch (e) {
    // Committed but its fsync failed: it is in the journal (a retry would find it); only its durability is not known.
    if (isPosternError(e, 'JOURNAL_UNAVAILABLE') && e.details['outcome_committed'] !== true) {
      await svc.pendingOutcomes.add({
        callId: trail.callId,
        tool: trail.tool.slice(0, 128),
        key: trail.idempotencyKey,
        argsDigest: trail.argsDigest,
        sessionId: trail.sessionId,
        outcome: o,
        finishedAt: svc.clock.now().toISOString(),
      });
    }
    return false;
  }
}

/** A call refused before any intent: journaled with its (redacted) raw arguments. */
export function recordRejection(svc: RecordServices, trail: Trail, code: string, message: string): void {
  try {
    svc.journals.activity.recordRejected({ ...trail.record(), error_code: code, message });
  } catch (e) {
    // Nothing ran; the agent still gets the error.
    svc.log(journalWriteFailed(e));
  }
  trail.announce('rejected', code, null);
}

/** A call answered from the stored result of `holder`. */
export function recordReplay(svc: RecordServices, trail: Trail, holder: IdempotencyRecord): void {
  trail.step('idempotency:replay');
  try {
    svc.journals.activity.recordReplay({ ...trail.record(), replay_of: holder.call_id });
  } catch (e) {
    // A replay has no effect; failing to journal it does not change what happened.
    svc.log(journalWriteFailed(e));
  }
  trail.announce('replayed', null, null);
}
