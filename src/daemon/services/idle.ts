/**
 * Idleness for the idle lock, measured on the monotonic clock: a wall-clock
 * step (NTP, a VM resume, an operator changing the date) neither locks a busy
 * daemon early nor keeps an idle one open.
 */
import type { Clock } from '../../clock/index.js';

export class IdleTracker {
  #last: number;

  constructor(
    private readonly clock: Clock,
    private readonly limitMs: number,
  ) {
    this.#last = clock.monotonicMs();
  }

  /** Something happened: a session started, a call or an approval moved. */
  touch(): void {
    this.#last = this.clock.monotonicMs();
  }

  /** True once `limitMs` of monotonic time passed since the last touch (never when the limit is 0). */
  expired(): boolean {
    return this.limitMs > 0 && this.clock.monotonicMs() - this.#last > this.limitMs;
  }
}
