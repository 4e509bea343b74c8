/**
 * The one shape of a tool result on the wire, success or error, and the one
 * `outputSchema` that admits both (DESIGN §6, §12). Everyone who answers a
 * `tools/call` — the daemon's pipeline and the `postern mcp` stand-in while the
 * daemon is away — shapes its errors here, so the envelope and its
 * `required_action` (always the code's own, from the error table) cannot
 * drift apart.
 *
 * Why one schema for both: clients on the TypeScript SDK 1.x (and the MCP
 * Inspector) validate `structuredContent` against the tool's `outputSchema`
 * even when `isError` is set, and throw -32602 on a mismatch — the agent then
 * never learns the error code. The advertised schema is therefore a superset
 * without unions: one `type: object` whose `properties` type every field of
 * either branch, and an `if`/`then`/`else` on the presence of `error_code`
 * that keeps each branch's requirements (the success fields and the
 * revision's declared output schema apply only when there is no `error_code`).
 * No branch forbids extra fields, so the facts an error carries (`field`,
 * `host`, fingerprints, the target's status and body…) always validate.
 *
 * Invariants: the envelope keys cannot be overridden by an error's details;
 * `side_effect_started` is true, false, or null when the effect is unknown
 * (never false for "unknown": an agent would read it as "it did not
 * happen"); this file is data and pure functions only (the shim imports it).
 */
import { ErrorCodes, type ErrorCode } from '../rules/errors.js';

type Json = Record<string, unknown>;

/** The facts every tool error carries, besides the error's own details. */
interface ToolErrorFacts {
  readonly tool?: string | null;
  readonly current_revision?: number | null;
  readonly call_id?: string | null;
  /** Facts that go beside the envelope (for TARGET_ERROR: what the target answered). */
  readonly extra?: Readonly<Json>;
  /** Details of the error (`field`, `host`, …); they never replace an envelope key. */
  readonly details?: Readonly<Json>;
}

/** An MCP `CallToolResult` as plain data. */
interface ToolResultData {
  [key: string]: unknown;
  readonly content: { type: 'text'; text: string }[];
  readonly structuredContent: Json;
  readonly isError?: true;
}

/**
 * What the envelope says of the effect. The one rule: unknown is `null`
 * (with `outcome: 'unknown'`), never `false`, and a code whose effect is
 * unknown by definition (`effect: 'unknown'` in the error table:
 * OUTCOME_UNKNOWN) is unknown whatever its caller passed.
 */
function effectOf(code: ErrorCode, sideEffect: boolean | 'unknown'): boolean | 'unknown' {
  const entry = ErrorCodes[code];
  return 'effect' in entry && entry.effect === 'unknown' ? 'unknown' : sideEffect;
}

/**
 * The tool error result for `code`. `sideEffect` is a fact: true, false, or
 * `'unknown'` (an effect may have started), written `side_effect_started:
 * null` with `outcome: 'unknown'`, as `postern_call_status` reports it.
 */
export function toolErrorResult(code: ErrorCode, message: string, sideEffectGiven: boolean | 'unknown', facts: ToolErrorFacts = {}): ToolResultData {
  const sideEffect = effectOf(code, sideEffectGiven);
  const envelope: Json = {
    error_code: code,
    message,
    tool: facts.tool ?? null,
    side_effect_started: sideEffect === 'unknown' ? null : sideEffect,
    required_action: ErrorCodes[code].action,
    current_revision: facts.current_revision ?? null,
    call_id: facts.call_id ?? null,
    ...(sideEffect === 'unknown' ? { outcome: 'unknown' } : {}),
  };
  const structured: Json = { ...facts.extra, ...facts.details, ...envelope };
  return {
    isError: true,
    content: [{ type: 'text', text: `${code}: ${message} (side effect started: ${sideEffect === 'unknown' ? 'unknown' : sideEffect ? 'yes' : 'no'})` }],
    structuredContent: structured,
  };
}

export function toolSuccessResult(summary: string, structured: Json): ToolResultData {
  return { content: [{ type: 'text', text: summary }], structuredContent: structured };
}

/** JSON Schema of the error envelope's fields. */
const ERROR_PROPERTIES: Json = {
  // A pattern, not the enum of every code: the same ~1.7 KB in each of a catalog's tools made a
  // 200-tool listing 60% error codes (README, "Errors an agent sees", lists them).
  error_code: { type: 'string', pattern: '^[A-Z][A-Z0-9_]{1,63}$', description: 'Present only when the call failed (isError): the stable Postern error code (e.g. APPROVAL_DENIED, CONTRACT_STALE).' },
  message: { type: 'string' },
  tool: { type: ['string', 'null'] },
  side_effect_started: { type: ['boolean', 'null'], description: 'Whether an effect started at the target; null when it is unknown (it may have happened).' },
  required_action: { type: 'string' },
  current_revision: { type: ['integer', 'null'] },
  call_id: { type: ['string', 'null'] },
};

const ERROR_REQUIRED = ['error_code', 'message', 'side_effect_started', 'required_action'];

/** What a tool's success result looks like: its fields, the required ones, and constraints that apply to success only. */
interface SuccessShape {
  /** Every success field, typed loosely enough to hold in an error that carries the same facts. */
  readonly properties: Readonly<Json>;
  readonly required: readonly string[];
  /** Stricter schemas for some fields, checked only on success (e.g. the revision's declared body schema). */
  readonly successOnly?: Readonly<Json>;
  /** A condition on successes only (e.g. the declared body schema when the body is JSON). */
  readonly successWhen?: { readonly if: Readonly<Json>; readonly then: Readonly<Json> };
}

/**
 * The `outputSchema` to advertise for a tool whose successes look like
 * `success`: it admits every success and every tool error of this module.
 */
export function advertisedOutputSchema(success: SuccessShape): Json {
  const properties: Json = { ...success.properties };
  for (const [k, v] of Object.entries(ERROR_PROPERTIES)) {
    // A success field that shares a name with an envelope field (`call_id`) takes the envelope's type, which admits both.
    properties[k] = v;
  }
  const onSuccess: Json = { required: [...success.required] };
  if (success.successOnly !== undefined && Object.keys(success.successOnly).length > 0) onSuccess['properties'] = { ...success.successOnly };
  if (success.successWhen !== undefined) {
    onSuccess['if'] = success.successWhen.if;
    onSuccess['then'] = success.successWhen.then;
  }
  return {
    type: 'object',
    properties,
    if: { required: ['error_code'] },
    then: { required: ERROR_REQUIRED },
    else: onSuccess,
  };
}
