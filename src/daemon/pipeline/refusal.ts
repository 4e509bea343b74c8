/**
 * How a refused or failed call ends: journaled where it belongs — as the
 * outcome of its recorded intent (when none was written yet), or as a
 * rejection with its redacted raw arguments — and answered with a typed
 * error. Never throws; a failure that is not a PosternError is INTERNAL.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { isPosternError, PosternError } from '../../rules/errors.js';
import type { Services } from './context.js';
import { recordOutcome, recordRejection } from './journal-port.js';
import { callErrorResult } from './respond.js';
import type { Trail } from './trail.js';

export async function refusedCall(svc: Services, trail: Trail, e: unknown): Promise<CallToolResult> {
  const err = isPosternError(e) ? e : new PosternError('INTERNAL', 'an unexpected internal failure; nothing further was run', { sideEffectStarted: trail.effect, cause: e });
  const result = callErrorResult(trail, err);
  if (trail.intentRecorded) {
    if (!trail.outcomeRecorded) await recordOutcome(svc, trail, { status: 'error', side_effect_started: err.sideEffectStarted || trail.effect, error_code: err.code, duration_ms: 0, result });
  } else {
    recordRejection(svc, trail, err.code, result.content[0]?.type === 'text' ? result.content[0].text : err.code);
  }
  return result;
}
