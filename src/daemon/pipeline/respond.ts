/**
 * What the agent gets back. Success: short text for the model plus
 * `structuredContent` matching the advertised output envelope. Failure:
 * `isError: true` with `structuredContent` holding the error code, a one-line
 * message, whether a side effect started and what has to happen next — facts,
 * not instructions. Both are shaped by `protocol/tool-result.ts`, the one home
 * of the envelope (the `postern mcp` stand-in uses it too). Everything here
 * has already been redacted.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { ErrorCodes, type ErrorCode, type PosternError } from '../../protocol/errors.js';
import { toolErrorResult, toolSuccessResult } from '../../protocol/tool-result.js';

export interface ErrorFacts {
  readonly tool: string | null;
  readonly current_revision: number | null;
  readonly call_id: string | null;
}

export function errorResult(err: PosternError, facts: ErrorFacts, extra: Record<string, unknown> = {}): CallToolResult {
  return toolErrorResult(err.code, err.message, err.sideEffectStarted, { ...facts, details: err.details, extra });
}

export function isErrorCode(s: unknown): s is ErrorCode {
  return typeof s === 'string' && Object.hasOwn(ErrorCodes, s);
}

export function successResult(summary: string, structured: Record<string, unknown>): CallToolResult {
  return toolSuccessResult(summary, structured);
}
