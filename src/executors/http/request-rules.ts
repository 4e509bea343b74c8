/**
 * What a request spec may contain: method, path, query and header syntax,
 * and the headers only the executor may set. Every check runs before any
 * network activity, so a refused request leaves nothing on the wire.
 *
 * Invariants:
 * - No CR, LF, NUL or other control byte reaches a header name or value.
 * - Reserved headers (credentials, framing, connection management, the
 *   idempotency key, the credential's own header) cannot be supplied in any
 *   letter case or `_`/`-` spelling; the rule is src/rules/http-headers.ts,
 *   the same the catalog applies. The error names the reserved header as
 *   Postern spells it and never quotes an agent-supplied value.
 */
import { PosternError } from '../../rules/errors.js';
import { headerNameProblem } from '../../rules/http-headers.js';
import { describeSegmentProblem, pathSegmentProblem } from '../../rules/path-segments.js';
import { queryNameProblem } from '../../rules/query-names.js';

/** The reserved-header rule has one home, shared with the catalog. */
export { RESERVED_HEADERS } from '../../rules/http-headers.js';

/** RFC 9110 token. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** RFC 9110 field-value bytes: HTAB, visible ASCII, space, obs-text; nothing else. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
/** RFC 3986 path: segments of pchar, percent-escapes well-formed. */
const PATH = /^(?:\/(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-Fa-f]{2})*)+$/;
/** Methods that reflect the request (and so the credential) or tunnel. */
const REFUSED_METHODS: ReadonlySet<string> = new Set(['CONNECT', 'TRACE', 'TRACK']);
const MAX_METHOD_CHARS = 32;

function invalid(message: string, details: Record<string, string | number> = {}): PosternError {
  return new PosternError('INPUT_INVALID', message, { details, sideEffectStarted: false });
}

export function isToken(s: string): boolean {
  return TOKEN.test(s);
}

export function isFieldValue(s: string): boolean {
  return FIELD_VALUE.test(s);
}

export function checkMethod(method: string): void {
  if (method.length > MAX_METHOD_CHARS || !TOKEN.test(method)) throw invalid('the HTTP method is not a valid token');
  if (REFUSED_METHODS.has(method.toUpperCase())) {
    throw invalid(`the HTTP method ${method.toUpperCase()} is not allowed`, { method: method.toUpperCase() });
  }
}

/** Paths that passed checkPath, which is pure (a tool's path is often the same call after call). Bounded, short paths only. */
const passedPaths = new Set<string>();
const MAX_PASSED_PATHS = 256;
const MAX_REMEMBERED_PATH_CHARS = 1024;

export function checkPath(path: string): void {
  if (passedPaths.has(path)) return;
  checkPathOnce(path);
  if (path.length > MAX_REMEMBERED_PATH_CHARS) return;
  if (passedPaths.size >= MAX_PASSED_PATHS) passedPaths.clear();
  passedPaths.add(path);
}

function checkPathOnce(path: string): void {
  if (!PATH.test(path)) throw invalid('the request path must start with / and be percent-encoded, without query or fragment');
  if (path.startsWith('//')) throw invalid('the request path may not start with //');
  const segments = path.split('/').slice(1);
  // A final empty segment is a trailing slash; every other one must resolve to an ordinary segment.
  if (segments[segments.length - 1] === '') segments.pop();
  for (const segment of segments) {
    const problem = pathSegmentProblem(segment);
    if (problem !== undefined) throw invalid(`the request path has a segment that ${describeSegmentProblem(problem)}`);
  }
}

/**
 * Checks the spec's headers. `alsoReserved` adds names owned by this call
 * (the credential's header, the idempotency header, content-type when the
 * executor sets it from the body); all compared by `headerKey`.
 */
export function checkHeaders(headers: readonly (readonly [string, string])[], alsoReserved: readonly string[]): void {
  headers.forEach(([name, value], index) => {
    if (!TOKEN.test(name)) {
      throw invalid(`request header #${index + 1} has an invalid name (control characters or separators)`, { header_index: index });
    }
    if (!FIELD_VALUE.test(value)) {
      throw invalid(`request header #${index + 1} has a value with control or non-Latin-1 characters`, { header_index: index });
    }
    const problem = headerNameProblem(name, alsoReserved);
    if (problem !== undefined) throw invalid(problem, { header: name.toLowerCase() });
  });
}

/** Serializes query pairs with encodeURIComponent; refuses a name the query-name rule refuses (src/rules/query-names.ts) and malformed Unicode. */
export function encodeQuery(pairs: readonly (readonly [string, string])[]): string[] {
  return pairs.map(([name, value], index) => {
    const problem = queryNameProblem(name);
    if (problem !== undefined) throw invalid(`the name of query parameter #${index + 1} ${problem}`, { query_index: index });
    try {
      return `${encodeURIComponent(name)}=${encodeURIComponent(value)}`;
    } catch {
      throw invalid(`query parameter #${index + 1} is not well-formed Unicode`, { query_index: index });
    }
  });
}
