/**
 * Clocks for tests. `ManualClock` moves only when a test says so: `advance`
 * moves both wall and monotonic time (time passing), `stepWall` moves the
 * wall clock alone (NTP, a VM resume, a changed date). `wallClock` wraps a
 * function that yields wall times (monotonic time then follows the system).
 */
import type { Clock } from '../../src/clock/index.js';
import { systemClock } from '../../src/clock/index.js';

export class ManualClock implements Clock {
  #wall: number;
  #mono: number;

  constructor(start: string | number, mono = 1_000_000) {
    this.#wall = typeof start === 'number' ? start : Date.parse(start);
    this.#mono = mono;
  }

  now(): Date {
    return new Date(this.#wall);
  }

  monotonicMs(): number {
    return this.#mono;
  }

  advance(ms: number): void {
    this.#wall += ms;
    this.#mono += ms;
  }

  stepWall(ms: number): void {
    this.#wall += ms;
  }
}

export function wallClock(now: () => Date): Clock {
  return { now, monotonicMs: () => systemClock.monotonicMs() };
}
