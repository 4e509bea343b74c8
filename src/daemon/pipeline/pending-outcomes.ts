/**
 * Outcomes that happened but could not be journaled yet (another process held
 * the journal's write lock past the busy timeout, say). The call's effect is
 * over and its result known, so:
 * - the agent gets the result, marked `outcome_durable: false`;
 * - the outcome is kept here and written again in the background, a bounded
 *   number of times with growing delays, each attempt not waiting on a lock
 *   (busy timeout 0) so the daemon never stalls on it;
 * - meanwhile a retry with the same key is answered from here — the stored
 *   result as a replay (also marked not durable), OUTCOME_UNKNOWN for an
 *   unknown outcome — never CALL_IN_PROGRESS for a call that has finished, and
 *   never a second run (the journal still holds the key's claim);
 * - at shutdown one last attempt is made; what is still pending then is
 *   turned into outcome_unknown by the next start's recovery (never re-run).
 */
import type { IdempotencyRecord, OutcomeInput } from '../../journal/index.js';
import { isPosternError } from '../../rules/errors.js';

export interface PendingOutcome {
  readonly callId: string;
  readonly tool: string;
  readonly key: string | null;
  readonly argsDigest: string | null;
  readonly sessionId: string | null;
  readonly outcome: OutcomeInput;
  /** When the call finished (ISO), the completion time a replay's retention counts from. */
  readonly finishedAt: string;
}

/** Writes one outcome; `busyTimeoutMs` 0 = do not wait for a lock. Throws when it cannot. */
export type OutcomeWriter = (callId: string, outcome: OutcomeInput, busyTimeoutMs: number | undefined) => void;

/** Delays between attempts: about a minute in all. */
export const RETRY_DELAYS_MS: readonly number[] = [50, 100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000, 10_000, 10_000, 10_000, 10_000];

export class PendingOutcomes {
  readonly #byCall = new Map<string, PendingOutcome>();
  readonly #byKey = new Map<string, string>();
  readonly #timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly write: OutcomeWriter,
    private readonly log: (line: string) => void,
    private readonly delays: readonly number[] = RETRY_DELAYS_MS,
  ) {}

  get size(): number {
    return this.#byCall.size;
  }

  /** Keeps `p` and starts writing it again in the background. */
  add(p: PendingOutcome): void {
    this.#byCall.set(p.callId, p);
    if (p.key !== null) this.#byKey.set(`${p.tool}\u0000${p.key}`, p.callId);
    this.#attempt(p.callId, 0);
  }

  /** The key's holder as the pending outcome makes it, or undefined when no pending outcome holds the key. */
  holder(tool: string, key: string): IdempotencyRecord | undefined {
    const id = this.#byKey.get(`${tool}\u0000${key}`);
    const p = id === undefined ? undefined : this.#byCall.get(id);
    if (p === undefined || p.argsDigest === null) return undefined;
    const base = { call_id: p.callId, tool, key, args_digest: p.argsDigest, session_id: p.sessionId };
    const o = p.outcome;
    if (o.status === 'outcome_unknown') return { ...base, state: 'outcome_unknown' };
    // An error before any effect will release the key once journaled; until then it is held.
    if (o.status === 'error' && !o.side_effect_started) return { ...base, state: 'in_progress' };
    return {
      ...base,
      state: 'completed',
      status: o.status,
      completed_at: p.finishedAt,
      error_code: o.error_code ?? null,
      ...(o.result === undefined ? {} : { result: o.result }),
    };
  }

  /** Status facts for `postern_call_status`, when the call's outcome is pending. */
  pendingStatus(callId: string): PendingOutcome | undefined {
    return this.#byCall.get(callId);
  }

  /** One last attempt for each, waiting on locks as a normal write does; returns how many remain unwritten. */
  flushNow(): number {
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    for (const id of [...this.#byCall.keys()]) this.#tryOnce(id, undefined);
    return this.#byCall.size;
  }

  #attempt(callId: string, n: number): void {
    const delay = this.delays[n];
    if (delay === undefined) {
      this.log(`outcome of call ${callId} still not journaled after ${n} retries: kept in memory for replays; if the daemon stops first it will show as outcome_unknown`);
      return;
    }
    const t = setTimeout(() => {
      this.#timers.delete(t);
      if (!this.#byCall.has(callId)) return;
      if (this.#tryOnce(callId, 0)) this.log(`outcome of call ${callId} journaled on retry ${n + 1}`);
      else this.#attempt(callId, n + 1);
    }, delay);
    t.unref();
    this.#timers.add(t);
  }

  /** True when written (or found already written); the pending entry is then dropped. */
  #tryOnce(callId: string, busyTimeoutMs: number | undefined): boolean {
    const p = this.#byCall.get(callId);
    if (p === undefined) return true;
    try {
      this.write(callId, p.outcome, busyTimeoutMs);
    } catch (e) {
      // INTERNAL means the journal already has an outcome for it (or never had the intent): nothing to retry.
      if (!isPosternError(e, 'INTERNAL')) return false;
    }
    this.#byCall.delete(callId);
    if (p.key !== null) this.#byKey.delete(`${p.tool}\u0000${p.key}`);
    return true;
  }
}
