/**
 * One `tools/call`, start to finish, in the order of DESIGN §6:
 *   admit → resolve the contract → validate + normalize → resolve the action
 *   → idempotency → approval → journal intent → execute → redact
 *   → journal outcome → respond.
 * Each decision lives in its own module; this file only sequences them and
 * records the trail. Invariants: the catalog snapshot is read once; nothing
 * leaves the machine before the intent is committed; every rejection is
 * journaled with the (redacted) raw arguments; the result and every error are
 * redacted; this function never throws.
 */
import { randomUUID } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/server';
import {
  actionDigest,
  authorityOf,
  canonicalDigest,
  describeIssues,
  needsIdempotencyKey,
  prepareCall,
  resolveAction,
  resolveContract,
  splitIdempotencyKey,
  type Revision,
  type Tool,
} from '../../contracts/index.js';
import { PosternError } from '../../protocol/errors.js';
import { clipLabel } from '../../protocol/clip.js';
import type { JournalApproval } from './trail.js';
import { Trail } from './trail.js';
import { admitArguments } from './admit.js';
import { decideIdempotency } from './idempotency.js';
import { ApprovalEnded, obtainApproval } from './approve.js';
import { checkCredential, executeAction } from './execute.js';
import { shapeResult } from './result.js';
import { callStatus, CALL_STATUS_TOOL } from './call-status.js';
import { META_REVISION, type CallRequest, type Services, type SessionInfo } from './context.js';

function seenRevision(session: SessionInfo, req: CallRequest, tool: Tool): number | undefined {
  const declared = req.meta[META_REVISION];
  if (typeof declared === 'number' && Number.isInteger(declared)) return declared;
  return session.seen.get(tool.name);
}

export async function handleCall(svc: Services, session: SessionInfo, req: CallRequest): Promise<CallToolResult> {
  svc.idleness.touch();
  const snapshot = svc.state.snapshot();
  const trail = new Trail(svc, session, req.name, snapshot.handlerRevision, randomUUID());
  try {
    trail.step('admit');
    const redactor = svc.state.redactor();
    const args = admitArguments(req.arguments, { maxBytes: svc.config.max_request_bytes, maxDepth: svc.config.max_depth });
    trail.raw(redactor.redactValue(args));
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
    const seen = seenRevision(session, req, tool);
    trail.revisionSeen = seen ?? tool.current.revision;
    const decision = resolveContract(tool, seen);
    if (decision.kind === 'reject') {
      const code = decision.reason === 'revision_retired' || decision.reason === 'tool_retired' ? 'REVISION_RETIRED' : 'CONTRACT_STALE';
      throw new PosternError(code, decision.message, {
        details: { seen_revision: seen ?? null, ...(decision.replacement === undefined ? {} : { replacement: decision.replacement }) },
      });
    }
    trail.step(`resolve:${decision.kind}`);

    trail.step('validate');
    const prepared = prepareCall(decision, split.args);
    if (prepared.kind === 'reject') throw new PosternError('CONTRACT_STALE', prepared.message);
    if (prepared.kind === 'invalid') {
      throw new PosternError('VALIDATION_FAILED', `invalid arguments for revision ${prepared.revision}: ${describeIssues(prepared.issues)}`, {
        details: { fields: prepared.issues.map((i) => i.field), revision: prepared.revision },
      });
    }
    const revision: Revision = prepared.revision;
    trail.normalized(prepared.normalized, revision.revision, prepared.adapted);

    const resolved = resolveAction(revision, prepared.normalized, { idempotencyKey: key });
    if (resolved.kind === 'refused') {
      throw new PosternError('VALIDATION_FAILED', `${resolved.field}: ${resolved.problem}`, { details: { field: resolved.field } });
    }
    const action = resolved.action;
    if (action.kind === 'ssh' && action.hostKey.state !== 'pinned') {
      // Nothing could run: no approval is asked for and the host is not contacted.
      throw new PosternError('HOST_KEY_UNKNOWN', `the SSH target "${action.target}" has no pinned host key; the operator must run \`postern ssh trust ${action.target}\``, {
        details: { target: action.target, host: action.host, port: action.port },
      });
    }
    const argsDigest = canonicalDigest({ tool: tool.name, revision: revision.revision, arguments: prepared.normalized });
    const callDigest = canonicalDigest({ tool: tool.name, revision: revision.revision, credential: action.credential, arguments: prepared.normalized, action: actionDigest(action) });
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
      checkCredential(action, svc.state.vault().get(action.credential));

      trail.step('approve');
      const seenRev = decision.kind === 'current' ? undefined : decision.seen;
      const approval: JournalApproval = await obtainApproval(svc, session, req, {
        tool,
        revision,
        authority: authorityOf(tool, revision, snapshot.catalog),
        seenAuthority: seenRev === undefined ? undefined : authorityOf(tool, seenRev, snapshot.catalog),
        revisionSeen: seen ?? null,
        action,
        rawArguments: trail.rawArguments,
        normalized: prepared.normalized,
        adapted: prepared.adapted,
        key,
        callDigest,
      }).catch((e: unknown) => {
        if (e instanceof ApprovalEnded) {
          trail.approval(e.record);
          throw e.error;
        }
        throw e;
      });
      trail.approval(approval);

      // The vault may have changed while the operator decided: take the value in force now, as a
      // copy this call keeps to the end (a rotate meanwhile never mixes secrets within one call).
      await svc.vaultFile?.refresh();
      const vault = svc.state.vault();
      const taken = svc.state.takeCredential(action.credential);
      try {
        const cred = checkCredential(action, taken);
        const target = snapshot.catalog.targets.get(action.target);

        trail.step('journal:intent');
        await trail.intent(action);

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
        }).catch(async (e: unknown) => {
          throw await trail.failedExecution(e, svc.clock.monotonicMs() - started);
        });
        if (!vault.locked && vault.get(action.credential) !== undefined) vault.markUsed(action.credential);

        trail.step('redact');
        // The newest redactor covers the values of every generation since the unlock, this call's included.
        const shaped = shapeResult(exec, revision, svc.state.locked ? redactor : svc.state.redactor(), trail);
        return await trail.outcome(shaped, svc.clock.monotonicMs() - started, exec);
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

