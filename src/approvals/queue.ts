/**
 * The queue of calls waiting for an operator. Every request resolves exactly
 * once — approved, denied, timed out, voided (vault locked / shutdown) or
 * cancelled by the client — and a second request never replaces the first
 * (each has its own id and its own promise). A verdict names the approval id
 * and may name the call digest it was shown; a digest that differs from the
 * pending call's is refused (APPROVAL_MISMATCH). A session-scoped approval is
 * refused for a card that only allows per-call approval. The cards of calls
 * that stopped waiting (APPROVAL_PENDING) are held in `parked` until the same
 * call comes back for them; voiding the queue voids those too. A card may
 * carry a stale check: after a catalog change the operator's view is told
 * which cards no longer match the accepted contract, and a waiting call that
 * re-plans withdraws its card (voided) before anything runs. A card too
 * large for one view is approved only by a verdict naming its presentation
 * as seen (APPROVAL_UNSEEN otherwise: src/protocol/operator/presentation.ts).
 * A verdict for a card no longer pending says what became of it (resolved.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock/index.js';
import type { Catalog } from '../contracts/index.js';
import { PosternError } from '../rules/errors.js';
import type { ApprovalCard, ApprovalDecision, OperatorVerdict, PresenceProof } from '../protocol/approvals.js';
import { checkSeen } from '../protocol/operator/presentation.js';
import { ParkedApprovals } from './parked.js';
import { approvalNotFound, ResolvedApprovals } from './resolved.js';

export type QueueEvent =
  | { readonly type: 'added'; readonly card: ApprovalCard }
  | { readonly type: 'resolved'; readonly id: string; readonly decision: ApprovalDecision };

interface Pending {
  readonly card: ApprovalCard;
  readonly settle: (d: ApprovalDecision) => void;
  readonly stale: StaleCheck | undefined;
}

/** Why the card's call no longer matches `catalog` (its contract changed while it waited), or null. */
export type StaleCheck = (catalog: Catalog) => string | null;

export type CardDraft = Omit<ApprovalCard, 'id' | 'requested_at' | 'expires_at' | 'annotations' | 'limits'> & { readonly annotations?: ApprovalCard['annotations']; readonly limits?: ApprovalCard['limits'] };

export class ApprovalQueue {
  readonly #pending = new Map<string, Pending>();
  readonly #listeners = new Set<(e: QueueEvent) => void>();
  readonly #now: () => Date;
  /** Cards whose call was answered APPROVAL_PENDING, kept for the same call's return. */
  readonly parked = new ParkedApprovals();
  /** What became of the last resolved cards (APPROVAL_NOT_FOUND says it). */
  readonly resolved = new ResolvedApprovals();

  constructor(clock: Clock) {
    this.#now = () => clock.now();
  }

  /**
   * Waits for a verdict. Resolves (never rejects) with the decision; a timeout
   * is a decision of its own, distinct from a human denial.
   */
  request(draft: CardDraft, opts: { timeoutMs: number; signal?: AbortSignal; stale?: StaleCheck }): { card: ApprovalCard; decision: Promise<ApprovalDecision> } {
    const now = this.#now();
    const card: ApprovalCard = {
      ...draft,
      annotations: draft.annotations ?? null,
      limits: draft.limits ?? [],
      id: randomUUID(),
      requested_at: now.toISOString(),
      expires_at: new Date(now.getTime() + opts.timeoutMs).toISOString(),
    };
    const decision = new Promise<ApprovalDecision>((resolve) => {
      let done = false;
      const finish = (d: ApprovalDecision): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
        this.#pending.delete(card.id);
        this.resolved.remember(card.id, d);
        resolve(d);
        this.#emit({ type: 'resolved', id: card.id, decision: d });
      };
      const timer = setTimeout(() => finish({ kind: 'timeout', at: this.#now().toISOString() }), opts.timeoutMs);
      const onAbort = (): void => finish({ kind: 'cancelled', at: this.#now().toISOString() });
      if (opts.signal?.aborted === true) {
        queueMicrotask(onAbort);
      } else {
        opts.signal?.addEventListener('abort', onAbort, { once: true });
      }
      this.#pending.set(card.id, { card, settle: finish, stale: opts.stale });
    });
    this.#emit({ type: 'added', card });
    return { card, decision };
  }

  list(): ApprovalCard[] {
    return [...this.#pending.values()].map((p) => p.card).sort((a, b) => a.requested_at.localeCompare(b.requested_at));
  }

  get(id: string): ApprovalCard | undefined {
    return this.#pending.get(id)?.card;
  }

  /**
   * Applies an operator's verdict. Throws APPROVAL_NOT_FOUND / APPROVAL_MISMATCH / APPROVAL_UNSEEN / USAGE.
   * `presence`: the WebAuthn assertion the approval page verified for this approval (recorded with it).
   */
  decide(id: string, verdict: OperatorVerdict, by: string, presence?: PresenceProof): ApprovalDecision {
    const p = this.#pending.get(id);
    if (p === undefined) throw approvalNotFound(id.slice(0, 64), this.resolved.get(id));
    const at = this.#now().toISOString();
    let d: ApprovalDecision;
    switch (verdict.verdict) {
      case 'approve':
        if (verdict.call_digest !== undefined && verdict.call_digest !== p.card.call_digest) {
          throw new PosternError('APPROVAL_MISMATCH', 'the approval was given for a different call; nothing was approved');
        }
        if (verdict.scope === 'session' && p.card.scope_allowed !== 'session') {
          throw new PosternError('USAGE', 'this call widens authority or needs per-call approval: approve it once, not for the session');
        }
        checkSeen(p.card, verdict);
        d = { kind: 'approved', scope: verdict.scope, by, at, ...(presence === undefined ? {} : { presence }) };
        break;
      case 'deny':
        d = { kind: 'denied', reason: verdict.reason, by, at };
        break;
    }
    p.settle(d);
    return d;
  }

  /** The pending cards whose call no longer matches `catalog`, with the reason (for the operator's view). */
  staleCards(catalog: Catalog): { id: string; reason: string }[] {
    const out: { id: string; reason: string }[] = [];
    for (const p of this.#pending.values()) {
      let reason: string | null = null;
      try {
        reason = p.stale?.(catalog) ?? null;
      } catch {
        reason = 'the call could not be checked against the accepted catalog';
      }
      if (reason !== null) out.push({ id: p.card.id, reason });
    }
    return out;
  }

  /** Takes a pending card out of the queue as voided (its call was re-planned); false when it is no longer pending. */
  withdraw(id: string, reason: string): boolean {
    const p = this.#pending.get(id);
    if (p === undefined) return false;
    p.settle({ kind: 'voided', reason, at: this.#now().toISOString() });
    return true;
  }

  /** Resolves every pending request as voided (vault locked, shutdown), and drops every parked one (decided or not). */
  voidAll(reason: string): number {
    const all = [...this.#pending.values()];
    const at = this.#now().toISOString();
    for (const p of all) p.settle({ kind: 'voided', reason, at });
    this.parked.clear();
    return all.length;
  }

  subscribe(listener: (e: QueueEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #emit(e: QueueEvent): void {
    for (const l of this.#listeners) {
      try {
        l(e);
      } catch {
        // A broken listener (a closed operator connection) must not stop the queue.
      }
    }
  }
}
