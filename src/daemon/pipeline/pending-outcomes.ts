/**
 * Outcomes that happened but could not be journaled yet (another process held
 * the journal's write lock past the busy timeout, say). The call's effect is
 * over and its result known, so:
 * - the agent gets the result, marked `outcome_durable: false`;
 * - the outcome is kept here and in a file beside the journal
 *   (`outcomes.pending.jsonl`, written durably before the agent is answered)
 *   and written again in the background with growing delays, then every
 *   10 s until it is journaled — never given up — each attempt not waiting on
 *   a lock (busy timeout 0) so the daemon never stalls on it;
 * - meanwhile a retry with the same key is answered from here — the stored
 *   result as a replay (also marked not durable), OUTCOME_UNKNOWN for an
 *   unknown outcome — never CALL_IN_PROGRESS for a call that has finished, and
 *   never a second run (the journal still holds the key's claim);
 * - at shutdown one last attempt is made; what is still pending then (or at a
 *   kill) stays in the file, and the next start journals it before its
 *   recovery runs (`readPendingOutcomes`), so a call that succeeded is never
 *   shown `outcome_unknown` because the journal was locked when it ended.
 *
 * The file holds what the journal would (the outcome as redacted for it),
 * mode 0600 in the journal's 0700 directory; it is rewritten whole after
 * every change and removed when nothing is pending.
 */
import { readFileSync } from 'node:fs';
import { atomicWriteFile, removeDurably } from '../../home/atomic-write.js';
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
type OutcomeWriter = (callId: string, outcome: OutcomeInput, busyTimeoutMs: number | undefined) => void;

/** Delays between attempts; the last one repeats until the outcome is journaled. */
const RETRY_DELAYS_MS: readonly number[] = [50, 100, 200, 400, 800, 1600, 3200, 5000, 10_000];

/** The file beside the journal that keeps pending outcomes across a stop or a kill. */
export const PENDING_OUTCOMES_FILE = 'outcomes.pending.jsonl';

/** The outcomes a stopped daemon kept (oldest first); [] when there is no file. Lines that do not parse are skipped. */
export function readPendingOutcomes(path: string): PendingOutcome[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  const out: PendingOutcome[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const p = JSON.parse(line) as PendingOutcome;
      if (typeof p.callId === 'string' && typeof p.outcome === 'object' && p.outcome !== null) out.push(p);
    } catch {
      // a torn line: its call is left to recovery (outcome_unknown, never re-run)
    }
  }
  return out;
}

/** Removes the file once what it held is journaled. */
export async function clearPendingOutcomes(path: string): Promise<void> {
  await removeDurably(path);
}

export class PendingOutcomes {
  readonly #byCall = new Map<string, PendingOutcome>();
  readonly #byKey = new Map<string, string>();
  readonly #timers = new Set<NodeJS.Timeout>();

  /** Saves of the file, one after another. */
  #saving: Promise<void> = Promise.resolve();

  constructor(
    private readonly write: OutcomeWriter,
    private readonly log: (line: string) => void,
    private readonly delays: readonly number[] = RETRY_DELAYS_MS,
    /** The durable copy (PENDING_OUTCOMES_FILE in the journal directory); none in-process. */
    private readonly file?: string,
  ) {}

  get size(): number {
    return this.#byCall.size;
  }

  /** Keeps `p` (durably, when a file is given) and starts writing it again in the background. */
  async add(p: PendingOutcome): Promise<void> {
    this.#byCall.set(p.callId, p);
    if (p.key !== null) this.#byKey.set(`${p.tool}\u0000${p.key}`, p.callId);
    this.#attempt(p.callId, 0);
    await this.#save();
  }

  /** Rewrites the file with what is pending now (removes it when nothing is); a failure is logged, the retries go on. */
  #save(): Promise<void> {
    const file = this.file;
    if (file === undefined) return Promise.resolve();
    this.#saving = this.#saving.then(async () => {
      const lines = [...this.#byCall.values()].map((p) => JSON.stringify(p));
      try {
        if (lines.length === 0) await removeDurably(file);
        else await atomicWriteFile(file, `${lines.join('\n')}\n`);
      } catch (e) {
        this.log(`pending outcomes: cannot keep them in ${file} (${isPosternError(e) ? e.code : 'error'}); they are retried from memory`);
      }
    });
    return this.#saving;
  }

  /** Waits for the file to say what is pending now (shutdown). */
  settled(): Promise<void> {
    return this.#saving;
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
    const delay = this.delays[Math.min(n, this.delays.length - 1)] ?? 10_000;
    if (n === this.delays.length) this.log(`outcome of call ${callId} still not journaled after ${n} retries: retried every ${delay} ms, and kept for the next start`);
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
    void this.#save();
    return true;
  }
}
