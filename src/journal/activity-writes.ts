/**
 * The activity journal's writes: a call's head (intent, rejection, replay)
 * and its outcome, one at a time or as a group commit, each chained and
 * committed with the idempotency change it implies (activity.ts has the
 * journal's invariants).
 *
 * Every write runs `hooks.check()` inside its transaction and tells the
 * hooks its new head after the commit: synchronously (`committed`), or in two
 * steps when its fsync is made off the event loop by `walSync` (`followed`,
 * then `synced` or `anchored` once the WAL is on disk). A failure is
 * JOURNAL_UNAVAILABLE (`journalError`), per entry in a group commit.
 */
import type Database from 'better-sqlite3';
import { PosternError } from '../rules/errors.js';
import { callRecordOf } from './activity-schema.js';
import type { HeadBody, HeadKind, OutcomeBody } from './activity-schema.js';
import type { ActivityStore } from './activity-store.js';
import type { IntentResult, OutcomeEntry, Settled } from './activity-types.js';
import { guard, journalError } from './database.js';
import type { CommitHooks } from './hooks.js';
import { toJsonText } from './json.js';
import type { WalSync } from './wal-sync.js';
import type { CallRecord, ChainHead, OutcomeInput, TargetDetails } from './types.js';

type OutcomeBodyInput = Omit<OutcomeBody, 'claim'>;
type Intent = CallRecord & { target: TargetDetails };

interface Committed<T> {
  readonly committed: boolean;
  readonly appended: ChainHead | null;
  readonly results: Settled<T>[];
}

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

function failAll<T>(n: number, action: string, e: unknown): Settled<T>[] {
  const err = journalError('activity', action, e);
  return Array.from({ length: n }, () => ({ ok: false, error: err }));
}

/** The outcome's journaled body, or why it cannot be journaled (refused before the write lock is taken). */
function outcomeBody(o: OutcomeInput): OutcomeBodyInput | PosternError {
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
    toJsonText(body);
    return body;
  } catch (e) {
    return journalError('activity', 'record the outcome', e);
  }
}

/** What an outcome does to its call's claim (activity-store.ts). */
function claimEffect(o: OutcomeInput): 'completed' | 'released' | 'outcome_unknown' {
  switch (o.status) {
    case 'success':
      return 'completed';
    case 'error':
      return o.side_effect_started ? 'completed' : 'released';
    case 'outcome_unknown':
      return 'outcome_unknown';
  }
}

/** The intent's journaled call record and body text, or why it cannot be journaled. */
function preparedIntent(r: Intent): { call: ReturnType<typeof callRecordOf>; text: string } | PosternError {
  try {
    const call = callRecordOf(r);
    if (call.idempotency_key !== null && call.args_digest === null) {
      return new PosternError('INTERNAL', 'an idempotency key needs an args_digest', { details: { call_id: call.call_id } });
    }
    return { call, text: toJsonText({ call, target: r.target } satisfies HeadBody) };
  } catch (e) {
    return journalError('activity', 'record the intent', e);
  }
}

export class ActivityWrites {
  readonly #store: ActivityStore;
  readonly #hooks: CommitHooks;
  readonly #walSync: WalSync | null;
  readonly #syncNormal: Database.Statement;
  readonly #syncFull: Database.Statement;

  constructor(store: ActivityStore, hooks: CommitHooks, walSync: WalSync | null) {
    this.#store = store;
    this.#hooks = hooks;
    this.#walSync = walSync;
    // A group commit's transaction leaves its fsync to walSync; every other write keeps synchronous=FULL.
    this.#syncNormal = store.db.prepare('PRAGMA synchronous = NORMAL');
    this.#syncFull = store.db.prepare('PRAGMA synchronous = FULL');
  }

  recordRejected(r: CallRecord & { error_code: string; message: string }): void {
    this.#appendHead('rejected', r, { error_code: r.error_code, message: r.message }, r.error_code);
  }

  recordReplay(r: CallRecord & { replay_of: string }): void {
    this.#appendHead('replay', r, { replay_of: r.replay_of }, null);
  }

  recordIntent(r: Intent): IntentResult {
    const [one] = this.recordIntents([r]);
    if (one === undefined || !one.ok) throw one?.error ?? new PosternError('INTERNAL', 'no intent result');
    return one.value;
  }

  recordIntents(rs: readonly Intent[]): Settled<IntentResult>[] {
    const c = this.#commitIntents(rs);
    if (!c.committed) return c.results;
    try {
      this.#hooks.committed(c.keyed, c.appended);
    } catch (e) {
      return unanchored(c.results, journalError('activity', 'anchor the intent', e), e);
    }
    return c.results;
  }

  async recordIntentsAsync(rs: readonly Intent[]): Promise<Settled<IntentResult>[]> {
    const walSync = this.#walSync;
    if (walSync === null) return this.recordIntents(rs);
    let c;
    try {
      c = this.#unsynced('record the intent', () => this.#commitIntents(rs));
    } catch (e) {
      return failAll(rs.length, 'record the intent', e);
    }
    if (!c.committed) return c.results;
    let head;
    try {
      head = this.#hooks.followed(c.appended);
      await walSync.sync();
    } catch (e) {
      return unanchored(c.results, journalError('activity', 'make the intent durable', e), e);
    }
    try {
      // A keyed intent is anchored before it returns (its anchor write, too, off the loop).
      if (c.keyed) await this.#hooks.anchored(head);
      else this.#hooks.synced(head, false);
    } catch (e) {
      return unanchored(c.results, journalError('activity', 'anchor the intent', e), e);
    }
    return c.results;
  }

