/**
 * The activity journal (`activity.db`): one chained history of every call —
 * its intent (before anything leaves the machine), its rejection, or its
 * replay — and every outcome, plus the idempotency claims those entries imply.
 *
 * Invariants:
 * - each write is one BEGIN IMMEDIATE transaction committed with WAL +
 *   synchronous=FULL before the method returns; on any failure it throws
 *   JOURNAL_UNAVAILABLE and nothing of it is recorded (fail closed); the
 *   `…Async` group writes commit with synchronous=NORMAL and resolve only
 *   after the WAL fsync that FULL would have made (wal-sync.ts), made off the
 *   event loop and shared with the commits made meanwhile;
 * - `recordIntent` claims (tool, key) in the same transaction as the intent
 *   entry, so across processes exactly one call holds a key; a keyed intent
 *   returns only once the anchor covers it (hooks.committed(true));
 * - an error outcome with no side effect releases the claim; every other
 *   outcome keeps it (completed / outcome_unknown) forever;
 * - values are stored exactly as given — raw arguments keep the key order
 *   they were received in; the caller has already redacted secrets.
 */
import type { ActivityStore } from './activity-store.js';
import { ActivityReads } from './activity-reads.js';
export { exposureEntryOf, type ExposureRow } from './activity-reads.js';
import type { ActivityJournal } from './activity-types.js';
import { ActivityWrites } from './activity-writes.js';
import { NO_HOOKS, type CommitHooks } from './hooks.js';
import type { WalSync } from './wal-sync.js';

export type { ActivityJournal, CallHead, ExposureEntry, HistoricalArguments, IntentResult, LimitHistory, OutcomeEntry, Settled } from './activity-types.js';

/** The journal over `store`: its writes (activity-writes.ts) and its reads (activity-reads.ts). */
export function createActivityJournal(store: ActivityStore, hooks: CommitHooks = NO_HOOKS, walSync: WalSync | null = null): ActivityJournal {
  const w = new ActivityWrites(store, hooks, walSync);
  const r = new ActivityReads(store, hooks);
  return {
    recordRejected: (x) => w.recordRejected(x),
    recordReplay: (x) => w.recordReplay(x),
    recordIntent: (x) => w.recordIntent(x),
    recordIntents: (xs) => w.recordIntents(xs),
    recordIntentsAsync: (xs) => w.recordIntentsAsync(xs),
    recordOutcome: (id, o, opts) => w.recordOutcome(id, o, opts),
    recordOutcomes: (es) => w.recordOutcomes(es),
    recordOutcomesAsync: (es) => w.recordOutcomesAsync(es),
    findByKey: (tool, key) => r.findByKey(tool, key),
    getCall: (id) => r.getCall(id),
    listCalls: (f) => r.listCalls(f),
    rawArgumentsByTool: () => r.rawArgumentsByTool(),
    callHeads: () => r.callHeads(),
    limitHistory: (since) => r.limitHistory(since),
    exposures: () => r.exposures(),
    verify: (skips) => r.verify(skips),
    exportJsonl: (write) => r.exportJsonl(write),
  };
}
