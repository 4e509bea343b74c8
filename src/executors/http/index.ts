/**
 * The HTTP executor: runs one catalog-defined request on a fixed origin with
 * the credential injected, behind an SSRF-safe connector. See execute.ts for
 * the flow and its invariants.
 */
export { executeHttp } from './execute.js';
export { HttpPool } from './pool.js';
export type { HttpPoolOptions } from './pool.js';
export { withheldBody } from './response.js';
export type {
  HttpBody,
  HttpCredential,
  HttpExecOptions,
  HttpRequestSpec,
  HttpResult,
  HttpTimeouts,
  ResolveHost,
} from './types.js';
export { DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_TIMEOUTS } from './types.js';
export { classifyAddress, egressVerdict } from './ip-policy.js';
export type { AddressClass, BlockReason, EgressVerdict } from './ip-policy.js';
export { RESERVED_HEADERS } from './request-rules.js';
