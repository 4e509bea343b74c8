/**
 * The one clock (DESIGN §12). Wall time stamps records (journal rows, card
 * expiry, credential metadata) and drives date decisions (retention,
 * deprecation); monotonic time measures durations, timeouts and idleness, so
 * a wall-clock step (NTP, a VM resume) never shortens or lengthens them.
 *
 * The composition root (a CLI command, the daemon) creates one `Clock` and
 * passes it to everything that needs the time; no other module reads it.
 */
import { performance } from 'node:perf_hooks';

export interface Clock {
  /** Wall time, for records and date decisions. */
  now(): Date;
  /** Milliseconds on a monotonic scale: only differences mean anything. */
  monotonicMs(): number;
}

export const systemClock: Clock = Object.freeze({
  now: (): Date => new Date(),
  monotonicMs: (): number => performance.now(),
});

/** Whole days between two wall times (fractional; negative when `later` is earlier). */
export function daysBetween(earlier: Date, later: Date): number {
  return (later.getTime() - earlier.getTime()) / 86_400_000;
}
