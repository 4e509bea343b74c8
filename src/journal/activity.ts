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
import type Database from 'better-sqlite3';
import { PosternError } from '../rules/errors.js';
import { damageAware } from './chain.js';
import { callRecordOf, toCallView } from './activity-schema.js';
import type { CallRow, HeadBody, HeadKind, OutcomeBody } from './activity-schema.js';
import { EXPOSURES_PAGE_SQL, GET_CALL_SQL, HEADS_PAGE_SQL, LIMIT_COUNTS_SQL, LIMIT_RECENT_SQL, listCallsQuery } from './activity-queries.js';
import type { ActivityStore } from './activity-store.js';
import { firstClaimMismatch } from './claims-check.js';
import { guard, journalError } from './database.js';
import { NO_HOOKS, type CommitHooks } from './hooks.js';
import { toJsonText } from './json.js';
import type { WalSync } from './wal-sync.js';
import type { CallFilter, CallRecord, CallView, ChainHead, ChainReport, Exposure, IdempotencyRecord, OutcomeInput, TargetDetails } from './types.js';

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

/** A call's first entry: intent (it ran), rejected (refused before any effect) or replay. */
/** What the call limits need from the journal at start: counts of executed calls, and the last minute's. */
export interface LimitHistory {
  readonly counts: readonly { readonly tool: string; readonly session_id: string | null; readonly run_id: string | null; readonly n: number }[];
  /** Intents journaled at or after the time asked for, oldest first. */
  readonly recent: readonly { readonly tool: string; readonly at: string }[];
}

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

/** An entry's columns as the exposure lookups read them (`body` is the JSON text). */
export type ExposureRow = Omit<ExposureEntry, 'exposures'> & { readonly body: string };

