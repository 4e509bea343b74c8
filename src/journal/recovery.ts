/**
 * Crash recovery, run once when the daemon opens its journals: every call
 * with an intent and no outcome may or may not have had its effect, so it gets
 * an `outcome_unknown` outcome entry (recovered: true, side_effect_started:
 * null, error_code OUTCOME_UNKNOWN) and its idempotency claim, if it holds
 * one, moves to `outcome_unknown` — kept forever, so a retry with that key is
 * answered OUTCOME_UNKNOWN and never runs again.
 *
 * Invariant: all of it happens in one write transaction; if it cannot be
 * written the open fails with JOURNAL_UNAVAILABLE (the daemon must not serve
 * calls over a journal that still shows those calls in progress).
 * Precondition: no other process is executing calls on this journal (the
 * daemon's home lock guarantees it); read-only openers skip recovery.
 */
import { OPEN_INTENTS_SQL } from './activity-queries.js';
import type { ActivityStore } from './activity-store.js';
import { guard } from './database.js';

export function recoverOpenCalls(store: ActivityStore): string[] {
  return guard('activity', 'recover interrupted calls', () =>
    store.chain.write(() => {
        const open = store.db.prepare<[], string>(OPEN_INTENTS_SQL).pluck().all();
        for (const call_id of open) {
          store.appendOutcome(
            call_id,
            {
              status: 'outcome_unknown',
              side_effect_started: null,
              error_code: 'OUTCOME_UNKNOWN',
              response_status: null,
              exit_code: null,
              connected_ip: null,
              duration_ms: null,
              result_digest: null,
              target_extra: null,
              recovered: true,
            },
            () => 'outcome_unknown',
          );
        }
        return open;
      }).value,
  );
}
