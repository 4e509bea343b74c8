/**
 * The idempotency decision (DESIGN §6.5), pure. Inputs: the key's durable
 * holder in the Activity journal (if any), whether a call with this key is in
 * flight in this daemon, and the digest of this call's normalized arguments.
 *
 *   no holder, not in flight        → proceed (the key is reserved in memory;
 *                                      it is claimed durably with the intent)
 *   in flight with other arguments  → IDEMPOTENCY_KEY_CONFLICT
 *   in flight                       → CALL_IN_PROGRESS
 *   holder, other arguments         → IDEMPOTENCY_KEY_CONFLICT
 *   holder in progress              → CALL_IN_PROGRESS
 *   holder outcome unknown          → OUTCOME_UNKNOWN (never re-run), saying
 *                                      why it is unknown (`whyOutcomeUnknown`)
 *   holder completed, same args,
 *     within the retention window   → replay the stored result
 *   holder completed, same args,
 *     past the retention window     → IDEMPOTENCY_KEY_EXPIRED (never re-run)
 *
 * Keys are scoped per tool and shared across sessions, so an agent that
 * reconnects after a crash cannot run the same action twice.
 */
import { daysBetween } from '../../../../clock/index.js';
import type { IdempotencyRecord } from '../../../../journal/index.js';
import type { Reservation } from '../../key-reservations.js';

type IdempotencyDecision =
  | { readonly kind: 'proceed' }
  | { readonly kind: 'replay'; readonly holder: IdempotencyRecord }
  | { readonly kind: 'conflict'; readonly holder: IdempotencyRecord | undefined }
  | { readonly kind: 'in_progress'; readonly holder: IdempotencyRecord | undefined }
  | { readonly kind: 'outcome_unknown'; readonly holder: IdempotencyRecord }
  | { readonly kind: 'expired'; readonly holder: IdempotencyRecord };

/** How the earlier call's outcome was recorded: its error code, and whether crash recovery wrote it. */
export interface UnknownOutcome {
  readonly errorCode: string | null;
  readonly recovered: boolean;
}

interface UnknownBecause {
  readonly because: string;
  readonly phrase: string;
}

/** The failures after sending that leave an effect unknown (stages/execution/), by the error code they were journaled with. */
const UNKNOWN_BECAUSE: Readonly<Record<string, UnknownBecause>> = {
  TARGET_TIMEOUT: { because: 'target_timeout', phrase: 'the target did not answer in time after the request was sent' },
  CALL_CANCELLED: { because: 'cancelled', phrase: 'it was cancelled after the request was sent' },
  TARGET_ERROR: { because: 'target_failed', phrase: 'the connection to the target failed after the request was sent' },
};

/** Why an earlier call's effect is unknown, as a retry with its key is told (a stable `unknown_because` and a phrase). */
export function whyOutcomeUnknown(o: UnknownOutcome | undefined): UnknownBecause {
  if (o?.recovered === true) return { because: 'daemon_stopped', phrase: 'the daemon stopped while it was in progress' };
  const known = o?.errorCode === null || o?.errorCode === undefined ? undefined : UNKNOWN_BECAUSE[o.errorCode];
  return known ?? { because: 'unrecorded', phrase: 'its outcome was not recorded' };
}

/** How long a completed key's stored result is served, measured on the wall clock. */
export interface Retention {
  readonly now: Date;
  readonly days: number;
}

/**
 * `inFlight` is this daemon's reservation of the key, if a call holds one; its
 * arguments' digest tells a retry of the running call from a conflicting one.
 */
export function decideIdempotency(holder: IdempotencyRecord | undefined, inFlight: Reservation | undefined, argsDigest: string, retention: Retention): IdempotencyDecision {
  if (holder === undefined) {
    if (inFlight === undefined) return { kind: 'proceed' };
    if (inFlight.argsDigest !== argsDigest) return { kind: 'conflict', holder: undefined };
    return { kind: 'in_progress', holder: undefined };
  }
  if (holder.args_digest !== argsDigest) return { kind: 'conflict', holder };
  switch (holder.state) {
    case 'in_progress':
      return { kind: 'in_progress', holder };
    case 'outcome_unknown':
      return { kind: 'outcome_unknown', holder };
    case 'completed':
      return withinRetention(holder, retention) ? { kind: 'replay', holder } : { kind: 'expired', holder };
  }
}

/**
 * A completed record with no readable completion time is past retention: the
 * stored result is withheld rather than served forever (the key still never
 * runs again). A completion time ahead of `now` (the clock stepped back) is
 * within the window.
 */
function withinRetention(holder: IdempotencyRecord, r: Retention): boolean {
  return replayWindowOpen(holder.completed_at, r);
}

/**
 * The retention rule's one home: does a key completed at `completedAt` still
 * replay its stored result? Also what `postern audit prune` keeps for.
 */
export function replayWindowOpen(completedAt: string | null | undefined, r: Retention): boolean {
  const done = completedAt === undefined || completedAt === null ? NaN : Date.parse(completedAt);
  if (Number.isNaN(done)) return false;
  return daysBetween(new Date(done), r.now) <= r.days;
}
