/**
 * The activity journal's API and the values it takes and returns
 * (activity.ts composes it from activity-writes.ts and activity-reads.ts).
 */
import type { PosternError } from '../rules/errors.js';
import type { CallRecord, CallFilter, CallView, ChainHead, ChainReport, Exposure, IdempotencyRecord, OutcomeInput, TargetDetails } from './types.js';
import type { HeadKind } from './activity-schema.js';

export type IntentResult = { readonly claimed: true } | { readonly claimed: false; readonly existing: IdempotencyRecord };

/** One entry of a group commit: its own result, or the error that refused it (the others are not affected). */
export type Settled<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: PosternError };

export interface OutcomeEntry {
  readonly call_id: string;
  readonly outcome: OutcomeInput;
}

/** One journaled raw argument set, for `postern catalog check --against-journal`. */
export interface HistoricalArguments {
  readonly tool: string;
  /** The revision the session saw (the schema the agent shaped the arguments for). */
  readonly revision: number | null;
  readonly raw_arguments: unknown;
  readonly call_id: string;
  /** Set when the call was rejected — e.g. VALIDATION_FAILED means it never was valid. */
  readonly error_code: string | null;
}

/** What the call limits need from the journal at start: counts of executed calls, and the last minute's. */
export interface LimitHistory {
  readonly counts: readonly { readonly tool: string; readonly session_id: string | null; readonly run_id: string | null; readonly n: number }[];
  /** Intents journaled at or after the time asked for, oldest first. */
  readonly recent: readonly { readonly tool: string; readonly at: string }[];
}

/** A call's first entry: intent (it ran), rejected (refused before any effect) or replay. */
export interface CallHead {
  readonly kind: HeadKind;
  /** When the head was journaled (for an intent: when the call was about to run). */
  readonly at: string;
  /** Set for a rejected call. */
  readonly error_code: string | null;
  readonly call: CallRecord;
}

/** One journal entry that recorded exposures: a call's head (arguments, a refusal) or its outcome (result, errors). */
export interface ExposureEntry {
  readonly seq: number;
  readonly at: string;
  readonly kind: HeadKind | 'outcome';
  readonly call_id: string;
  readonly tool: string;
  readonly session_id: string | null;
  readonly exposures: readonly Exposure[];
}

export interface ActivityJournal {
  /** A call refused before any effect (validation, stale contract, denial, timeout, conflict…). One entry, no intent. */
  recordRejected(r: CallRecord & { error_code: string; message: string }): void;
  /** The durable intent, committed before execution; for a keyed call it also claims (tool, key) atomically. */
  recordIntent(r: CallRecord & { target: TargetDetails }): IntentResult;
  /**
   * Group commit: several intents in one transaction and one anchored flush, each exactly as
   * recordIntent would record it (its own savepoint: one refused entry leaves the others).
   * Every result is durable when this returns.
   */
  recordIntents(rs: readonly (CallRecord & { target: TargetDetails })[]): Settled<IntentResult>[];
  /**
   * The same as recordIntents, except that the commit's fsync is made off the event loop
   * (wal-sync.ts) and shared with the commits made meanwhile: the entries are committed when
   * this is called, and the promise resolves once they are on disk and anchored — only then may
   * anything run. An fsync or anchor failure fails the claimed entries with JOURNAL_UNAVAILABLE
   * and `intent_committed`, as recordIntents does for an anchor failure.
   */
  recordIntentsAsync(rs: readonly (CallRecord & { target: TargetDetails })[]): Promise<Settled<IntentResult>[]>;
  /** recordOutcomes with its fsync off the loop (see recordIntentsAsync); resolves once the outcomes are on disk. */
  recordOutcomesAsync(entries: readonly OutcomeEntry[]): Promise<Settled<void>[]>;
  /** Extension: a call answered from the stored result of `replay_of` (same key, same arguments); no effect. */
  recordReplay(r: CallRecord & { replay_of: string }): void;
  /**
   * The outcome of a call whose intent was recorded; see the header for what it does to the claim.
   * `busyTimeoutMs` overrides how long this one write waits for another process's lock (a retry passes 0).
   */
  recordOutcome(call_id: string, o: OutcomeInput, opts?: { readonly busyTimeoutMs?: number }): void;
  /** Group commit of outcomes: one transaction, each entry in its own savepoint, as recordOutcome records it. */
  recordOutcomes(entries: readonly OutcomeEntry[]): Settled<void>[];
  findByKey(tool: string, key: string): IdempotencyRecord | undefined;
  getCall(call_id: string): CallView | undefined;
  /** Newest first; default limit 100, at most 10,000. */
  listCalls(filter?: CallFilter): CallView[];
  /** Every journaled call's raw arguments, in journal order. */
  rawArgumentsByTool(): Iterable<HistoricalArguments>;
  /** Every call's head entry (how it began, and its record), in journal order, read page by page. */
  callHeads(): Iterable<CallHead>;
  /** Executed calls counted in SQL (no body is parsed here): per tool, session and run id, and those since `since`. */
  limitHistory(since: string): LimitHistory;
  /** Every entry that recorded a redacted secret, in journal order. */
  exposures(): Iterable<ExposureEntry>;
  /** The chain walked (chain.ts; `skips`: a shipped copy's accepted gaps), then the claims checked against it. */
  verify(skips?: ReadonlyMap<number, ChainHead>): ChainReport;
  /** One JSON line per entry in seq order; `data` is the parsed body (JSON.stringify(data) re-creates it). */
  exportJsonl(write: (line: string) => void): void;
}
