/**
 * Shapes an executor's result for the agent, redacted. HTTP 2xx → success
 * with `{ status, headers, body, body_encoding, truncated, decoded_from?,
 * result_revision }`
 * (the body given in the shape of the revision the call was planned against —
 * through the links' output adapters — and checked against that revision's
 * declared output schema: a mismatch is OUTPUT_CONTRACT_MISMATCH, the effect
 * having happened, naming the field); any other status → `isError` TARGET_ERROR with the same facts, since
 * the request did reach the target (side_effect_started: true). SSH exit 0 →
 * success with `{ exit_code, signal, stdout, stderr, *_truncated,
 * host_key_fingerprint, result_revision }` (and `stdout_json`, shaped and
 * checked the same way, when the planned revision declares an output schema); a non-zero exit, a signal or a command
 * cut off at the caps → TARGET_ERROR with the same facts. Output read past
 * a cap is redacted whole and then cut (Redactor.redactCut); JSON nested
 * deeper than MAX_RESULT_JSON_DEPTH is never parsed, so any response keeps
 * its facts.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { canonicalDigest, type Revision } from '../../../../contracts/index.js';
import type { Redactor } from '../../../../redaction/index.js';
import { withheldBody } from '../../../../executors/http/index.js';
import { PosternError } from '../../../../rules/errors.js';
import { exceedsJsonDepth } from '../../../../rules/json-depth.js';
import { advertisedOutputSchema } from '../../../../protocol/tool-result.js';
import { errorResult, successResult } from '../../respond.js';
import { META_OUTPUT_ADAPTED } from '../../context.js';
import type { ExecResult } from '../call-state.js';
import { checkOutput, mismatchError, type Checked, type Mismatch, type OutputContract } from './output-contract.js';

export { outputContractOf, type OutputContract } from './output-contract.js';

interface ShapedResult {
  readonly result: CallToolResult;
  readonly status: 'success' | 'error';
  readonly errorCode?: string;
  /** Output adapter steps that gave the result the planned revision's shape. */
  readonly outputAdapted?: readonly string[];
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

/**
 * The output schema advertised for HTTP tools. `body` is the revision's
 * declared output schema, when there is one, on success only: a TARGET_ERROR
 * carries whatever the target answered.
 */
export function httpOutputSchema(body: Record<string, unknown> | undefined): Record<string, unknown> {
  return advertisedOutputSchema({
    properties: {
      status: { type: 'integer' },
      headers: { type: 'object', additionalProperties: { type: 'string' } },
      body: {},
      body_encoding: { enum: ['json', 'text', 'base64', 'withheld'] },
      truncated: { type: 'boolean' },
      decoded_from: { type: 'string' },
      ...ENVELOPE,
    },
    required: ['status', 'headers', 'body', 'body_encoding', 'truncated', 'result_revision'],
    // The declared body schema holds for a success whose body is JSON; a withheld, textual or
    // over-deep body is a success too, and must still validate.
    ...(body === undefined ? {} : { successWhen: { if: { properties: { body_encoding: { const: 'json' } }, required: ['body_encoding'] }, then: { properties: { body } } } }),
  });
}

/** The output schema advertised for SSH tools; `stdout_json` is the revision's output schema when declared (success only). */
export function sshOutputSchema(output: Record<string, unknown> | undefined): Record<string, unknown> {
  return advertisedOutputSchema({
    properties: {
      exit_code: { type: ['integer', 'null'] },
      signal: { type: ['string', 'null'] },
      stdout: { type: 'string' },
      stderr: { type: 'string' },
      stdout_truncated: { type: 'boolean' },
      stderr_truncated: { type: 'boolean' },
      host_key_fingerprint: { type: 'string' },
      ...(output === undefined ? {} : { stdout_json: {} }),
      ...ENVELOPE,
    },
    required: ['exit_code', 'signal', 'stdout', 'stderr', 'stdout_truncated', 'stderr_truncated', 'result_revision'],
    ...(output === undefined ? {} : { successOnly: { stdout_json: output } }),
  });
}

interface Verdict {
  readonly facts: Record<string, unknown>;
  /** Why the call failed although the target was reached; undefined on success. */
  readonly failure: string | undefined;
  readonly mismatch: Mismatch | undefined;
  /** Output adapter steps applied to the result (empty when none). */
  readonly adapted: readonly string[];
  readonly summary: string;
}

const preview = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v)).slice(0, 500);

/** Output read past a cap is redacted whole, then cut there (a secret straddling the cut never leaks its start). */
function redactOutput(redactor: Redactor, value: unknown, truncatedAt: number | null): unknown {
  return truncatedAt === null || typeof value !== 'string' ? redactor.redactValue(value) : redactor.redactCut(value, truncatedAt);
}

/**
 * The body, redacted. A gzip file returned as the body is passed on only when
 * its contents decoded whole and hold no secret: its compressed bytes cannot
 * be redacted, and the agent can decompress them.
 */
function inspectedBody(r: Extract<ExecResult, { kind: 'http' }>['result'], redactor: Redactor): { body: unknown; body_encoding: string } {
  if (r.embedded !== null && (!r.embedded.complete || redactor.findSecret(r.embedded.text))) {
    const why = r.embedded.complete ? 'the gzip file it holds contains a secret' : 'the gzip file it holds could not be inspected whole';
    const withheld = withheldBody(why);
    return { body: withheld.value, body_encoding: withheld.kind };
  }
  return { body: redactOutput(redactor, r.body.value, r.truncated_at), body_encoding: r.body.kind };
}

