/**
 * The limits that apply to a call of a tool, and how a change of them is
 * classified. A tool's own `limits` win field by field over the defaults of
 * the target its revision calls. Raising or removing a limit gives the agent
 * more reach (an authority widening); adding or lowering one only narrows it.
 * Pure data; the counting is daemon/services/limits.ts.
 */
import { LimitNames, type Limits, type Revision, type Tool } from '../types.js';

/** The effective limits of `tool` when `revision` runs (its target's defaults under the tool's own). */
export function limitsOf(tool: Tool, revision: Revision = tool.current): Limits {
  return { ...(revision.action.target.limits ?? {}), ...(tool.limits ?? {}) };
}

/** True when `limits` sets no limit at all. */
export function unlimited(limits: Limits): boolean {
  return LimitNames.every((n) => limits[n] === undefined);
}

const show = (v: number | undefined): string => (v === undefined ? 'none' : String(v));

export interface LimitChanges {
  /** A limit raised or removed: the agent may do more. */
  readonly widened: readonly string[];
  /** A limit added or lowered. */
  readonly tightened: readonly string[];
}

/** How the limits went from `before` to `after`, one phrase per changed limit. */
export function limitChanges(before: Limits, after: Limits): LimitChanges {
  const widened: string[] = [];
  const tightened: string[] = [];
  for (const n of LimitNames) {
    const a: number | undefined = before[n];
    const b: number | undefined = after[n];
    if (a === b) continue;
    const text = `limit ${n} ${show(a)} → ${show(b)}`;
    if (a !== undefined && (b === undefined || b > a)) widened.push(text);
    else tightened.push(text);
  }
  return { widened, tightened };
}


