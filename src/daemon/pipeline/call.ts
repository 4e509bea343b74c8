/**
 * One `tools/call`, start to finish, in the order of DESIGN §6:
 *   admit → resolve the contract → validate + normalize → resolve the action
 *   → idempotency → approval → re-check → journal intent → execute → redact
 *   → shape for the planned revision's output contract → journal outcome → respond.
 * Each decision lives in its own module; this file only sequences them and
 * records the trail. Invariants: a call is planned against one catalog
 * snapshot and never mixes two; after any wait it runs only if the catalog in
 * use then plans it the same way (recheck.ts) — a migrated plan needs its own
 * approval, anything else is refused; the last such check is synchronous with
 * the intent; nothing leaves the machine before the intent is committed; every rejection is
 * journaled with the (redacted) raw arguments; the result and every error are
 * redacted; this function never throws.
 */
import { randomUUID } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { deprecationOf, limitsOf, needsIdempotencyKey, splitIdempotencyKey, unlimited, type Tool } from '../../contracts/index.js';
import type { Catalog } from '../../contracts/index.js';
import type { Charge, LimitSubject } from '../limits.js';
import type { LimitUsage } from '../../protocol/limit-usage.js';
import { PosternError } from '../../protocol/errors.js';
import { clipLabel } from '../../protocol/clip.js';
import type { JournalApproval } from './trail.js';
import { Trail } from './trail.js';
import { admitArguments } from './admit.js';
import { decideIdempotency } from './idempotency.js';
import { ApprovalEnded, obtainApproval, type ApprovalSubject } from './approve.js';
import { checkCredential, executeAction } from './execute.js';
import { outputContractOf, shapeResult } from './result.js';
import { callStatus, CALL_STATUS_TOOL } from './call-status.js';
import { planCall, type CallPlan } from './plan.js';
import { planOrigin } from './plan-origin.js';
import { recheckPlan } from './recheck.js';
import { shadowVerdict } from './shadow.js';
import { callIdentity, echoIdentity } from './identity.js';
import type { CallRequest, Services, SessionInfo } from './context.js';

/** How many times one call's approval is asked again for migrated arguments before it is refused. */
const MAX_MIGRATIONS = 3;

export async function handleCall(svc: Services, session: SessionInfo, req: CallRequest): Promise<CallToolResult> {
  const snapshot = svc.state.snapshot();
  const trail = new Trail(svc, session, req.name, snapshot.handlerRevision, randomUUID());
  trail.identity(callIdentity(session, req.meta));
  const result = await runCall(svc, session, req, trail);
  const inUse = svc.state.snapshot();
  const tool = inUse.catalog.tools.get(req.name);
  const deprecation = tool === undefined || trail.revisionSeen === null ? undefined : deprecationOf(tool, trail.revisionSeen);
  const answer = echoIdentity(result, inUse.toolset, trail.revisionExecuted, deprecation);
  trail.ended();
  return answer;
}

