/**
 * A gateway exec request as a call: the pipeline's own stages (stages/),
 * with the three that know about MCP tools replaced — admission and planning
 * (the exec request judged against the target's `gateway:` entry, plan.ts),
 * the approval (the same queue, cards, grants and unattended rules, with a
 * guard that re-plans the exec request), and the re-checks (the same request
 * planned again under the catalog in use) — and the execution replaced by the
 * relay (relay.ts). The order is CALL_STAGES's: nothing is asked of the
 * operator for a request that cannot run, nothing reaches the destination
 * before the intent is journaled, and a catalog accepted meanwhile that
 * changes what the request would run stops it.
 *
 * A gateway call has no idempotency key: Postern never repeats an exec
 * request (a new `git push` is a new call), so a crash leaves the call
 * `outcome_unknown` in the journal, never run twice by Postern.
 */
import { PosternError } from '../../rules/errors.js';
import { askApproval, type ApprovalSubject } from '../pipeline/stages/approval/ask.js';
import { need } from '../pipeline/stages/call-state.js';
import { credentialPresent, takeCredential } from '../pipeline/stages/credential.js';
import { intent } from '../pipeline/stages/intent.js';
import { limitsCharge, limitsCheck } from '../pipeline/stages/limits.js';
import { outcome } from '../pipeline/stages/outcome/index.js';
import { next, refuse, type Stage, type Step } from '../pipeline/stages/step.js';
import { planGatewayExec, replanReason, type GatewayPlan, type GatewayRequest } from './plan.js';

/** Where one gateway call keeps its plan (the stages are made per request). */
interface GatewayCallBox {
  planned: GatewayPlan | null;
}

function admitAndPlan(g: GatewayRequest, requestedBy: string, box: GatewayCallBox): Stage {
  return (call) => {
    const { svc, trail, session, snapshot } = call;
    svc.idleness.touch();
    trail.step('admit');
    const redactor = svc.state.redactor();
    trail.raw(trail.redactor('arguments', redactor).redactValue({ target: g.target, exec: g.exec }));
    if (redactor.findSecret(g.exec) || redactor.findSecret(g.target)) {
      return refuse(new PosternError('SECRET_IN_ARGUMENTS', 'the exec request contains a vault secret (or an encoding of one); nothing was sent'));
    }
    trail.step('resolve:gateway');
    const planned = planGatewayExec(snapshot.catalog, g, session.id);
    box.planned = planned;
    const { plan } = planned;
    trail.currentRevision = 1;
    trail.revisionSeen = 1;
    // The card and `audit show` read the summary first: `git push to github.com:org/repo.git as git (key deploy)`;
    // then the request, and the process that sent it (agent text, context only: escaped wherever shown).
    trail.raw(trail.redactor('arguments', redactor).redactValue({ gateway: planned.summary, target: g.target, exec: g.exec, requested_by: requestedBy }));
    trail.normalized(plan.normalized, 1, []);
    trail.digest(plan.argsDigest);
    return next({ ...call, redactor, admitted: { tool: plan.tool, callArgs: g, key: undefined }, plan, planCatalog: snapshot.catalog });
  };
}

/** A stage: the call goes on only while the catalog in use plans the request the same way. */
function stillSame(g: GatewayRequest, box: GatewayCallBox): Stage {
  return (call) => {
    const inUse = call.svc.state.snapshot().catalog;
    if (inUse === need(call, 'planCatalog')) return next(call);
    const planned = box.planned;
    const why = planned === null ? 'it was never planned' : replanReason(planned, inUse, g);
    if (why === null) return next({ ...call, planCatalog: inUse });
    call.trail.step('recheck:stale');
    call.trail.notExecuted();
    return refuse(new PosternError('CONTRACT_STALE', `the accepted catalog changed before the request ran (${why}); nothing was sent`));
  };
}

function approvalStage(g: GatewayRequest, box: GatewayCallBox): Stage {
  return async (call): Promise<Step> => {
    const { svc, session, req, trail } = call;
    trail.step('approve');
    const plan = need(call, 'plan');
    const planned = box.planned;
    if (planned === null) throw new PosternError('INTERNAL', 'gateway call stage order: no plan');
    const subject: ApprovalSubject = {
      catalog: need(call, 'planCatalog'),
      tool: plan.tool,
      revision: plan.revision,
      authority: plan.authority,
      seenAuthority: undefined,
      revisionSeen: null,
      action: plan.action,
      rawArguments: trail.rawArguments,
      normalized: plan.normalized,
      adapted: [],
      key: undefined,
      callDigest: plan.callDigest,
      callId: trail.callId,
      limits: need(call, 'usage'),
      guard: (catalog) => replanReason(planned, catalog, g),
    };
    // How asking ended is data: an ending refuses the call with its own error, recorded on the trail either way.
    const asked = await askApproval(svc, session, req, subject);
    trail.approval(asked.record);
    if (asked.kind === 'ended') return refuse(asked.error);
    return stillSame(g, box)(call);
  };
}

/** The stages of one gateway exec request; `requestedBy` the card's context line; `relay` is the execution (relay.ts). */
export function gatewayStages(g: GatewayRequest, requestedBy: string, relay: Stage): readonly (readonly [string, Stage])[] {
  const box: GatewayCallBox = { planned: null };
  return [
    ['gateway admission', admitAndPlan(g, requestedBy, box)],
    ['credential present', credentialPresent],
    ['limits check', limitsCheck],
    ['approval', approvalStage(g, box)],
    ['take credential', takeCredential],
    ['re-check before the charge', stillSame(g, box)],
    ['limits charge', limitsCharge],
    ['intent', intent],
    ['re-check after the intent', stillSame(g, box)],
    ['relay', relay],
    ['outcome', outcome],
  ];
}
