/**
 * The journals' entry point: `openJournals(dir)` opens (creating if needed)
 * `sessions.db` and `activity.db` in a private directory and, for the daemon,
 * turns every call left with an intent and no outcome into `outcome_unknown`.
 *
 * Invariants:
 * - the directory is 0700 and the files 0600 (HOME_UNSAFE otherwise); a file
 *   that is corrupt, foreign, from a newer schema, locked or unwritable makes
 *   the open fail with JOURNAL_UNAVAILABLE — the daemon must not start then;
 * - recovery runs before `openJournals` returns, so no call is served while
 *   an earlier call's fate is still shown as in progress;
 * - `{ readonly: true }` is for the audit while a daemon may be running: no
 *   recovery (it would wrongly end that daemon's live calls), no writes;
 * - `admit` sees each file's journal id and chain head before recovery writes
 *   anything (the anchor check: throwing refuses the open and leaves the files
 *   as they were); `exclusive` (the daemon) watches that the files stay the
 *   ones opened (integrity.ts); `onCommit` is told every new head (the anchor).
 *
 * Caller contract: values are stored as given; redact secrets before calling.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { systemClock, type Clock } from '../clock/index.js';
import { Chain, type EntryRow } from './chain.js';
import { NO_HOOKS, type CommitHooks, type CommitListener, type DurableCommitListener } from './hooks.js';
import { JournalWatch } from './integrity.js';
import type { ChainBase, ChainHead, OutcomeInput } from './types.js';
import { baseAfterPrune, planPrune, pruneChain, type ClaimForPrune, type PrunePlan } from './prune.js';
import { createActivityJournal } from './activity.js';
import type { ActivityJournal } from './activity.js';
import { ACTIVITY_SCHEMA, HEAD } from './activity-schema.js';
import { ActivityStore } from './activity-store.js';
import { ensureJournalDir, guard, journalError, journalIdOf, openJournalDb, type JournalName } from './database.js';
import { isPosternError, PosternError } from '../rules/errors.js';
import { recoverOpenCalls } from './recovery.js';
import { WalSync } from './wal-sync.js';
import { fileEvent } from '../vault/file-events.js';
import { createSessionsJournal, SESSIONS_CONTENT_COLUMNS, SESSIONS_SCHEMA } from './sessions.js';
import type { SessionsJournal } from './sessions.js';

export type { ActivityJournal, CallHead, ExposureEntry, HistoricalArguments, IntentResult, LimitHistory, OutcomeEntry, Settled } from './activity.js';
export type { SessionsJournal } from './sessions.js';
export type * from './types.js';
export { SESSION_EVENT_TYPES, ShadowVerdicts } from './types.js';
export { BUSY_TIMEOUT_MS } from './database.js';
export type { JournalName } from './database.js';
export type { CommitListener, DurableCommitListener } from './hooks.js';
export { GENESIS_HASH, GENESIS_BASE, entryHash } from './chain.js';
export type { EntryRow } from './chain.js';
export type { PrunePlan, ChainCut, ClaimForPrune } from './prune.js';
export { callSteps, sessionTimeline } from './timeline.js';
export type { SessionTimeline, TimelineEntry, TimelineSource } from './timeline.js';

/** One journal file as found: its journal id (null when it has none) and its chain. */
export interface JournalFileFacts {
  readonly journal_id: string | null;
  readonly head: ChainHead;
  /** Where the chain starts (seq 0 unless pruned). */
  readonly base: ChainBase;
  /** The stored hash of entry `seq`; undefined when the chain has no such entry. */
  hashAt(seq: number): string | undefined;
}

export interface JournalFacts {
  readonly sessions: JournalFileFacts;
  readonly activity: JournalFileFacts;
}

