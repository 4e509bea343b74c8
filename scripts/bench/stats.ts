/**
 * The benchmark parts' one home for their statistics: quantiles and medians
 * of samples, and the per-call latencies of sequential calls timed with the
 * monotonic clock.
 */
import { readFileSync } from 'node:fs';
import { systemClock } from '../../src/clock/index.js';

/** The q-quantile of `xs` (nearest rank, 0 ≤ q ≤ 1). */
export function quantile(xs: readonly number[], q: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

export const median = (xs: readonly number[]): number => quantile(xs, 0.5);

/** Per-call latencies (ms) of `n` sequential calls of `one`. */
export async function latencies(n: number, one: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = systemClock.monotonicMs();
    await one();
    out.push(systemClock.monotonicMs() - t0);
  }
  return out;
}

/**
 * A process's CPU time so far (user + system, ms), from /proc (Linux); 0 for
 * no pid. Clock ticks are 1/100 s on Linux, so measure spans of a second or more.
 */
export function processCpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  // Fields after the command name (which may hold spaces), from `state`: utime is 12th, stime 13th.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / CLOCK_TICKS;
}
const CLOCK_TICKS = 100;
