/**
 * Group commit for the activity journal: the intents (and, separately, the
 * outcomes) that calls in flight ask for within one turn of the event loop
 * are written in one transaction, and the intents with one anchor flush,
 * instead of one each. With other calls in flight, the fsync that makes a
 * batch durable runs off the event loop (journal/wal-sync.ts) and is shared by
 * every batch committed while the previous fsync ran, so calls in flight keep
 * being served meanwhile; a call alone has it made inside its commit (as
 * synchronous=FULL does), which spares it a round trip to the thread pool.
 *
 * Invariants — the journal's promises, unchanged:
 * - a call's `intent()` resolves only once its intent (and key claim) is
 *   committed, on disk and anchored: nothing runs before that;
 * - a call's `outcome()` resolves only once its outcome is committed and on
 *   disk: the agent is not answered before that (or is told it is not durable);
 * - each entry is recorded exactly as a single write would record it, in its
 *   own savepoint, so one refused entry never fails the others; a failure of
 *   the whole commit fails each of its entries with that error;
 * - the wait is bounded: with no other call in flight a batch is flushed on
 *   the next loop turn; with others in flight it waits at most `windowMs`
 *   (1 ms) for their entries, which a lone fsync costs anyway. At most
 *   `maxBatch` entries go in one transaction.
 */
import type { ActivityJournal, CallRecord, IntentResult, OutcomeInput, Settled, TargetDetails } from '../../journal/index.js';

interface Waiting<I, T> {
  readonly input: I;
  readonly resolve: (v: T) => void;
  readonly reject: (e: unknown) => void;
}

const MAX_BATCH = 256;

export class GroupCommit {
  readonly #activity: ActivityJournal;
  readonly #maxBatch: number;
  #intents: Waiting<CallRecord & { target: TargetDetails }, IntentResult>[] = [];
  #outcomes: Waiting<{ call_id: string; outcome: OutcomeInput }, void>[] = [];
  #scheduled = false;
  /** Transactions written so far (for tests). */
  commits = 0;
  /** While set (a test's `holdIntents`), intents wait uncommitted; told once one does. */
  #held: { readonly told: () => void } | null = null;

  readonly #windowMs: number;
  readonly #busy: () => boolean;
  /**
   * `busy`: other calls are in flight, so more entries are likely on their way: a batch then
   * waits up to `windowMs` for them. Alone, it is flushed on the next loop turn.
   */
  constructor(activity: ActivityJournal, opts: { readonly maxBatch?: number; readonly windowMs?: number; readonly busy?: () => boolean } = {}) {
    this.#activity = activity;
    this.#maxBatch = opts.maxBatch ?? MAX_BATCH;
    this.#windowMs = opts.windowMs ?? 1;
    this.#busy = opts.busy ?? (() => false);
  }

  intent(r: CallRecord & { target: TargetDetails }): Promise<IntentResult> {
    return new Promise((resolve, reject) => {
      this.#intents.push({ input: r, resolve, reject });
      this.#schedule();
    });
  }

  outcome(call_id: string, outcome: OutcomeInput): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#outcomes.push({ input: { call_id, outcome }, resolve, reject });
      this.#schedule();
    });
  }

  /**
   * For tests: the intents asked for from now on wait, uncommitted, until
   * `release` — the window in which a commit that waited (group commit, a
   * slow disk) lets the world change under a call. `waiting` resolves once
   * an intent waits behind the hold.
   */
  holdIntents(): { readonly waiting: Promise<void>; release(): void } {
    let told!: () => void;
    const waiting = new Promise<void>((resolve) => (told = resolve));
    this.#held = { told };
    return {
      waiting,
      release: () => {
        this.#held = null;
        this.#schedule();
      },
    };
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    const run = (): void => {
      this.#scheduled = false;
      this.#flush();
    };
    if (this.#windowMs > 0 && this.#busy()) setTimeout(run, this.#windowMs);
    else setImmediate(run);
  }

  #flush(): void {
    // Outcomes first: they release keys and end calls the agents are waiting on.
    // Alone, the fsync is made inside the commit (no thread-pool round trip on the call's path);
    // with other calls in flight it is made off the loop and shared.
    const shared = this.#busy();
    const a = this.#activity;
    const outcomes = this.#outcomes.splice(0, this.#maxBatch);
    if (outcomes.length > 0) {
      const inputs = outcomes.map((w) => w.input);
      void settle(outcomes, () => (shared ? a.recordOutcomesAsync(inputs) : Promise.resolve(a.recordOutcomes(inputs))), () => this.commits++);
    }
    if (this.#held !== null) {
      if (this.#intents.length > 0) this.#held.told();
      if (this.#outcomes.length > 0) this.#schedule();
      return;
    }
    const intents = this.#intents.splice(0, this.#maxBatch);
    if (intents.length > 0) {
      const inputs = intents.map((w) => w.input);
      void settle(intents, () => (shared ? a.recordIntentsAsync(inputs) : Promise.resolve(a.recordIntents(inputs))), () => this.commits++);
    }
    if (this.#intents.length > 0 || this.#outcomes.length > 0) this.#schedule();
  }
}

/** Commits now (synchronously, in `write`'s first step) and settles every waiter once the batch is durable. */
async function settle<I, T>(batch: Waiting<I, T>[], write: () => Promise<Settled<T>[]>, counted: () => void): Promise<void> {
  let results: Settled<T>[];
  try {
    const pending = write();
    counted();
    results = await pending;
  } catch (e) {
    for (const w of batch) w.reject(e);
    return;
  }
  batch.forEach((w, i) => {
    const r = results[i];
    if (r === undefined) w.reject(new Error('group commit: no result for an entry'));
    else if (r.ok) w.resolve(r.value);
    else w.reject(r.error);
  });
}