export interface Journals {
  readonly sessions: SessionsJournal;
  readonly activity: ActivityJournal;
  /** Call ids that recovery marked outcome_unknown during this open. */
  readonly recovered: readonly string[];
  /** Both files' journal ids and current heads. */
  facts(): JournalFacts;
  /** Raw activity entries after `afterSeq` in seq order, in one read transaction; `fn` returning false stops. */
  activityEntries(afterSeq: number, fn: (row: EntryRow) => boolean | void): void;
  /** The seqs of a call's activity entries (its first entry, then its outcome). */
  activityEntrySeqs(call_id: string): number[];
  /** The activity database, read by the claims' verified point (anchor/verified.ts) only. */
  readonly activityDb: Database.Database;
  /** Throws JOURNAL_UNAVAILABLE when another process changed a journal since this process opened it (an exclusive open; a no-op otherwise). */
  checkOwned(): void;
  /** Raw sessions entries after `afterSeq` in seq order, in one read transaction; `fn` returning false stops. */
  sessionsEntries(afterSeq: number, fn: (row: EntryRow) => boolean | void): void;
  /** The seqs of a session's entries (its start, its events, its close). */
  sessionEntrySeqs(session_id: string): number[];
  /** What `prune` would remove for a cut-off time (prune.ts); changes nothing. */
  prunePlan(before: string, stillNeeded: (c: ClaimForPrune) => boolean): PrunePlan;
  /** The bases `prune` of these cuts leaves (what the signed prune checkpoint names, before any row is removed); changes nothing. */
  pruneBases(cuts: PruneCuts): { readonly sessions: ChainBase; readonly activity: ChainBase };
  /** Removes the planned prefixes (each journal in its own transaction) and returns the new bases; `expect`: refused unless it leaves these bases. */
  prune(cuts: PruneCuts, expect?: { readonly sessions: ChainBase; readonly activity: ChainBase }): { readonly sessions: ChainBase; readonly activity: ChainBase };
  close(): void;
}

/** Where a prune cuts each chain (entries up to these seqs are removed). */
interface PruneCuts {
  readonly sessions: { readonly cut: number };
  readonly activity: { readonly cut: number };
}

export interface OpenOptions {
  /** The clock that stamps entries; the system clock by default (the daemon passes its own). */
  readonly clock?: Clock;
  /** Open existing journals without writing: no creation, no recovery. */
  readonly readonly?: boolean;
  /** The journal id given to files created by this open; random by default. */
  readonly journalId?: string;
  /** Called with what was found (and the activity database, to be read only), before recovery; throwing refuses the open. */
  readonly admit?: (facts: JournalFacts, activityDb: Database.Database) => void;
  /** This process owns the journal: any change by someone else fails later writes closed. */
  readonly exclusive?: boolean;
  /** Told after each commit (not recovery's) with the journal's new head. */
  readonly onCommit?: CommitListener;
  /** Told of a durable commit made off the event loop (group commit); without it, `onCommit` is told synchronously. */
  readonly onDurableCommit?: DurableCommitListener;
  /** Outcomes that happened but were not journaled by the daemon that had them: written before recovery (once each; one already there is kept). */
  readonly settle?: readonly { readonly callId: string; readonly outcome: OutcomeInput }[];
}

/** Journals a kept outcome unless its call already has one (or no intent): the journal's own record wins. */
function settleOutcome(activity: ActivityJournal, callId: string, outcome: OutcomeInput): void {
  try {
    activity.recordOutcome(callId, outcome);
  } catch (e) {
    if (!isPosternError(e, 'INTERNAL')) throw e;
  }
}

function factsOf(db: Database.Database, chain: Chain): JournalFileFacts {
  return { journal_id: journalIdOf(db), head: chain.head(), base: chain.base(), hashAt: (seq) => chain.hashAt(seq) };
}

/** A call's entries through the partial indexes (their predicates verbatim), not a scan. */
const ENTRY_SEQS_SQL = `SELECT seq FROM entries WHERE call_id = ? AND ${HEAD} UNION ALL SELECT seq FROM entries WHERE call_id = ? AND kind = 'outcome' ORDER BY seq`;

