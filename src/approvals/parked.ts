/**
 * Approvals whose call stopped waiting for them. A client that cannot be kept
 * waiting (it sent no progress token, so its own request timeout runs) is
 * answered APPROVAL_PENDING before that timeout, and its card stays in the
 * queue. The same call again — same tool, idempotency key and call digest,
 * from any session (a keyless call: from the same session only) — takes the
 * entry back and waits on it, or gets its decision at once.
 *
 * Invariants:
 * - nothing runs because of an entry by itself: only a call that takes it
 *   back can run, and an entry is taken at most once (a decision is consumed
 *   once);
 * - a decided entry is kept for `holdMs` after its decision, then dropped;
 *   a cancelled or voided one is dropped at once;
 * - an entry keeps its card until the card's own time runs out, also when
 *   the session that opened it ends; only an entry bound to its session (a
 *   keyless call) is dropped with it, and dropping an undecided entry
 *   (that, or a locked vault) cancels its card, so it leaves the queue;
 * - an entry that leaves the store without being taken reports its decision
 *   once (`unclaimed`), so the pending call's end can be journaled.
 */
import type { ApprovalCard, ApprovalDecision } from '../protocol/approvals.js';

/** A card and the promise of its decision, as a waiting call holds them. */
export interface ApprovalWait {
  readonly card: ApprovalCard;
  readonly decision: Promise<ApprovalDecision>;
  /** Cancels the card if it is still pending (its decision becomes `cancelled`). */
  readonly cancel: () => void;
}

interface Entry {
  /** The only session that may take it back and whose end drops it; null: any session, and it outlives its own. */
  readonly boundTo: string | null;
  readonly wait: ApprovalWait;
  readonly unclaimed: ((d: ApprovalDecision) => void) | undefined;
  timer: NodeJS.Timeout | undefined;
  decided: ApprovalDecision | undefined;
  /** Taken back or already reported: `unclaimed` is not called (again). */
  settled: boolean;
}

export class ParkedApprovals {
  readonly #entries = new Map<string, Entry>();

  /**
   * Keeps `wait` for a later call with the same `key`; an earlier entry under that key is cancelled.
   * `boundTo`: the session that alone may take it (a keyless call), or null. `unclaimed` hears the
   * decision of an entry that leaves without being taken.
   */
  park(key: string, boundTo: string | null, wait: ApprovalWait, holdMs: number, unclaimed?: (d: ApprovalDecision) => void): void {
    this.#drop(key);
    const entry: Entry = { boundTo, wait, unclaimed, timer: undefined, decided: undefined, settled: false };
    this.#entries.set(key, entry);
    void wait.decision.then((d) => {
      entry.decided = d;
      if (entry.settled) return;
      if (this.#entries.get(key) !== entry || d.kind === 'cancelled' || d.kind === 'voided') {
        if (this.#entries.get(key) === entry) this.#entries.delete(key);
        this.#report(entry, d);
        return;
      }
      entry.timer = setTimeout(() => {
        if (this.#entries.get(key) === entry) this.#entries.delete(key);
        this.#report(entry, d);
      }, holdMs);
      entry.timer.unref();
    });
  }

  /** The entry parked under `key`, removed from the store; undefined when there is none (or it is bound to another session). */
  take(key: string, sessionId: string): ApprovalWait | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined || (entry.boundTo !== null && entry.boundTo !== sessionId)) return undefined;
    this.#entries.delete(key);
    clearTimeout(entry.timer);
    entry.settled = true;
    return entry.wait;
  }

  /** The session ended: the entries bound to it go, and their cards leave the queue; the others keep their cards. */
  dropSession(sessionId: string): number {
    let n = 0;
    for (const [key, e] of [...this.#entries]) {
      if (e.boundTo !== sessionId) continue;
      this.#drop(key);
      n++;
    }
    return n;
  }

  /** Every entry goes (vault locked, shutdown): an approval given meanwhile is void. */
  clear(): number {
    const n = this.#entries.size;
    for (const key of [...this.#entries.keys()]) this.#drop(key);
    return n;
  }

  get size(): number {
    return this.#entries.size;
  }

  #drop(key: string): void {
    const e = this.#entries.get(key);
    if (e === undefined) return;
    this.#entries.delete(key);
    clearTimeout(e.timer);
    // Already decided (held for its call): that decision is how it ended; otherwise the cancellation reports it.
    if (e.decided !== undefined) this.#report(e, e.decided);
    e.wait.cancel();
  }

  #report(e: Entry, d: ApprovalDecision): void {
    if (e.settled) return;
    e.settled = true;
    e.unclaimed?.(d);
  }
}
