/**
 * Planning: which revision the agent planned against (origin.ts), the
 * call planned against the admission snapshot (plan.ts), and, when an
 * operator runs a pending catalog in shadow, what that catalog would have
 * done with the same call (journaled, never run).
 */
import { shownRevision } from '../../../../contracts/index.js';
import { planCall } from './plan.js';
import { planOrigin } from './origin.js';
import { shadowVerdict } from './shadow.js';
import type { Services } from '../../context.js';
import { need, type CallState } from '../call-state.js';
import { next, type Step } from '../step.js';

export function planning(call: CallState): Step {
  const { trail, req, session, snapshot } = call;
  const svc: Pick<Services, 'shadow'> = call.svc;
  const { tool, callArgs, key } = need(call, 'admitted');
  trail.step('resolve');
  const origin = planOrigin(tool, req.meta, session.seen, snapshot.toolset);
  const seen = origin.revision;
  if (origin.source === 'unknown' && seen !== undefined) trail.step(`plan:unknown→r${seen}`);
  // The tool list in use is, for this session, the revision it is shown (a canary's control revision outside the cohort).
  const seenOrShown = seen ?? shownRevision(tool, session.id).revision;
  trail.revisionSeen = seenOrShown;
  const plan = planCall(snapshot.catalog, { tool: tool.name, session: session.id, planned: seen, args: callArgs, key }, {
    step: (s) => trail.step(s),
    prepared: (normalized, revision, adapted) => trail.normalized(normalized, revision, adapted),
  });
  const candidate = svc.shadow();
  // Planned against the live revision it was shown: "current" means this catalog's current one, not the candidate's.
  if (candidate !== null) trail.shadow(shadowVerdict(candidate, { tool: tool.name, session: session.id, planned: seenOrShown, args: callArgs, key }, plan));
  trail.digest(plan.argsDigest);
  return next({ ...call, plan, planCatalog: snapshot.catalog });
}
