/**
 * Shared fixtures for the HTTP executor tests: credentials of every HTTP
 * kind with recognizable canary secrets, a request-spec builder, and a way
 * to capture the PosternError a call is refused with.
 */
import assert from 'node:assert/strict';
import type { HttpCredential, HttpRequestSpec } from '../../../../src/executors/http/index.js';
import type { ErrorCode } from '../../../../src/rules/errors.js';
import { PosternError } from '../../../../src/rules/errors.js';

export const CANARY = {
  token: 'tok_CANARY_bearer_9f8e7d',
  password: 'pw CANARY/basic+4c3b',
  header: 'hdr_CANARY_value_1a2b',
  query: 'q CANARY/query&=+7e6d',
} as const;

export const credentials: Record<'bearer' | 'basic' | 'header' | 'query', HttpCredential> = {
  bearer: { meta: { name: 'api-bearer', kind: 'http_bearer', fields: {} }, secret: { token: Buffer.from(CANARY.token) } },
  basic: { meta: { name: 'api-basic', kind: 'http_basic', fields: { username: 'alice' } }, secret: { password: Buffer.from(CANARY.password) } },
  header: { meta: { name: 'api-header', kind: 'http_header', fields: { header: 'X-Api-Key' } }, secret: { value: Buffer.from(CANARY.header) } },
  query: { meta: { name: 'api-query', kind: 'http_query', fields: { param: 'api_key' } }, secret: { value: Buffer.from(CANARY.query) } },
};

export function spec(origin: string, over: Partial<HttpRequestSpec> = {}): HttpRequestSpec {
  return { origin, method: 'GET', path: '/echo', query: [], headers: [], ...over };
}

/** The PosternError `p` rejects with; fails the test if it resolves or throws anything else. */
export async function refusal(p: Promise<unknown>, code?: ErrorCode): Promise<PosternError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof PosternError, `expected a PosternError, got ${String(e)}`);
    if (code !== undefined) assert.equal(e.code, code, e.message);
    return e;
  }
  return assert.fail('expected the call to be refused');
}

/** Every text an error exposes: message, details and code. */
export function errorText(e: PosternError): string {
  return `${e.code} ${e.message} ${JSON.stringify(e.details)}`;
}

/**
 * A pause of the fake target's slow routes that outlasts any test: the target
 * answers only after the client gave up (its pause ends when the client goes
 * away), so a timeout test never depends on which of two timers fires first.
 */
export const NEVER_MS = '600000';
