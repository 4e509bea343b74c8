/**
 * Approvals whose call stopped waiting for them. A client that cannot be kept
 * waiting (it sent no progress token, so its own request timeout runs) is
 * answered APPROVAL_PENDING before that timeout, and its card stays in the
 * queue. The same call again — same session, tool, idempotency key and call
 * digest — takes the entry back and waits on it, or gets its decision at once.
 *
 * Invariants:
 * - nothing runs because of an entry by itself: only a call that takes it
 *   back can run, and an entry is taken at most once (a decision is consumed
 *   once);
 * - a decided entry is kept for `holdMs` after its decision, then dropped;
 *   a cancelled or voided one is dropped at once;
 * - dropping an undecided entry (session ended, vault locked) cancels its
 *   card, so the card leaves the queue at once.
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
  readonly sessionId: string;
  readonly wait: ApprovalWait;
  timer: NodeJS.Timeout | undefined;
}

export class ParkedApprovals {
  readonly #entries = new Map<string, Entry>();

  /** Keeps `wait` for a later call with the same `key`; an earlier entry under that key is cancelled. */
  park(key: string, sessionId: string, wait: ApprovalWait, holdMs: number): void {
    this.#drop(key);
    const entry: Entry = { sessionId, wait, timer: undefined };
    this.#entries.set(key, entry);
    void wait.decision.then((d) => {
      if (this.#entries.get(key) !== entry) return;
      if (d.kind === 'cancelled' || d.kind === 'voided') {
        this.#entries.delete(key);
        return;
      }
      entry.timer = setTimeout(() => {
        if (this.#entries.get(key) === entry) this.#entries.delete(key);
      }, holdMs);
      entry.timer.unref();
    });
  }

  /** The entry parked under `key`, removed from the store; undefined when there is none. */
  take(key: string): ApprovalWait | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#entries.delete(key);
    clearTimeout(entry.timer);
    return entry.wait;
  }

  /** The session ended: its entries go, and their cards leave the queue. */
  dropSession(sessionId: string): number {
    let n = 0;
    for (const [key, e] of [...this.#entries]) {
      if (e.sessionId !== sessionId) continue;
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
    e.wait.cancel();
  }
}
