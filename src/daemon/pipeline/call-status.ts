/**
 * The built-in read-only tool `postern_call_status`: after a timeout an agent
 * asks what became of a call instead of repeating it. It reports the status
 * of the most recent call with that idempotency key (optionally for one tool)
 * and never runs anything.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { CallView } from '../../journal/index.js';
import { PosternError } from '../../rules/errors.js';
import { successResult } from './respond.js';
import type { Services } from './context.js';
import type { Trail } from './trail.js';

export const CALL_STATUS_TOOL = 'postern_call_status';

export const callStatusTool = {
  name: CALL_STATUS_TOOL,
  description: 'Look up the outcome of an earlier call by its idempotency_key (read-only; never runs anything). Use it after a timeout instead of repeating the call.',
  inputSchema: {
    type: 'object',
    properties: {
      idempotency_key: { type: 'string', maxLength: 128 },
      tool: { type: 'string', maxLength: 64 },
    },
    required: ['idempotency_key'],
    additionalProperties: false,
  },
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
} as const;

/**
 * What is known of the call's effect: true or false when the journal knows,
 * `null` when it does not — a call recovered after a crash (its request may
 * have reached the target) or one still running. Unknown is never reported as
 * "not started": an agent that trusted that would repeat the action.
 */
function effectStarted(c: CallView): boolean | null {
  if (c.outcome !== null) return c.outcome.side_effect_started;
  if (c.status === 'in_progress') return null;
  return c.call.side_effect_started;
}

/** What `postern_call_status` reads of the services: the Activity journal and the outcomes not journaled yet. */
export type CallStatusServices = Pick<Services, 'journals' | 'pendingOutcomes'>;

export function callStatus(svc: CallStatusServices, args: Record<string, unknown>, trail: Trail): CallToolResult {
  trail.step('builtin:call_status');
  const key = args['idempotency_key'];
  const tool = args['tool'];
  const extra = Object.keys(args).filter((k) => k !== 'idempotency_key' && k !== 'tool');
  if (typeof key !== 'string' || key.length === 0 || key.length > 128 || (tool !== undefined && typeof tool !== 'string') || extra.length > 0) {
    throw new PosternError('VALIDATION_FAILED', 'postern_call_status takes { idempotency_key: string, tool?: string }');
  }
  // The call that ran (or is running) under the key, not later refusals or replays that named it.
  const calls = svc.journals.activity.listCalls({ idempotency_key: key, ...(typeof tool === 'string' ? { tool } : {}), limit: 50 });
  const c = calls.find((x) => x.status !== 'rejected' && x.status !== 'replayed') ?? calls[0];
  if (c === undefined) throw new PosternError('CALL_NOT_FOUND', 'no call with that idempotency_key was journaled');
  // Finished, but the outcome is not journaled yet (the journal was busy): say what is known.
  const pending = c.status === 'in_progress' ? svc.pendingOutcomes.pendingStatus(c.call.call_id)?.outcome : undefined;
  const facts = {
    call_id: c.call.call_id,
    tool: c.call.tool,
    status: pending?.status ?? c.status,
    error_code: pending === undefined ? (c.outcome?.error_code ?? c.rejection?.error_code ?? null) : (pending.error_code ?? null),
    side_effect_started: pending === undefined ? effectStarted(c) : pending.side_effect_started,
    revision_executed: c.call.revision_executed,
    at: c.journaled_at,
    ...(pending === undefined ? {} : { outcome_durable: false }),
  };
  return successResult(`call ${facts.call_id} (${facts.tool}): ${facts.status}`, facts);
}
