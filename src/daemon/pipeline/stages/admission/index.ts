/**
 * Admission: the arguments bounded and free of vault secrets, the tool
 * found, the idempotency key split off and present where the tool has
 * effects. `postern_call_status` is answered here. Nothing is planned yet.
 */
import { needsIdempotencyKey, splitIdempotencyKey } from '../../../../contracts/index.js';
import { clipLabel } from '../../../../rules/clip.js';
import { PosternError } from '../../../../rules/errors.js';
import { admitArguments } from './admit.js';
import { agentUserOf } from '../../agent-user.js';
import { callStatus, CALL_STATUS_TOOL, type CallStatusServices } from '../../call-status.js';
import type { Services } from '../../context.js';
import type { CallState } from '../call-state.js';
import { answer, next, refuse, type Step } from '../step.js';

/** What admission reads of the services (the built-in call status reads its own slice). */
type AdmissionServices = Pick<Services, 'idleness' | 'state' | 'config'> & CallStatusServices;

export function admission(call: CallState): Step {
  const { trail, req } = call;
  const svc: AdmissionServices = call.svc;
  svc.idleness.touch();
  trail.step('admit');
  const redactor = svc.state.redactor();
  const args = admitArguments(req.arguments, { maxBytes: svc.config.max_request_bytes, maxDepth: svc.config.max_depth });
  trail.raw(trail.redactor('arguments', redactor).redactValue(args));
  if (redactor.findSecret(args)) {
    return refuse(new PosternError('SECRET_IN_ARGUMENTS', 'the arguments contain a vault secret (or an encoding of one); Postern adds credentials itself'));
  }
  if (req.name === CALL_STATUS_TOOL) return answer(callStatus(svc, args, trail));

  const tool = call.snapshot.catalog.tools.get(req.name);
  if (tool === undefined) return refuse(new PosternError('TOOL_NOT_FOUND', `there is no tool "${clipLabel(req.name, 64)}"; list the tools again`));
  trail.currentRevision = tool.current.revision;
  const user = agentUserOf(call.session);
  if (tool.agentUsers !== undefined && (user === null || !tool.agentUsers.includes(user))) {
    return refuse(new PosternError('AGENT_USER_NOT_ALLOWED', `the OS user ${user === null ? `uid ${call.session.peer?.uid ?? '?'}` : clipLabel(user, 32)} may not call "${clipLabel(req.name, 64)}" (the catalog's agent_users)`));
  }

  const split = splitIdempotencyKey(args);
  if (split.kind === 'invalid_key') return refuse(new PosternError('VALIDATION_FAILED', split.problem, { details: { field: 'idempotency_key' } }));
  trail.key(split.key);
  if (needsIdempotencyKey(tool) && split.key === undefined) {
    return refuse(new PosternError('IDEMPOTENCY_KEY_REQUIRED', 'this tool has effects: pass a fresh idempotency_key (reuse it only to retry the same action)', { details: { field: 'idempotency_key' } }));
  }
  return next({ ...call, redactor, admitted: { tool, callArgs: split.args, key: split.key } });
}