export function openJournals(dir: string, opts: OpenOptions = {}): Journals {
  const clock = opts.clock ?? systemClock;
  const now = (): Date => clock.now();
  const readonly = opts.readonly ?? false;
  if (!readonly) ensureJournalDir(dir);
  const opened: Database.Database[] = [];
  const journalId = opts.journalId ?? randomUUID();
  try {
    const sessionsDb = openJournalDb(dir, SESSIONS_SCHEMA, readonly, journalId);
    opened.push(sessionsDb);
    const activityDb = openJournalDb(dir, ACTIVITY_SCHEMA, readonly, journalId);
    opened.push(activityDb);
    const store = new ActivityStore(activityDb, now);
    const sessionsChain = new Chain(sessionsDb, SESSIONS_CONTENT_COLUMNS);
    const facts = (): JournalFacts =>
      guard('journal', 'read where the journals end', () => ({ sessions: factsOf(sessionsDb, sessionsChain), activity: factsOf(activityDb, store.chain) }));
    opts.admit?.(facts(), activityDb);
    // Outcomes a stopped daemon had but could not journal go in first: their calls are not interrupted ones.
    // Like recovery's, these writes come before the watch starts following the chain.
    if (!readonly && opts.settle !== undefined) {
      const settling = createActivityJournal(store, NO_HOOKS, null);
      for (const o of opts.settle) settleOutcome(settling, o.callId, o.outcome);
    }
    const recovered = readonly ? [] : recoverOpenCalls(store);
    const hooksFor = (name: JournalName, db: Database.Database, chain: Chain, file: string): CommitHooks => {
      if (opts.exclusive !== true && opts.onCommit === undefined) return NO_HOOKS;
      const watch = opts.exclusive === true ? new JournalWatch(name, join(dir, file), db, chain) : undefined;
      const followed = (appended: ChainHead | null): ChainHead => {
        // A commit of a journal this process owns is one file event (the test crash point, src/vault/file-events.ts).
        fileEvent();
        return watch !== undefined ? watch.committed(appended) : (appended ?? chain.head());
      };
      const synced = (head: ChainHead, durable: boolean): void => opts.onCommit?.(name, head, durable);
      const anchored = async (head: ChainHead): Promise<void> => {
        if (opts.onDurableCommit !== undefined) await opts.onDurableCommit(name, head);
        else synced(head, true);
      };
      return { check: () => watch?.check(), committed: (durable, appended) => synced(followed(appended), durable), followed, synced, anchored };
    };
    const sessionsHooks = hooksFor('sessions', sessionsDb, sessionsChain, SESSIONS_SCHEMA.file);
    const activityHooks = hooksFor('activity', activityDb, store.chain, ACTIVITY_SCHEMA.file);
    const walSync = readonly ? null : new WalSync(join(dir, `${ACTIVITY_SCHEMA.file}-wal`));
    walSync?.open();
    const activity = createActivityJournal(store, activityHooks, walSync);
    const parts = {
      sessions: { name: 'sessions', db: sessionsDb, chain: sessionsChain },
      activity: { name: 'activity', db: activityDb, chain: store.chain },
    } as const;
    return {
      sessions: createSessionsJournal(sessionsDb, now, sessionsChain, sessionsHooks),
      activity,
      recovered: Object.freeze(recovered),
      facts,
      activityEntries: (afterSeq, fn) => guard('activity', 'read entries', () => activityDb.transaction(() => store.chain.forEach(fn, afterSeq)).deferred()),
      activityDb,
      checkOwned() {
        sessionsHooks.check();
        activityHooks.check();
      },
      activityEntrySeqs: (call_id) => guard('activity', 'read entries', () => activityDb.prepare<[string, string], number>(ENTRY_SEQS_SQL).pluck().all(call_id, call_id)),
      sessionsEntries: (afterSeq, fn) => guard('sessions', 'read entries', () => sessionsDb.transaction(() => sessionsChain.forEach(fn, afterSeq)).deferred()),
      sessionEntrySeqs: (session_id) => guard('sessions', 'read entries', () => sessionsDb.prepare<[string], number>('SELECT seq FROM entries WHERE session_id = ? ORDER BY seq').pluck().all(session_id)),
      prunePlan: (before, stillNeeded) => guard('journal', 'plan the prune', () => planPrune(parts.sessions, parts.activity, before, stillNeeded)),
      pruneBases: (cuts) =>
        guard('journal', 'plan the prune', () => ({ sessions: baseAfterPrune(parts.sessions, cuts.sessions.cut), activity: baseAfterPrune(parts.activity, cuts.activity.cut) })),
      prune(cuts, expect) {
        if (readonly) throw new PosternError('INTERNAL', 'a read-only journal cannot be pruned');
        const one = (name: JournalName, hooks: CommitHooks, cut: number): ChainBase => {
          const base = guard(name, 'prune', () => pruneChain(parts[name], cut, () => hooks.check(), expect?.[name]));
          guard(name, 'advance the anchor', () => hooks.committed(true, null));
          return base;
        };
        return { activity: one('activity', activityHooks, cuts.activity.cut), sessions: one('sessions', sessionsHooks, cuts.sessions.cut) };
      },
      close() {
        walSync?.close();
        for (const db of opened) if (db.open) db.close();
      },
    };
  } catch (e) {
    for (const db of opened) db.close();
    throw journalError('journal', 'open the journals', e);
  }
}
