/**
 * The re-check of a call that waited (for an operator, or across any await)
 * while the accepted catalog may have changed. The call is planned again
 * from its raw arguments and the revision it was planned against, under the
 * catalog in use now, and compared with the plan it was admitted (and
 * approved) under:
 *
 * - same revision, same call digest (tool, revision, credential, normalized
 *   arguments, resolved request) and same authority → `same`: it may run;
 * - otherwise, when every revision accepted past the one it would have run
 *   declares `previous: migrate` → `migrated`: the new plan, which needs an
 *   approval of its own (an approval of the old arguments never covers new
 *   ones);
 * - otherwise → `stale`: CONTRACT_STALE, nothing run, with the reason (the
 *   revision is now rejected, retired, the authority widened, or the request
 *   would differ) and what the agent should do (list the tools again).
 *
 * Pure: nothing here reads the clock, the journal or the daemon state.
 */
import { authorityDigest, widensAuthority, type Catalog } from '../../../../contracts/index.js';
import { isPosternError, PosternError } from '../../../../rules/errors.js';
import type { CallPlan } from '../call-state.js';
import { planCall } from '../planning/plan.js';

export type Recheck =
  | { readonly kind: 'same' }
  | { readonly kind: 'migrated'; readonly plan: CallPlan }
  | { readonly kind: 'stale'; readonly reason: string; readonly error: PosternError };

function samePlan(a: CallPlan, b: CallPlan): boolean {
  return a.revision.revision === b.revision.revision && a.callDigest === b.callDigest && authorityDigest(a.authority) === authorityDigest(b.authority);
}

/** True when each link the new plan crosses beyond the revision the old plan ran declares `migrate` (and there is one). */
function migratesFrom(old: CallPlan, next: CallPlan): boolean {
  if (next.decision.kind !== 'bridge') return false;
  const beyond = next.decision.links.filter((l) => l.from.revision >= old.revision.revision);
  return beyond.length > 0 && beyond.every((l) => l.policy?.policy === 'migrate');
}

function stale(old: CallPlan, catalog: Catalog, reason: string, extra: Record<string, unknown> = {}): Recheck {
  const current = catalog.tools.get(old.tool.name)?.current.revision ?? null;
  const message = `${old.tool.name}: the accepted catalog changed while the call waited (${reason}); nothing was run. List the tools again and plan the call anew`;
  return {
    kind: 'stale',
    reason,
    error: new PosternError('CONTRACT_STALE', message, {
      details: { planned_revision: old.planned ?? old.revision.revision, admitted_revision: old.revision.revision, current_revision: current, ...extra },
    }),
  };
}

/** Compares `old` with the same call planned against `catalog` (the one in use now). */
export function recheckPlan(old: CallPlan, catalog: Catalog, args: unknown, key: string | undefined): Recheck {
  let next: CallPlan;
  try {
    next = planCall(catalog, { tool: old.tool.name, session: old.session, planned: old.planned ?? old.revision.revision, args, key });
  } catch (e) {
    if (!isPosternError(e)) throw e;
    const { replacement, reason } = e.details;
    return stale(old, catalog, `${e.code}: ${e.message}`, {
      refused_with: e.code,
      ...(typeof replacement === 'string' ? { replacement } : {}),
      ...(typeof reason === 'string' ? { reason } : {}),
    });
  }
  if (samePlan(old, next)) return { kind: 'same' };
  if (migratesFrom(old, next)) return { kind: 'migrated', plan: next };
  const w = widensAuthority(old.authority, next.authority);
  if (w.widens) return stale(old, catalog, `revision ${next.revision.revision} widens what the call reaches: ${w.reasons.join('; ')}`);
  if (next.revision.revision !== old.revision.revision) return stale(old, catalog, `it would now run revision ${next.revision.revision} instead of ${old.revision.revision}, which declares no migrate policy`);
  return stale(old, catalog, `revision ${old.revision.revision} would now send another request`);
}
