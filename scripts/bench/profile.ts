/**
 * The daemon's call profile between two readings (operator op `calls.profile`,
 * src/daemon/services/call-profile.ts): the mean time per call of each phase over the
 * calls made in between, for the benchmark parts that explain where a call's
 * time goes.
 */
import type { CallsProfileView } from '../../src/protocol/operator/index.js';
import type { Figure } from './report.js';

export interface PhaseTime {
  readonly phase: string;
  readonly per_call_ms: number;
}

export function phasesBetween(before: CallsProfileView, after: CallsProfileView): { calls: number; mean_ms: number; phases: PhaseTime[] } {
  const calls = after.calls - before.calls;
  const total = (v: CallsProfileView, phase: string): number => (v.phases.find((p) => p.phase === phase)?.per_call_ms ?? 0) * v.calls;
  const phases = after.phases.map((p) => ({ phase: p.phase, per_call_ms: calls === 0 ? 0 : (total(after, p.phase) - total(before, p.phase)) / calls })).filter((p) => p.per_call_ms >= 0.005);
  return { calls, mean_ms: calls === 0 ? 0 : (after.mean_ms * after.calls - before.mean_ms * before.calls) / calls, phases };
}

export function printPhases(title: string, p: ReturnType<typeof phasesBetween>): void {
  console.log(`  ${title} (${p.calls} calls, ${p.mean_ms.toFixed(3)} ms in the daemon per call):`);
  for (const x of p.phases) console.log(`    ${x.phase.padEnd(22)} ${x.per_call_ms.toFixed(3)} ms`);
}

export function phaseFigures(prefix: string, p: ReturnType<typeof phasesBetween>): Figure[] {
  return [{ name: `${prefix} in the daemon`, value: p.mean_ms, unit: 'ms/call' }, ...p.phases.map((x) => ({ name: `${prefix} phase ${x.phase}`, value: x.per_call_ms, unit: 'ms/call' }))];
}