function httpVerdict(r: Extract<ExecResult, { kind: 'http' }>['result'], revision: Revision, redactor: Redactor, callId: string, contract: OutputContract): Verdict {
  let facts: Record<string, unknown> = {
    ...(redactor.redactValue({ status: r.status, headers: r.headers }) as Record<string, unknown>),
    ...inspectedBody(r, redactor),
    truncated: r.truncated,
    ...(r.decoded_from === null ? {} : { decoded_from: r.decoded_from }),
    result_revision: revision.revision,
    call_id: callId,
  };
  let failure: string | undefined;
  let mismatch: Mismatch | undefined;
  let adapted: readonly string[] = [];
  if (r.status < 200 || r.status > 299) failure = `the target answered HTTP ${r.status}`;
  else {
    const checked = checkOutput(facts['body'], contract, 'body');
    adapted = checked.adapted;
    if (!checked.ok) mismatch = checked.mismatch;
    else if (checked.adapted.length > 0) facts = { ...facts, body: checked.value };
  }
  return { facts, failure, mismatch, adapted, summary: `HTTP ${r.status}${r.truncated ? ' (body truncated)' : ''}: ${preview(facts['body'])}` };
}

/** Exit status 0 is success; a non-zero status, a signal, or a command cut off at the output caps is not. */
function sshVerdict(r: Extract<ExecResult, { kind: 'ssh' }>['result'], revision: Revision, redactor: Redactor, callId: string, contract: OutputContract): Verdict {
  const base: Record<string, unknown> = {
    ...(redactor.redactValue({ exit_code: r.exit_code, signal: r.signal }) as Record<string, unknown>),
    stdout: redactOutput(redactor, r.stdout, r.stdout_truncated_at),
    stderr: redactOutput(redactor, r.stderr, r.stderr_truncated_at),
    stdout_truncated: r.stdout_truncated,
    stderr_truncated: r.stderr_truncated,
    host_key_fingerprint: redactor.redactText(r.host_key_fingerprint),
    result_revision: revision.revision,
    call_id: callId,
  };
  let failure: string | undefined;
  let mismatch: Mismatch | undefined;
  let adapted: readonly string[] = [];
  let facts = base;
  if (r.signal !== null) failure = `the command was ended by signal ${r.signal}`;
  else if (r.exit_code === null) failure = 'the command was cut off: both outputs reached their caps and the channel was closed';
  else if (r.exit_code !== 0) failure = `the command exited with status ${r.exit_code}`;
  else if (contract.planned.output !== undefined) {
    const parsed = parseJson(base['stdout']);
    const checked: Checked = parsed.ok ? checkOutput(parsed.value, contract, 'stdout_json') : { ok: false, mismatch: { field: 'stdout', expected: 'must be JSON', issues: [] }, adapted: [] };
    adapted = checked.adapted;
    if (checked.ok) facts = { ...base, stdout_json: checked.value };
    else mismatch = checked.mismatch;
  }
  const status = r.signal !== null ? `signal ${r.signal}` : `exit ${r.exit_code ?? 'none'}`;
  return { facts, failure, mismatch, adapted, summary: `${status}${r.stdout_truncated ? ' (stdout truncated)' : ''}: ${preview(facts['stdout'])}` };
}

function parseJson(v: unknown): { ok: true; value: unknown } | { ok: false } {
  if (typeof v !== 'string' || exceedsJsonDepth(v)) return { ok: false };
  try {
    return { ok: true, value: JSON.parse(v) as unknown };
  } catch {
    return { ok: false };
  }
}

/** The call's identifying facts that every result carries. */
interface CallFacts {
  readonly callId: string;
  readonly currentRevision: number | null;
}

/**
 * Shapes the executor's result. `contract` is the output contract of the
 * call's plan (default: the revision that ran, as planned).
 */
export function shapeResult(exec: ExecResult, revision: Revision, redactor: Redactor, trail: CallFacts, contract: OutputContract = { planned: revision, hops: [] }): ShapedResult {
  const v = exec.kind === 'http' ? httpVerdict(exec.result, revision, redactor, trail.callId, contract) : sshVerdict(exec.result, revision, redactor, trail.callId, contract);
  const facts4err = { tool: revision.tool, current_revision: trail.currentRevision, call_id: trail.callId };
  const error =
    v.failure !== undefined
      ? new PosternError('TARGET_ERROR', v.failure, { sideEffectStarted: true })
      : v.mismatch !== undefined
        ? mismatchError(v.mismatch, revision, contract, trail.currentRevision, v.adapted)
        : undefined;
  let result = error === undefined ? successResult(v.summary, v.facts) : errorResult(error, facts4err, v.facts);
  const adapted = error === undefined ? v.adapted : [];
  if (adapted.length > 0) {
    result = {
      ...result,
      content: [...result.content, { type: 'text', text: `(result given in the shape of revision ${contract.planned.revision}, which this call was planned against: ${adapted.join('; ')})` }],
      _meta: { ...(result._meta ?? {}), [META_OUTPUT_ADAPTED]: { from_revision: revision.revision, to_revision: contract.planned.revision, steps: [...adapted] } },
    };
  }
  return {
    result,
    status: error === undefined ? 'success' : 'error',
    ...(error === undefined ? {} : { errorCode: error.code }),
    ...(adapted.length > 0 ? { outputAdapted: adapted } : {}),
    digest: canonicalDigest(result),
  };
}