  recordOutcome(call_id: string, o: OutcomeInput, opts: { readonly busyTimeoutMs?: number } = {}): void {
    const [one] = withBusyTimeout(this.#store.db, opts.busyTimeoutMs, () => this.recordOutcomes([{ call_id, outcome: o }]));
    if (one === undefined || !one.ok) throw one?.error ?? new PosternError('INTERNAL', 'no outcome result');
  }

  recordOutcomes(entries: readonly OutcomeEntry[]): Settled<void>[] {
    const c = this.#commitOutcomes(entries);
    if (!c.committed) return c.results;
    try {
      guard('activity', 'advance the anchor', () => this.#hooks.committed(false, c.appended));
    } catch (e) {
      const err = journalError('activity', 'record the outcome', e);
      return entries.map(() => ({ ok: false, error: err }));
    }
    return c.results;
  }

  async recordOutcomesAsync(entries: readonly OutcomeEntry[]): Promise<Settled<void>[]> {
    const walSync = this.#walSync;
    if (walSync === null) return this.recordOutcomes(entries);
    let c;
    try {
      c = this.#unsynced('record the outcome', () => this.#commitOutcomes(entries));
    } catch (e) {
      return failAll(entries.length, 'record the outcome', e);
    }
    if (!c.committed) return c.results;
    try {
      const head = this.#hooks.followed(c.appended);
      await walSync.sync();
      this.#hooks.synced(head, false);
    } catch (e) {
      // Committed, but not known to be on disk: the agent is told (outcome_durable: false); the claim stays, so nothing re-runs.
      const err = journalError('activity', 'make the outcome durable', e);
      const told = new PosternError(err.code, err.message, { details: { ...err.details, outcome_committed: true }, cause: e });
      return c.results.map((x) => (x.ok ? { ok: false, error: told } : x));
    }
    return c.results;
  }

  /** `fn`'s commit without its fsync (the caller awaits walSync); throws JOURNAL_UNAVAILABLE when the mode cannot be set. */
  #unsynced<T>(action: string, fn: () => T): T {
    guard('activity', action, () => this.#syncNormal.run());
    try {
      return fn();
    } finally {
      guard('activity', action, () => this.#syncFull.run());
    }
  }

  #commit<T>(action: string, fn: () => T): { readonly value: T; readonly appended: ChainHead | null } {
    return guard('activity', action, () =>
      this.#store.chain.write(() => {
        this.#hooks.check();
        return fn();
      }),
    );
  }

  /** One entry of a group commit, inside the commit's transaction: its own savepoint, rolled back alone on failure. */
  #entry<T>(action: string, fn: () => T): Settled<T> {
    try {
      return { ok: true, value: this.#store.chain.savepoint(fn) };
    } catch (e) {
      return { ok: false, error: journalError('activity', action, e) };
    }
  }

  #appendHead(kind: HeadKind, r: CallRecord, body: Omit<HeadBody, 'call'>, error_code: string | null): void {
    const call = callRecordOf(r);
    const text = toJsonText({ call, ...body });
    const { appended } = this.#commit(`record a ${kind} call`, () => this.#store.appendHead(kind, call, text, error_code, false));
    guard('activity', 'advance the anchor', () => this.#hooks.committed(false, appended));
  }

  /** Commits the intents, each in its own savepoint; `keyed`: whether one of them claimed a key (it must be anchored before it runs). */
  #commitIntents(rs: readonly Intent[]): Committed<IntentResult> & { keyed: boolean } {
    const store = this.#store;
    const prepared = rs.map(preparedIntent);
    let results: Settled<IntentResult>[];
    let appended: ChainHead | null;
    try {
      ({ value: results, appended } = this.#commit('record the intent', () =>
        prepared.map((p): Settled<IntentResult> => {
          if (p instanceof PosternError) return { ok: false, error: p };
          return this.#entry('record the intent', (): IntentResult => {
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
  }

  /** Commits the outcomes, each in its own savepoint, with the effect of each on its call's claim. */
  #commitOutcomes(entries: readonly OutcomeEntry[]): Committed<void> {
    const bodies = entries.map((x) => outcomeBody(x.outcome));
    try {
      const { value, appended } = this.#commit('record the outcome', () =>
        entries.map((x, i): Settled<void> => {
          const body = bodies[i]!;
          if (body instanceof PosternError) return { ok: false, error: body };
          return this.#entry('record the outcome', (): void => {
            this.#store.appendOutcome(x.call_id, body, () => claimEffect(x.outcome));
          });
        }),
      );
      return { committed: true, appended, results: value };
    } catch (e) {
      const err = journalError('activity', 'record the outcome', e);
      return { committed: false, appended: null, results: entries.map(() => ({ ok: false, error: err })) };
    }
  }
}
