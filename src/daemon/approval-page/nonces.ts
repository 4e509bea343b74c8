/**
 * The single-use decision nonces of the approval page. Every card a device is
 * shown comes with a fresh nonce bound to (device, card, call digest); a
 * decision must bring one back. A nonce is consumed by its first use whatever
 * the outcome, so a decision replayed (the same request sent again, by the
 * page or anyone who saw it) is refused DECISION_REPLAYED; one issued for
 * another card or another device, or never issued, is DECISION_NONCE_INVALID.
 *
 * Invariants: nonces are 128 random bits; they expire after `ttlMs` on the
 * monotonic clock; at most `max` are kept (the oldest go first), used ones
 * included, so a replay is recognized for as long as the nonce would have
 * lived.
 */
import { randomBytes } from 'node:crypto';
import type { Clock } from '../../clock/index.js';

interface Issued {
  readonly device: string;
  readonly card: string;
  readonly digest: string;
  readonly at: number;
  used: boolean;
}

type NonceVerdict = { readonly kind: 'ok'; readonly digest: string } | { readonly kind: 'replayed' } | { readonly kind: 'invalid'; readonly why: string };

export class DecisionNonces {
  readonly #issued = new Map<string, Issued>();
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #max: number;

  constructor(clock: Clock, opts: { ttlMs: number; max?: number }) {
    this.#clock = clock;
    this.#ttlMs = opts.ttlMs;
    this.#max = opts.max ?? 8192;
  }

  issue(device: string, card: string, digest: string): string {
    const nonce = randomBytes(16).toString('hex');
    this.#issued.set(nonce, { device, card, digest, at: this.#clock.monotonicMs(), used: false });
    while (this.#issued.size > this.#max) {
      const oldest = this.#issued.keys().next();
      if (oldest.done === true) break;
      this.#issued.delete(oldest.value);
    }
    return nonce;
  }

  /** Consumes `nonce` for a decision by `device` on `card`. */
  take(nonce: string, device: string, card: string): NonceVerdict {
    const n = this.#issued.get(nonce);
    if (n === undefined || this.#clock.monotonicMs() - n.at > this.#ttlMs) return { kind: 'invalid', why: 'the decision carries no nonce this page issued (or an expired one): reload the page' };
    if (n.device !== device) return { kind: 'invalid', why: 'the nonce was issued to another device' };
    if (n.used) return { kind: 'replayed' };
    n.used = true;
    if (n.card !== card) return { kind: 'invalid', why: 'the nonce was issued for another card' };
    return { kind: 'ok', digest: n.digest };
  }
}
