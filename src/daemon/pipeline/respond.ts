/**
 * What the agent gets back. Success: short text for the model plus
 * `structuredContent` matching the advertised output envelope. Failure:
 * `isError: true` with `structuredContent` holding the error code, a one-line
 * message, whether a side effect started and what has to happen next — facts,
 * not instructions. Everything here has already been redacted.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { ErrorCodes, type ErrorCode, type PosternError } from '../../protocol/errors.js';

export interface ErrorFacts {
  readonly tool: string | null;
  readonly current_revision: number | null;
  readonly call_id: string | null;
}

export function errorResult(err: PosternError, facts: ErrorFacts, extra: Record<string, unknown> = {}): CallToolResult {
  const structured = {
    error_code: err.code,
    message: err.message,
    tool: facts.tool,
    side_effect_started: err.sideEffectStarted,
    required_action: ErrorCodes[err.code].action,
    current_revision: facts.current_revision,
    call_id: facts.call_id,
    ...err.details,
    ...extra,
  };
  return {
    isError: true,
    content: [{ type: 'text', text: `${err.code}: ${err.message} (side effect started: ${err.sideEffectStarted ? 'yes' : 'no'})` }],
    structuredContent: structured,
  };
}

export function isErrorCode(s: unknown): s is ErrorCode {
  return typeof s === 'string' && Object.hasOwn(ErrorCodes, s);
}

export function successResult(summary: string, structured: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: summary }], structuredContent: structured };
}