async function runCall(svc: Services, session: SessionInfo, req: CallRequest, trail: Trail): Promise<CallToolResult> {
  svc.idleness.touch();
  const snapshot = svc.state.snapshot();
  try {
    trail.step('admit');
    const redactor = svc.state.redactor();
    const args = admitArguments(req.arguments, { maxBytes: svc.config.max_request_bytes, maxDepth: svc.config.max_depth });
    trail.raw(trail.redactor('arguments', redactor).redactValue(args));
    if (redactor.findSecret(args)) {
      throw new PosternError('SECRET_IN_ARGUMENTS', 'the arguments contain a vault secret (or an encoding of one); Postern adds credentials itself');
    }
    if (req.name === CALL_STATUS_TOOL) return callStatus(svc, args, trail);

    const tool = snapshot.catalog.tools.get(req.name);
    if (tool === undefined) throw new PosternError('TOOL_NOT_FOUND', `there is no tool "${clipLabel(req.name, 64)}"; list the tools again`);
    trail.currentRevision = tool.current.revision;

    const split = splitIdempotencyKey(args);
    if (split.kind === 'invalid_key') throw new PosternError('VALIDATION_FAILED', split.problem, { details: { field: 'idempotency_key' } });
    const key = split.key;
    trail.key(key);
    if (needsIdempotencyKey(tool) && key === undefined) {
      throw new PosternError('IDEMPOTENCY_KEY_REQUIRED', 'this tool has effects: pass a fresh idempotency_key (reuse it only to retry the same action)', { details: { field: 'idempotency_key' } });
    }

    trail.step('resolve');
    const origin = planOrigin(tool, req.meta, session.seen, snapshot.toolset);
    const seen = origin.revision;
    if (origin.source === 'unknown' && seen !== undefined) trail.step(`plan:unknown→r${seen}`);
    trail.revisionSeen = seen ?? tool.current.revision;
    let plan: CallPlan = planCall(snapshot.catalog, { tool: tool.name, planned: seen, args: split.args, key }, {
      step: (s) => trail.step(s),
      prepared: (normalized, revision, adapted) => trail.normalized(normalized, revision, adapted),
    });
    const candidate = svc.shadow?.() ?? null;
    // Planned against the live revision it was shown: "current" means this catalog's current one, not the candidate's.
    if (candidate !== null) trail.shadow(shadowVerdict(candidate, { tool: tool.name, planned: seen ?? tool.current.revision, args: split.args, key }, plan));
    const argsDigest = plan.argsDigest;
    /** The catalog the current plan was made against: a re-check is needed only once another is in use. */
    let planCatalog = snapshot.catalog;
    trail.digest(argsDigest);
    let reserved = false;
    if (key !== undefined) {
      trail.step('idempotency');
      const journaled = svc.journals.activity.findByKey(tool.name, key);
      // A finished call whose outcome is not journaled yet answers from memory.
      const pending = svc.pendingOutcomes.holder(tool.name, key);
      const holder = pending ?? journaled;
      const retention = { now: svc.clock.now(), days: svc.config.idempotency_retention_days };
      const idem = decideIdempotency(holder, svc.reservations.held(tool.name, key), argsDigest, retention);
      switch (idem.kind) {
        case 'replay':
          return trail.replay(idem.holder, pending === undefined);
        case 'expired':
          // Past the window the stored result is no longer served, and the key never runs again.
          throw new PosternError('IDEMPOTENCY_KEY_EXPIRED', `this idempotency_key completed more than ${retention.days} days ago; use a new key for a new action`);
        case 'conflict':
          throw new PosternError('IDEMPOTENCY_KEY_CONFLICT', 'this idempotency_key was already used with other arguments; use a new key for a new action');
        case 'in_progress':
          throw new PosternError('CALL_IN_PROGRESS', 'a call with this idempotency_key is still running; check it later with postern_call_status');
        case 'outcome_unknown':
          throw new PosternError('OUTCOME_UNKNOWN', 'an earlier call with this idempotency_key may or may not have run (the daemon stopped mid-call); it will not be run again — ask the operator to check the target');
        case 'proceed':
          if (!svc.reservations.reserve(tool.name, key, trail.callId, argsDigest)) {
            throw new PosternError('CALL_IN_PROGRESS', 'a call with this idempotency_key is still running; check it later with postern_call_status');
          }
          reserved = true;
      }
    }
    try {
      // A credential missing from the vault (e.g. after `secret rm`) fails the call before any approval; nothing is sent.
      await svc.vaultFile?.refresh();
      checkCredential(plan.action, svc.state.vault().get(plan.action.credential));
      // A call over a limit never reaches the approval queue; the check counts nothing.
      let usage: readonly LimitUsage[] = [];
      const limited = limitSubject(tool, plan, session.id, trail.runId);
      if (limited !== null && svc.limits !== undefined) {
        const c = svc.limits.check(limited);
        if (c.kind === 'limited') throw c.error;
        usage = c.usage;
        // `audit show` reads the usage each call saw in its decision path: "limits:per_session 3/10".
        for (const u of usage) trail.step(`limits:${u.limit} ${u.used}/${u.max}`);
      }

      let approval: JournalApproval = null;
      for (let round = 0; ; round++) {
        if (round >= MAX_MIGRATIONS) throw new PosternError('CONTRACT_STALE', `${tool.name}: the contract kept changing while the call waited; nothing was run. List the tools again and plan the call anew`);
        trail.step('approve');
        approval = null;
        const asked = plan;
        /** The card was withdrawn because the catalog changed: nothing was approved, whatever the re-check says. */
        let withdrawn = false;
        try {
          approval = await obtainApproval(svc, session, req, { ...approvalSubject(asked, planCatalog, trail.rawArguments, key, split.args), limits: usage });
        } catch (e) {
          if (!(e instanceof ApprovalEnded)) throw e;
          trail.approval(e.record);
          if (!e.contractChanged) throw e.error;
          withdrawn = true;
        }
        // After the decision (and any wait), the call must still match the catalog in use now.
        const inUse = svc.state.snapshot().catalog;
        if (inUse !== planCatalog) {
          trail.step('recheck');
          trail.currentRevision = inUse.tools.get(tool.name)?.current.revision ?? null;
          const check = recheckPlan(asked, inUse, split.args, key);
          if (check.kind === 'stale') {
            trail.step('recheck:stale');
            throw check.error;
          }
          planCatalog = inUse;
          if (check.kind === 'migrated') {
            // The new arguments are a new call for the operator; the old approval does not cover them.
            plan = check.plan;
            trail.step(`recheck:migrated→r${plan.revision.revision}`);
            trail.normalized(plan.normalized, plan.revision.revision, plan.adapted);
            trail.digest(plan.argsDigest);
            checkCredential(plan.action, svc.state.vault().get(plan.action.credential));
            continue;
          }
        }
        if (withdrawn) continue; // asked again for the same plan (the catalog changed back meanwhile)
        break;
      }
      trail.approval(approval);
      const action = plan.action;
      const revision = plan.revision;

      // The vault may have changed while the operator decided: take the value in force now, as a
      // copy this call keeps to the end (a rotate meanwhile never mixes secrets within one call).
      await svc.vaultFile?.refresh();
      const vault = svc.state.vault();
      const taken = svc.state.takeCredential(action.credential);
      try {
        const cred = checkCredential(action, taken);
        // The last await is behind us: one more synchronous check, so no catalog accepted meanwhile is missed.
        const inUse = svc.state.snapshot();
        const last = inUse.catalog === planCatalog ? ({ kind: 'same' } as const) : recheckPlan(plan, inUse.catalog, split.args, key);
        if (last.kind !== 'same') {
          trail.currentRevision = inUse.catalog.tools.get(tool.name)?.current.revision ?? null;
          trail.step('recheck:stale');
          throw last.kind === 'stale' ? last.error : new PosternError('CONTRACT_STALE', `${tool.name}: the accepted catalog changed just before the call ran; nothing was run. List the tools again and plan the call anew`);
        }
        const target = inUse.catalog.targets.get(action.target);

        // Charged now, synchronously with the checks above: concurrent calls cannot all slip under a limit.
        const subject = limitSubject(tool, plan, session.id, trail.runId);
        let charge: Charge | undefined;
        if (subject !== null && svc.limits !== undefined) {
          const charged = svc.limits.charge(subject);
          if (charged.kind === 'limited') {
            trail.step('limits:reached');
            throw charged.error;
          }
          charge = charged.charge;
        }
        try {
          trail.step('journal:intent');
          try {
            await trail.intent(action);
          } catch (e) {
            // No intent in the journal: the call did not run and costs nothing.
            if (!trail.intentRecorded) charge?.refund();
            throw e;
          }
          // The intent's commit may have waited (group commit): a catalog accepted meanwhile still stops the
          // call before its effect (the intent then gets an error outcome; nothing was sent).
          const committed = svc.state.snapshot().catalog;
          if (committed !== planCatalog) {
            const after = recheckPlan(plan, committed, split.args, key);
            if (after.kind !== 'same') {
              trail.currentRevision = committed.tools.get(tool.name)?.current.revision ?? null;
              trail.step('recheck:stale');
              throw after.kind === 'stale' ? after.error : new PosternError('CONTRACT_STALE', `${tool.name}: the accepted catalog changed just before the call ran; nothing was run. List the tools again and plan the call anew`);
            }
          }

          trail.step('execute');
          const started = svc.clock.monotonicMs();
          const exec = await executeAction(action, cred, {
            config: svc.config,
            allowPrivate: target?.kind === 'http' && target.privateNetwork === 'allowed',
            ssh: svc.ssh,
            ...(svc.http === undefined ? {} : { http: svc.http }),
            signal: req.signal,
            onRequestSent: () => trail.effectStarted(),
            // The redactor of the vault the credential was taken from: it knows the longest form of that value.
            readPastCapBytes: svc.state.redactor().readPastCapBytes,
            now: () => svc.clock.now(),
            ...(svc.tokens === undefined ? {} : { tokens: svc.tokens }),
            ...(svc.keepRefreshToken === undefined ? {} : { keepRefreshToken: svc.keepRefreshToken }),
          }).catch(async (e: unknown) => {
            throw await trail.failedExecution(e, svc.clock.monotonicMs() - started);
          });
          if (!vault.locked && vault.get(action.credential) !== undefined) vault.markUsed(action.credential);

          trail.step('redact');
          // The newest redactor covers the values of every generation since the unlock, this call's included.
          const shaped = shapeResult(exec, revision, trail.redactor('result', svc.state.locked ? redactor : svc.state.redactor()), trail, outputContractOf(plan.decision));
          return await trail.outcome(shaped, svc.clock.monotonicMs() - started, exec);
        } finally {
          charge?.end();
        }
      } finally {
        for (const part of Object.values(taken?.secret ?? {})) part.fill(0);
      }
    } finally {
      if (reserved && key !== undefined) svc.reservations.release(tool.name, key, trail.callId);
    }
  } catch (e) {
    return await trail.fail(e);
  }
}

/** The call as the limits see it, or null when the tool has none (contracts/limits.ts). */
function limitSubject(tool: Tool, plan: CallPlan, sessionId: string, runId: string | null): LimitSubject | null {
  const limits = limitsOf(tool, plan.revision);
  return unlimited(limits) ? null : { tool: tool.name, limits, sessionId, runId };
}

/** What the operator is asked to approve for `plan`; its guard re-plans it against each catalog accepted while it waits. */
function approvalSubject(plan: CallPlan, catalog: Catalog, rawArguments: unknown, key: string | undefined, args: unknown): ApprovalSubject {
  return {
    catalog,
    tool: plan.tool,
    revision: plan.revision,
    authority: plan.authority,
    seenAuthority: plan.plannedAuthority,
    revisionSeen: plan.planned ?? null,
    action: plan.action,
    rawArguments,
    normalized: plan.normalized,
    adapted: plan.adapted,
    key,
    callDigest: plan.callDigest,
    guard: (catalog) => {
      const r = recheckPlan(plan, catalog, args, key);
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

