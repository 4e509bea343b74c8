/**
 * One home for a benchmark part's figures. Each part (scripts/bench/*.ts)
 * prints its own lines and calls `report` once; when `BENCH_OUT` names a
 * directory (set by scripts/bench/run.ts, `npm run bench`) the figures are
 * also written there as `<part>.json`, so the runner can print one table and
 * write one JSON file. A figure is a median; `ratio` is to the part's named
 * baseline, measured side by side in the same run.
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';

export interface Figure {
  /** What was measured, e.g. "read call p50". */
  readonly name: string;
  readonly value: number;
  /** "ms", "calls/s", "fsyncs/call", "MB", "KiB", "×"… */
  readonly unit: string;
  /** The variant this one is compared with, e.g. "naive proxy". */
  readonly baseline?: string;
  readonly baselineValue?: number;
  /** value / baselineValue (or the inverse for throughput, as the part says). */
  readonly ratio?: number;
  /** The issue's target for this figure, as text ("≤ 1.2×"). */
  readonly target?: string;
}

export interface PartReport {
  readonly part: string;
  readonly title: string;
  readonly figures: readonly Figure[];
  /** The 1-minute load average when the part finished. */
  readonly load: number;
  readonly notes?: readonly string[];
}

export function report(part: string, title: string, figures: readonly Figure[], notes?: readonly string[]): PartReport {
  const r: PartReport = { part, title, figures, load: Number(loadavg()[0]!.toFixed(2)), ...(notes === undefined ? {} : { notes }) };
  const out = process.env['BENCH_OUT'];
  if (out !== undefined && out !== '') writeFileSync(join(out, `${part}.json`), `${JSON.stringify(r, null, 2)}\n`);
  return r;
}
