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
import { PosternError } from '../../rules/errors.js';
import { clipLabel } from '../../rules/clip.js';
import type { IdempotencyRecord } from '../../journal/index.js';
import type { Trail } from './trail.js';
import { toolErrorResult, toolSuccessResult } from '../../protocol/tool-result.js';

interface ErrorFacts {
  readonly tool: string | null;
  readonly current_revision: number | null;
  readonly call_id: string | null;
}

export function errorResult(err: PosternError, facts: ErrorFacts, extra: Record<string, unknown> = {}): CallToolResult {
  return toolErrorResult(err.code, err.message, err.sideEffectStarted, { ...facts, details: err.details, extra });
}

export function successResult(summary: string, structured: Record<string, unknown>): CallToolResult {
  return toolSuccessResult(summary, structured);
}

/** The agent's result, saying that its outcome is not journaled yet. */
export function notDurable(r: CallToolResult): CallToolResult {
  return {
    ...r,
    content: [...r.content, { type: 'text', text: '(the outcome could not be journaled yet: the journal is busy; Postern keeps retrying, and a retry with the same idempotency_key returns this result without running again)' }],
    structuredContent: { ...(r.structuredContent ?? {}), outcome_durable: false },
  };
}

/** Same key, same arguments, completed: the stored result, marked as replayed (and not durable yet, when answered from a pending outcome). */
export function replayedResult(holder: IdempotencyRecord, durable: boolean): CallToolResult {
  const stored = holder.result as CallToolResult | undefined;
  const sc = (stored?.structuredContent ?? {}) as Record<string, unknown>;
  const replayed: CallToolResult = {
    ...(stored ?? { content: [] }),
    content: [...(stored?.content ?? []), { type: 'text', text: `(replayed result of call ${holder.call_id}; nothing was run again)` }],
    structuredContent: { ...sc, replayed: true, replay_of: holder.call_id },
  };
  return durable ? replayed : notDurable(replayed);
}

/** The typed error of one call, its message redacted (a locked vault has nothing to redact with, and nothing secret was handled). */
export function callErrorResult(trail: Trail, err: PosternError): CallToolResult {
  let redact: (s: string) => string = (s) => s;
  try {
    const r = trail.redactor('error');
    redact = (s) => r.redactText(s);
  } catch {
    // locked
  }
  const safe = new PosternError(err.code, redact(err.message), { details: err.details, sideEffectStarted: err.sideEffectStarted });
  return errorResult(safe, { tool: clipLabel(trail.tool, 128), current_revision: trail.currentRevision, call_id: trail.callId });
}
