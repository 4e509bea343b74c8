/**
 * The approval: the operator (or a session grant, a pre-approval rule, or
 * the tool's policy) decides the plan as it stands (ask.ts: the card, the
 * wait and how it ends, returned as data). After the decision, and
 * any wait, the call is re-checked (../recheck/): a catalog accepted while it
 * waited that migrates its arguments makes a new call for the operator, asked
 * again (at most three times); a card withdrawn because the catalog changed
 * is asked again for the same plan; any other change refuses the call.
 */
import { PosternError } from '../../../../rules/errors.js';
import { askApproval, type ApprovalServices, type ApprovalSubject } from './ask.js';
import { checkCredential } from '../credential.js';
import { recheckPlan } from '../recheck/replan.js';
import { need, type CallPlan, type CallState } from '../call-state.js';
import { recheckNow } from '../recheck/index.js';
import { next, refuse, type Step } from '../step.js';

/** How many times one call's approval is asked again for migrated arguments before it is refused. */
const MAX_MIGRATIONS = 3;

export async function approval(first: CallState): Promise<Step> {
  let call = first;
  const { session, req, trail } = call;
  const svc: ApprovalServices = call.svc;
  for (let round = 0; round < MAX_MIGRATIONS; round++) {
    trail.step('approve');
    const plan = need(call, 'plan');
    const asked = await askApproval(svc, session, req, subjectOf(call, plan));
    if (asked.kind === 'ended') {
      trail.approval(asked.record);
      if (!asked.contractChanged) return refuse(asked.error);
    }
    /** The card was withdrawn because the catalog changed: nothing was approved, whatever the re-check says. */
    const withdrawn = asked.kind === 'ended';
    const r = recheckNow(call);
    if (r.changed) {
      trail.step('recheck');
      const check = r.result;
      if (check.kind === 'stale') {
        trail.step('recheck:stale');
        return refuse(check.error);
      }
      call = { ...call, planCatalog: r.catalog };
      if (check.kind === 'migrated') {
        // The new arguments are a new call for the operator; the old approval does not cover them.
        const p = check.plan;
        trail.step(`recheck:migrated→r${p.revision.revision}`);
        trail.normalized(p.normalized, p.revision.revision, p.adapted);
        trail.digest(p.argsDigest);
        checkCredential(p.action, svc.state.vault().get(p.action.credential));
        call = { ...call, plan: p };
        continue;
      }
    }
    if (withdrawn) continue; // asked again for the same plan (the catalog changed back meanwhile)
    trail.approval(asked.record);
    return next(call);
  }
  const tool = need(call, 'plan').tool.name;
  return refuse(new PosternError('CONTRACT_STALE', `${tool}: the contract kept changing while the call waited; nothing was run. List the tools again and plan the call anew`));
}

/** What the operator is asked to approve for `plan`; its guard re-plans it against each catalog accepted while it waits. */
function subjectOf(call: CallState, plan: CallPlan): ApprovalSubject {
  const { callArgs, key } = need(call, 'admitted');
  return {
    catalog: need(call, 'planCatalog'),
    tool: plan.tool,
    revision: plan.revision,
    authority: plan.authority,
    seenAuthority: plan.plannedAuthority,
    revisionSeen: plan.planned ?? null,
    action: plan.action,
    rawArguments: call.trail.rawArguments,
    normalized: plan.normalized,
    adapted: plan.adapted,
    key,
    callDigest: plan.callDigest,
    callId: call.trail.callId,
    limits: need(call, 'usage'),
    guard: (catalog) => {
      const r = recheckPlan(plan, catalog, callArgs, key);
      switch (r.kind) {
        case 'same':
          return null;
        case 'migrated':
          return `re-planned under revision ${r.plan.revision.revision} (migrate); a new approval is asked`;
        case 'stale':
          return r.reason;
      }
    },
  };
}
