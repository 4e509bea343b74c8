/**
 * A fixed-window count per key on the monotonic clock: pairing attempts per
 * peer address, decisions per device. Bounded: at most `maxKeys` keys are
 * tracked; past that the oldest window is forgotten (a flood of new keys
 * cannot grow memory).
 */
import type { Clock } from '../../clock/index.js';

export class RateLimit {
  readonly #windows = new Map<string, { start: number; count: number }>();
  readonly #clock: Clock;
  readonly #max: number;
  readonly #windowMs: number;
  readonly #maxKeys: number;

  constructor(clock: Clock, opts: { max: number; windowMs: number; maxKeys?: number }) {
    this.#clock = clock;
    this.#max = opts.max;
    this.#windowMs = opts.windowMs;
    this.#maxKeys = opts.maxKeys ?? 1024;
  }

  /** True when one more is allowed now (and counts it); false when the key used up its window. */
  take(key: string): boolean {
    const now = this.#clock.monotonicMs();
    let w = this.#windows.get(key);
    if (w === undefined || now - w.start >= this.#windowMs) {
      this.#windows.delete(key);
      w = { start: now, count: 0 };
      this.#windows.set(key, w);
      while (this.#windows.size > this.#maxKeys) {
        const oldest = this.#windows.keys().next();
        if (oldest.done === true) break;
        this.#windows.delete(oldest.value);
      }
    }
    if (w.count >= this.#max) return false;
    w.count++;
    return true;
  }
}