/** The exposures an entry recorded (a head's in its call record, an outcome's in its body); undefined when none. */
export function exposureEntryOf(row: ExposureRow): ExposureEntry | undefined {
  const body = JSON.parse(row.body) as { call?: { exposures?: unknown }; exposures?: unknown };
  const found = row.kind === 'outcome' ? body.exposures : body.call?.exposures;
  if (!Array.isArray(found) || found.length === 0) return undefined;
  return { seq: row.seq, at: row.at, kind: row.kind, call_id: row.call_id, tool: row.tool, session_id: row.session_id, exposures: found as Exposure[] };
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

const PAGE = 500;

type OutcomeBodyInput = Omit<OutcomeBody, 'claim'>;

function withBusyTimeout<T>(db: Database.Database, ms: number | undefined, fn: () => T): T {
  if (ms === undefined) return fn();
  const before = db.pragma('busy_timeout', { simple: true }) as number;
  db.pragma(`busy_timeout = ${Math.max(0, Math.floor(ms))}`);
  try {
    return fn();
  } finally {
    db.pragma(`busy_timeout = ${before}`);
  }
}

/** The intent failure told to every entry that was committed but not made durable or anchored. */
function unanchored(results: Settled<IntentResult>[], err: PosternError, cause: unknown): Settled<IntentResult>[] {
  return results.map((x) =>
    !x.ok ? x : { ok: false, error: new PosternError(err.code, err.message, { details: { ...err.details, intent_committed: x.value.claimed }, cause }) },
  );
}

export function createActivityJournal(store: ActivityStore, hooks: CommitHooks = NO_HOOKS, walSync: WalSync | null = null): ActivityJournal {
  const db = store.db;
  // A group commit's transaction leaves its fsync to walSync; every other write keeps synchronous=FULL.
  const syncNormal = db.prepare('PRAGMA synchronous = NORMAL');
  const syncFull = db.prepare('PRAGMA synchronous = FULL');
  /** `fn`'s commit without its fsync (the caller awaits walSync); throws JOURNAL_UNAVAILABLE when the mode cannot be set. */
  const unsynced = <T>(action: string, fn: () => T): T => {
    guard('activity', action, () => syncNormal.run());
    try {
      return fn();
    } finally {
      guard('activity', action, () => syncFull.run());
    }
  };
  const failAll = <T>(n: number, action: string, e: unknown): Settled<T>[] => {
    const err = journalError('activity', action, e);
    return Array.from({ length: n }, () => ({ ok: false, error: err }));
  };
  const getStmt = db.prepare<[string], CallRow>(GET_CALL_SQL);
  const headsPage = db.prepare<[number, number], { seq: number; at: string; kind: HeadKind; error_code: string | null; body: string }>(HEADS_PAGE_SQL);
  const listStmts = new Map<string, Database.Statement<(string | number)[], CallRow>>();
  const exposuresPage = db.prepare<[number, number], { seq: number; at: string; kind: HeadKind | 'outcome'; call_id: string; tool: string; session_id: string | null; body: string }>(EXPOSURES_PAGE_SQL);

  const commit = <T>(action: string, fn: () => T): { readonly value: T; readonly appended: ChainHead | null } =>
    guard('activity', action, () =>
      store.chain.write(() => {
        hooks.check();
        return fn();
      }),
    );
  const write = <T>(action: string, fn: () => T): T => {
    const { value, appended } = commit(action, fn);
    guard('activity', 'advance the anchor', () => hooks.committed(false, appended));
    return value;
  };
  const read = <T>(action: string, fn: () => T): T => guard('activity', action, fn);
  /** The watch's check and the lookup in one read snapshot (one transaction, not one per statement). */
  const lookUpKey = db.transaction((tool: string, key: string): IdempotencyRecord | undefined => {
    hooks.check();
    const held = store.claimOf(tool, key);
    return held === undefined ? undefined : store.idempotencyRecord(held);
  });
  /** One entry of a group commit, inside the commit's transaction: its own savepoint, rolled back alone on failure. */
  const entry = <T>(action: string, fn: () => T): Settled<T> => {
    try {
      return { ok: true, value: store.chain.savepoint(fn) };
    } catch (e) {
      return { ok: false, error: journalError('activity', action, e) };
    }
  };

  const appendHead = (kind: HeadKind, r: CallRecord, body: Omit<HeadBody, 'call'>, error_code: string | null): void => {
    const call = callRecordOf(r);
    const text = toJsonText({ call, ...body });
    write(`record a ${kind} call`, () => store.appendHead(kind, call, text, error_code, false));
  };

  /** Commits the intents, each in its own savepoint; `keyed`: whether one of them claimed a key (it must be anchored before it runs). */
  const commitIntents = (rs: readonly (CallRecord & { target: TargetDetails })[]): { committed: boolean; keyed: boolean; appended: ChainHead | null; results: Settled<IntentResult>[] } => {
    const prepared = rs.map((r): { call: ReturnType<typeof callRecordOf>; text: string } | PosternError => {
      try {
        const call = callRecordOf(r);
        if (call.idempotency_key !== null && call.args_digest === null) {
          return new PosternError('INTERNAL', 'an idempotency key needs an args_digest', { details: { call_id: call.call_id } });
        }
        return { call, text: toJsonText({ call, target: r.target } satisfies HeadBody) };
      } catch (e) {
        return journalError('activity', 'record the intent', e);
      }
    });
    let results: Settled<IntentResult>[];
    let appended: ChainHead | null;
    try {
      ({ value: results, appended } = commit('record the intent', () =>
        prepared.map((p): Settled<IntentResult> => {
          if (p instanceof PosternError) return { ok: false, error: p };
          return entry('record the intent', (): IntentResult => {
            const key = p.call.idempotency_key;
            if (key !== null) {
              const held = store.claimOf(p.call.tool, key);
              if (held !== undefined) return { claimed: false, existing: store.idempotencyRecord(held) };
            }
            store.appendHead('intent', p.call, p.text, null, key !== null);
            return { claimed: true };
          });
        }),
      ));
    } catch (e) {
      const err = journalError('activity', 'record the intent', e);
      return { committed: false, keyed: false, appended: null, results: rs.map(() => ({ ok: false, error: err })) };
    }
    // Nothing may run on a keyed intent the anchor does not cover yet: its claim is the guard
    // against a second run. A keyless intent (a read) guards nothing and lags like other entries.
    const keyed = results.some((x, i) => x.ok && x.value.claimed && rs[i]?.idempotency_key !== null);
    return { committed: true, keyed, appended, results };
  };

  /** Commits the outcomes, each in its own savepoint, with the effect of each on its call's claim. */
  const commitOutcomes = (entries: readonly OutcomeEntry[]): { committed: boolean; appended: ChainHead | null; results: Settled<void>[] } => {
    const bodies = entries.map((x): OutcomeBodyInput | PosternError => {
      const o = x.outcome;
      const body = {
        status: o.status,
        side_effect_started: o.side_effect_started,
        error_code: o.error_code ?? null,
        response_status: o.response_status ?? null,
        exit_code: o.exit_code ?? null,
        connected_ip: o.connected_ip ?? null,
        duration_ms: o.duration_ms,
        ...(o.result === undefined ? {} : { result: o.result }),
        result_digest: o.result_digest ?? null,
        target_extra: o.target_extra ?? null,
        ...(o.output_adapter === undefined ? {} : { output_adapter: o.output_adapter }),
        recovered: false,
        ...(o.exposures === undefined || o.exposures.length === 0 ? {} : { exposures: o.exposures }),
      };
      try {
        toJsonText(body); // refuse a non-JSON result before taking the write lock
        return body;
      } catch (e) {
        return journalError('activity', 'record the outcome', e);
      }
    });
    try {
      const { value, appended } = commit('record the outcome', () =>
          entries.map((x, i): Settled<void> => {
            const body = bodies[i]!;
            if (body instanceof PosternError) return { ok: false, error: body };
            return entry('record the outcome', () => {
              store.appendOutcome(x.call_id, body, () => {
                switch (x.outcome.status) {
                  case 'success':
                    return 'completed';
                  case 'error':
                    return x.outcome.side_effect_started ? 'completed' : 'released';
                  case 'outcome_unknown':
                    return 'outcome_unknown';
                }
              });
            });
          }),
      );
      return { committed: true, appended, results: value };
    } catch (e) {
      const err = journalError('activity', 'record the outcome', e);
      return { committed: false, appended: null, results: entries.map(() => ({ ok: false, error: err })) };
    }
  };

  const api: ActivityJournal = {
    recordRejected(r) {
      appendHead('rejected', r, { error_code: r.error_code, message: r.message }, r.error_code);
    },

    recordReplay(r) {
      appendHead('replay', r, { replay_of: r.replay_of }, null);
    },

    recordIntent(r) {
      const [one] = api.recordIntents([r]);
      if (one === undefined || !one.ok) throw one?.error ?? new PosternError('INTERNAL', 'no intent result');
      return one.value;
    },

    recordIntents(rs) {
      const c = commitIntents(rs);
      if (!c.committed) return c.results;
      try {
        hooks.committed(c.keyed, c.appended);
      } catch (e) {
        return unanchored(c.results, journalError('activity', 'anchor the intent', e), e);
      }
      return c.results;
    },

    async recordIntentsAsync(rs) {
      if (walSync === null) return api.recordIntents(rs);
      let c;
      try {
        c = unsynced('record the intent', () => commitIntents(rs));
      } catch (e) {
        return failAll(rs.length, 'record the intent', e);
      }
      if (!c.committed) return c.results;
      let head;
      try {
        head = hooks.followed(c.appended);
        await walSync.sync();
      } catch (e) {
        return unanchored(c.results, journalError('activity', 'make the intent durable', e), e);
      }
      try {
        // A keyed intent is anchored before it returns (its anchor write, too, off the loop).
        if (c.keyed) await hooks.anchored(head);
        else hooks.synced(head, false);
      } catch (e) {
        return unanchored(c.results, journalError('activity', 'anchor the intent', e), e);
      }
      return c.results;
    },

    recordOutcome(call_id, o, opts = {}) {
      const [one] = withBusyTimeout(db, opts.busyTimeoutMs, () => api.recordOutcomes([{ call_id, outcome: o }]));
      if (one === undefined || !one.ok) throw one?.error ?? new PosternError('INTERNAL', 'no outcome result');
    },

    recordOutcomes(entries) {
      const c = commitOutcomes(entries);
      if (!c.committed) return c.results;
      try {
        guard('activity', 'advance the anchor', () => hooks.committed(false, c.appended));
      } catch (e) {
        const err = journalError('activity', 'record the outcome', e);
        return entries.map(() => ({ ok: false, error: err }));
      }
      return c.results;
    },

    async recordOutcomesAsync(entries) {
      if (walSync === null) return api.recordOutcomes(entries);
      let c;
      try {
        c = unsynced('record the outcome', () => commitOutcomes(entries));
      } catch (e) {
        return failAll(entries.length, 'record the outcome', e);
      }
      if (!c.committed) return c.results;
      try {
        const head = hooks.followed(c.appended);
        await walSync.sync();
        hooks.synced(head, false);
      } catch (e) {
        // Committed, but not known to be on disk: the agent is told (outcome_durable: false); the claim stays, so nothing re-runs.
        const err = journalError('activity', 'make the outcome durable', e);
        const told = new PosternError(err.code, err.message, { details: { ...err.details, outcome_committed: true }, cause: e });
        return c.results.map((x) => (x.ok ? { ok: false, error: told } : x));
      }
      return c.results;
    },

    findByKey(tool, key) {
      return read('look up an idempotency key', () => lookUpKey.deferred(tool, key));
    },

    getCall(call_id) {
      return read('read a call', () => {
        const row = getStmt.get(call_id);
        return row === undefined ? undefined : toCallView(row);
      });
    },

    listCalls(filter = {}) {
      const q = listCallsQuery(filter);
      return read('list calls', () => {
        let stmt = listStmts.get(q.sql);
        if (stmt === undefined) {
          stmt = db.prepare<(string | number)[], CallRow>(q.sql);
          listStmts.set(q.sql, stmt);
        }
        return stmt.all(...q.params).map(toCallView);
      });
    },

    *exposures() {
      let after = 0;
      for (;;) {
        const rows = read('read recorded exposures', () => exposuresPage.all(after, PAGE));
        for (const row of rows) {
          const found = exposureEntryOf(row);
          if (found !== undefined) yield found;
        }
        const last = rows.at(-1);
        if (last === undefined || rows.length < PAGE) return;
        after = last.seq;
      }
    },

    *rawArgumentsByTool() {
      let after = 0;
      for (;;) {
        const rows = read('read historical arguments', () => headsPage.all(after, PAGE));
        for (const row of rows) {
          const { call } = JSON.parse(row.body) as HeadBody;
          yield {
            tool: call.tool,
            revision: call.revision_seen,
            raw_arguments: call.raw_arguments,
            call_id: call.call_id,
            error_code: row.kind === 'rejected' ? row.error_code : null,
          };
        }
        const tail = rows.at(-1);
        if (tail === undefined || rows.length < PAGE) return;
        after = tail.seq;
      }
    },

    limitHistory(since) {
      return read('count executed calls', () => ({
        counts: db.prepare<[], LimitHistory['counts'][number]>(LIMIT_COUNTS_SQL).all().map((r) => ({ ...r, run_id: typeof r.run_id === 'string' ? r.run_id : null })),
        recent: db.prepare<[string], LimitHistory['recent'][number]>(LIMIT_RECENT_SQL).all(since),
      }));
    },

    *callHeads() {
      let after = 0;
      for (;;) {
        const rows = read('read call heads', () => headsPage.all(after, PAGE));
        for (const row of rows) {
          yield { kind: row.kind, at: row.at, error_code: row.kind === 'rejected' ? row.error_code : null, call: (JSON.parse(row.body) as HeadBody).call };
        }
        const tail = rows.at(-1);
        if (tail === undefined || rows.length < PAGE) return;
        after = tail.seq;
      }
    },

    verify(skips) {
      return read('verify the chain', () =>
        damageAware(
          () =>
            db
              .transaction((): ChainReport => {
                const report = store.chain.verify(skips);
                if (!report.ok) return report;
                const bad = firstClaimMismatch(db, store.chain.base());
                if (bad === undefined) return report;
                return { ok: false, entries_checked: report.entries, first_bad_seq: bad, reason: 'claim_mismatch' };
              })
              .deferred(),
          store.chain,
        ),
      );
    },

    exportJsonl(writeLine) {
      read('export', () =>
        db
          .transaction(() =>
            store.chain.forEach((r) => {
              const { body, ...rest } = r;
              writeLine(JSON.stringify({ journal: 'activity', ...rest, data: JSON.parse(String(body)) as unknown }));
            }),
          )
          .deferred(),
      );
    },
  };
  return api;
}
