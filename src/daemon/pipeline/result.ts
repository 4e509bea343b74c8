/**
 * Shapes an executor's result for the agent, redacted. HTTP 2xx → success
 * with `{ status, headers, body, body_encoding, truncated, result_revision }`
 * (the body checked against the revision's declared output schema, when there
 * is one); any other status → `isError` TARGET_ERROR with the same facts, since
 * the request did reach the target (side_effect_started: true). SSH exit 0 →
 * success with `{ exit_code, signal, stdout, stderr, *_truncated,
 * host_key_fingerprint, result_revision }` (and `stdout_json` when the
 * revision declares an output schema); a non-zero exit, a signal or a command
 * cut off at the caps → TARGET_ERROR with the same facts.
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

/** Fields every result carries (`replayed` / `replay_of` only on a replay). */
const ENVELOPE = {
  result_revision: { type: 'integer' },
  call_id: { type: 'string' },
  replayed: { type: 'boolean' },
  replay_of: { type: 'string' },
  /** false when the outcome is not journaled yet (the journal was busy; Postern retries). */
  outcome_durable: { type: 'boolean' },
};

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
      ...ENVELOPE,
    },
    required: ['status', 'headers', 'body', 'body_encoding', 'truncated', 'result_revision'],
  };
}

/** The output envelope advertised for SSH tools; `stdout_json` is the revision's output schema when declared. */
export function sshOutputSchema(output: Record<string, unknown> | undefined): Record<string, unknown> {
  return {
    type: 'object',
    properties: {
      exit_code: { type: ['integer', 'null'] },
      signal: { type: ['string', 'null'] },
      stdout: { type: 'string' },
      stderr: { type: 'string' },
      stdout_truncated: { type: 'boolean' },
      stderr_truncated: { type: 'boolean' },
      host_key_fingerprint: { type: 'string' },
      ...(output === undefined ? {} : { stdout_json: output }),
      ...ENVELOPE,
    },
    required: ['exit_code', 'signal', 'stdout', 'stderr', 'stdout_truncated', 'stderr_truncated', 'result_revision'],
  };
}

interface Verdict {
  readonly facts: Record<string, unknown>;
  /** Why the call failed although the target was reached; undefined on success. */
  readonly failure: string | undefined;
  readonly summary: string;
}

const preview = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v)).slice(0, 500);

function httpVerdict(r: Extract<ExecResult, { kind: 'http' }>['result'], revision: Revision, redactor: Redactor, callId: string): Verdict {
  const facts = redactor.redactValue({
    status: r.status,
    headers: r.headers,
    body: r.body.value,
    body_encoding: r.body.kind,
    truncated: r.truncated,
    result_revision: revision.revision,
    call_id: callId,
  }) as Record<string, unknown>;
  let failure: string | undefined;
  if (r.status < 200 || r.status > 299) failure = `the target answered HTTP ${r.status}`;
  else if (revision.output !== undefined && !revision.output.zod.safeParse(facts['body']).success) {
    failure = `the target's response does not match the output schema of revision ${revision.revision}`;
  }
  return { facts, failure, summary: `HTTP ${r.status}${r.truncated ? ' (body truncated)' : ''}: ${preview(facts['body'])}` };
}

/** Exit status 0 is success; a non-zero status, a signal, or a command cut off at the output caps is not. */
function sshVerdict(r: Extract<ExecResult, { kind: 'ssh' }>['result'], revision: Revision, redactor: Redactor, callId: string): Verdict {
  const base = redactor.redactValue({
    exit_code: r.exit_code,
    signal: r.signal,
    stdout: r.stdout,
    stderr: r.stderr,
    stdout_truncated: r.stdout_truncated,
    stderr_truncated: r.stderr_truncated,
    host_key_fingerprint: r.host_key_fingerprint,
    result_revision: revision.revision,
    call_id: callId,
  }) as Record<string, unknown>;
  let failure: string | undefined;
  let facts = base;
  if (r.signal !== null) failure = `the command was ended by signal ${r.signal}`;
  else if (r.exit_code === null) failure = 'the command was cut off: both outputs reached their caps and the channel was closed';
  else if (r.exit_code !== 0) failure = `the command exited with status ${r.exit_code}`;
  else if (revision.output !== undefined) {
    const parsed = parseJson(base['stdout']);
    if (parsed.ok && revision.output.zod.safeParse(parsed.value).success) facts = { ...base, stdout_json: parsed.value };
    else failure = `the command's output is not JSON matching the output schema of revision ${revision.revision}`;
  }
  const status = r.signal !== null ? `signal ${r.signal}` : `exit ${r.exit_code ?? 'none'}`;
  return { facts, failure, summary: `${status}${r.stdout_truncated ? ' (stdout truncated)' : ''}: ${preview(facts['stdout'])}` };
}

function parseJson(v: unknown): { ok: true; value: unknown } | { ok: false } {
  if (typeof v !== 'string') return { ok: false };
  try {
    return { ok: true, value: JSON.parse(v) as unknown };
  } catch {
    return { ok: false };
  }
}

export function shapeResult(exec: ExecResult, revision: Revision, redactor: Redactor, trail: Trail): ShapedResult {
  const v = exec.kind === 'http' ? httpVerdict(exec.result, revision, redactor, trail.callId) : sshVerdict(exec.result, revision, redactor, trail.callId);
  const facts4err = { tool: revision.tool, current_revision: trail.currentRevision, call_id: trail.callId };
  const result =
    v.failure === undefined ? successResult(v.summary, v.facts) : errorResult(new PosternError('TARGET_ERROR', v.failure, { sideEffectStarted: true }), facts4err, v.facts);
  return { result, status: v.failure === undefined ? 'success' : 'error', ...(v.failure === undefined ? {} : { errorCode: 'TARGET_ERROR' }), digest: canonicalDigest(result) };
}
