/**
 * Which revision of a tool a call was planned against — one rule
 * (docs/catalog.md, "Calls whose plan is unknown"), in this order:
 *
 * 1. the revision the call declares in `_meta` (`dev.postern/revision`);
 * 2. the revision this session was last shown (its `tools/list`, or the
 *    listing the `postern mcp` shim declared when it reconnected);
 * 3. the call declares the toolset in use (`dev.postern/toolset`): the
 *    revision the session's list shows (the current one, or a canary's
 *    control revision outside its cohort);
 * 4. otherwise the plan is unknown (a host may have cached the list across
 *    connections, or the call declares a toolset the daemon does not serve):
 *    it is never assumed current. It counts as planned against the oldest
 *    revision still served (not retired), so the `previous` policies between
 *    that one and the current one decide — adapted, pinned or refused with
 *    CONTRACT_STALE — exactly as for a client known to hold that revision.
 *    A tool with one served revision has nothing else to be planned against.
 *
 * What this returns is what the call says; plan.ts checks it against what
 * the session is served (contracts/calls/canary.ts `sessionPlan`) before anything
 * is decided from it. Pure: reads only its arguments.
 */
import type { Tool } from '../../../../contracts/index.js';
import { META_REVISION, META_TOOLSET } from '../../context.js';

type PlanSource = 'declared' | 'listed' | 'toolset' | 'unknown';

interface PlanOrigin {
  /** The planned revision; undefined means the current one. */
  readonly revision: number | undefined;
  readonly source: PlanSource;
}

/** The oldest revision still served: the first not retired (the current one when every older one is). */
export function oldestServed(tool: Tool): number {
  return (tool.revisions.find((r) => r.retired === undefined) ?? tool.current).revision;
}

export function planOrigin(tool: Tool, meta: Readonly<Record<string, unknown>>, seen: ReadonlyMap<string, number>, toolsetInUse: string): PlanOrigin {
  const declared = meta[META_REVISION];
  if (typeof declared === 'number' && Number.isInteger(declared)) return { revision: declared, source: 'declared' };
  const listed = seen.get(tool.name);
  if (listed !== undefined) return { revision: listed, source: 'listed' };
  if (meta[META_TOOLSET] === toolsetInUse) return { revision: undefined, source: 'toolset' };
  const oldest = oldestServed(tool);
  return { revision: oldest === tool.current.revision ? undefined : oldest, source: 'unknown' };
}
