/**
 * Shapes an executor's result for the agent, redacted. HTTP 2xx → success
 * with `{ status, headers, body, body_encoding, truncated, result_revision }`
 * (the body checked against the revision's declared output schema, when there
 * is one); any other status → `isError` TARGET_ERROR with the same facts, since
 * the request did reach the target (side_effect_started: true).
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { canonicalDigest, type Revision } from '../../contracts/index.js';
import type { Redactor } from '../../redaction/index.js';
import { PosternError } from '../../protocol/errors.js';
import { errorResult, successResult } from './respond.js';
import type { ExecResult } from './execute.js';
import type { Trail } from './trail.js';

export interface ShapedResult {
  readonly result: CallToolResult;
  readonly status: 'success' | 'error';
  readonly errorCode?: string;
  readonly digest: string;
}

/** The output envelope advertised for HTTP tools; `body` is the revision's output schema when declared. */
export function httpOutputSchema(body: Record<string, unknown> | undefined): Record<string, unknown> {
  return {
    type: 'object',
    properties: {
      status: { type: 'integer' },
      headers: { type: 'object', additionalProperties: { type: 'string' } },
      body: body ?? {},
      body_encoding: { enum: ['json', 'text', 'base64'] },
      truncated: { type: 'boolean' },
      result_revision: { type: 'integer' },
      call_id: { type: 'string' },
      replayed: { type: 'boolean' },
      replay_of: { type: 'string' },
    },
    required: ['status', 'headers', 'body', 'body_encoding', 'truncated', 'result_revision'],
  };
}

export function shapeResult(exec: ExecResult, revision: Revision, redactor: Redactor, trail: Trail): ShapedResult {
  const r = exec.result;
  const facts = redactor.redactValue({
    status: r.status,
    headers: r.headers,
    body: r.body.value,
    body_encoding: r.body.kind,
    truncated: r.truncated,
    result_revision: revision.revision,
    call_id: trail.callId,
  }) as Record<string, unknown>;
  const facts4err = { tool: revision.tool, current_revision: trail.currentRevision, call_id: trail.callId };
  let result: CallToolResult;
  let errorCode: string | undefined;
  if (r.status < 200 || r.status > 299) {
    errorCode = 'TARGET_ERROR';
    result = errorResult(new PosternError('TARGET_ERROR', `the target answered HTTP ${r.status}`, { sideEffectStarted: true }), facts4err, facts);
  } else if (revision.output !== undefined && !revision.output.zod.safeParse(facts['body']).success) {
    errorCode = 'TARGET_ERROR';
    result = errorResult(new PosternError('TARGET_ERROR', `the target's response does not match the output schema of revision ${revision.revision}`, { sideEffectStarted: true }), facts4err, facts);
  } else {
    const summary = `HTTP ${r.status}${r.truncated ? ' (body truncated)' : ''}: ${typeof facts['body'] === 'string' ? facts['body'].slice(0, 500) : JSON.stringify(facts['body']).slice(0, 500)}`;
    result = successResult(summary, facts);
  }
  return { result, status: errorCode === undefined ? 'success' : 'error', ...(errorCode === undefined ? {} : { errorCode }), digest: canonicalDigest(result) };
}
