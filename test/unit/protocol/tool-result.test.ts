/**
 * The advertised output schemas admit every tool error and every success,
 * under the validators MCP clients actually run: the SDK 1.x client's Ajv
 * (which checks `structuredContent` even when `isError`), and the SDK 2.x
 * client's Ajv and Cloudflare-worker validators. The envelope keeps its facts
 * whatever details an error carries. The e2e proof over real clients is
 * test/e2e/mcp-clients-errors.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AjvJsonSchemaValidator as AjvV1 } from '@modelcontextprotocol/sdk/validation/ajv';
import { AjvJsonSchemaValidator as AjvV2 } from '@modelcontextprotocol/client/validators/ajv';
import { CfWorkerJsonSchemaValidator } from '@modelcontextprotocol/client/validators/cf-worker';
import { ErrorCodes, type ErrorCode } from '../../../src/rules/errors.js';
import { toolErrorResult } from '../../../src/protocol/tool-result.js';
import { httpOutputSchema, sshOutputSchema } from '../../../src/daemon/pipeline/stages/outcome/result.js';

type Check = (schema: Record<string, unknown>, value: unknown) => boolean;
type Compiled = (value: unknown) => { valid: boolean };
/** One validator instance per client kind, each schema compiled once (as a client compiles a tool's schema once). */
function compiledOnce(compile: (schema: Record<string, unknown>) => Compiled): Check {
  const cache = new WeakMap<Record<string, unknown>, Compiled>();
  return (schema, value) => {
    let f = cache.get(schema);
    if (f === undefined) cache.set(schema, (f = compile(schema)));
    return f(value).valid;
  };
}
const v1 = new AjvV1();
const v2 = new AjvV2();
const cf = new CfWorkerJsonSchemaValidator();
const validators: [string, Check][] = [
  ['sdk-1.x ajv', compiledOnce((s) => v1.getValidator(s))],
  ['sdk-2.x ajv', compiledOnce((s) => v2.getValidator(s))],
  ['sdk-2.x cfworker', compiledOnce((s) => cf.getValidator(s))],
];

const declared = { type: 'object', properties: { ok: { const: true } }, required: ['ok'] };
const schemas: [string, Record<string, unknown>][] = [
  ['http', httpOutputSchema(undefined)],
  ['http + declared body', httpOutputSchema(declared)],
  ['ssh', sshOutputSchema(undefined)],
  ['ssh + declared stdout_json', sshOutputSchema(declared)],
];

const httpSuccess = { status: 200, headers: { 'content-type': 'application/json' }, body: { ok: true }, body_encoding: 'json', truncated: false, result_revision: 1, call_id: 'c1' };
const sshSuccess = { exit_code: 0, signal: null, stdout: '{"ok":true}', stderr: '', stdout_truncated: false, stderr_truncated: false, host_key_fingerprint: 'SHA256:x', result_revision: 1, call_id: 'c1', stdout_json: { ok: true } };

/** Details the codebase attaches to errors, including ones named like success fields. */
const detailVariants: Record<string, unknown>[] = [
  {},
  { field: 'title' },
  { fields: ['a', 'b'], revision: 2 },
  { host: 'h', port: 22, pinned_fingerprint: 'SHA256:a', offered_fingerprint: 'SHA256:b' },
  { phase: 'headers', timeout_ms: 300 },
  { seen_revision: 1, replacement: 'other' },
  // a detail may never replace an envelope key
  { error_code: 'nonsense', side_effect_started: 'maybe', required_action: 7, message: null },
];

describe('tool results against the advertised output schema', () => {
  for (const [vname, valid] of validators) {
    for (const [sname, schema] of schemas) {
      it(`${vname}, ${sname}: every error code, with every kind of detail, validates`, () => {
        for (const code of Object.keys(ErrorCodes) as ErrorCode[]) {
          for (const details of detailVariants) {
            for (const side of [false, true, 'unknown'] as const) {
              const r = toolErrorResult(code, 'm', side, { tool: 't', current_revision: 1, call_id: 'c', details });
              assert.ok(valid(schema, r.structuredContent), `${code} ${JSON.stringify(r.structuredContent)}`);
              assert.equal(r.structuredContent['error_code'], code);
              // Unknown is null, never false; OUTCOME_UNKNOWN is unknown whatever its caller passed.
              const expected = side === 'unknown' || code === 'OUTCOME_UNKNOWN' ? null : side;
              assert.equal(r.structuredContent['side_effect_started'], expected, code);
              assert.equal(r.structuredContent['outcome'], expected === null ? 'unknown' : undefined, code);
              assert.equal(r.structuredContent['required_action'], ErrorCodes[code].action);
            }
          }
          // The stand-in's errors carry no tool facts at all.
          assert.ok(valid(schema, toolErrorResult(code, 'm', false).structuredContent), code);
        }
      });

      it(`${vname}, ${sname}: a TARGET_ERROR carrying what the target answered validates even when it does not match the declared output`, () => {
        const facts = sname.startsWith('http') ? { ...httpSuccess, status: 500, body: { error: 'boom' } } : { ...sshSuccess, exit_code: 1, stdout: 'not json', stdout_json: undefined };
        const r = toolErrorResult('TARGET_ERROR', 'the target failed', true, { tool: 't', call_id: 'c1', current_revision: 1, extra: facts });
        assert.ok(valid(schema, JSON.parse(JSON.stringify(r.structuredContent))));
      });

      it(`${vname}, ${sname}: successes keep their requirements`, () => {
        const good = sname.startsWith('http') ? httpSuccess : sshSuccess;
        assert.ok(valid(schema, good));
        assert.ok(valid(schema, { ...good, replayed: true, replay_of: 'c0' }));
        const missing: Record<string, unknown> = { ...good };
        delete missing['result_revision'];
        assert.equal(valid(schema, missing), false, 'a success without result_revision is refused');
        if (sname.includes('declared')) {
          const wrong = sname.startsWith('http') ? { ...good, body: { ok: false } } : { ...good, stdout_json: { ok: false } };
          assert.equal(valid(schema, wrong), false, 'the declared output schema applies to successes');
        }
      });
    }
  }

  it('the advertised schema is one object with no unions', () => {
    for (const [, schema] of schemas) {
      assert.equal(schema['type'], 'object');
      assert.ok(!/"(anyOf|oneOf|allOf)"/.test(JSON.stringify(schema)));
    }
  });
});
