/**
 * Turns a request spec and a credential into exactly what goes on the wire
 * (method, request target, header list, body) and the URL that may be shown
 * and journaled: the one place the credential is injected (credential-injection.ts).
 * Pure: no I/O, so every refusal happens before a socket opens.
 *
 * Invariants:
 * - The path is sent verbatim (it was approved verbatim); no URL re-parsing.
 * - The credential appears only in `headers` / `target`, never in `displayUrl`
 *   (a query credential shows as `[REDACTED:<name>]`).
 * - The spec cannot set a reserved header, the credential's header, the
 *   idempotency header, or (with a body) content-type; nor a query name a
 *   server could read as the credential's parameter (src/rules/query-names.ts)
 *   or, on a signed request, as a parameter of an AWS signature
 *   (src/rules/sigv4-names.ts).
 */
import { PosternError } from '../../rules/errors.js';
import { redactionMarker } from '../../redaction/index.js';
import { VERSION } from '../../version.js';
import { credentialInjection } from './credential-injection.js';
import { headerKey, reservedHeader } from '../../rules/http-headers.js';
import { queryNameCollides } from '../../rules/query-names.js';
import { sigv4QueryParam } from '../../rules/sigv4-names.js';
import { checkHeaders, checkMethod, checkPath, encodeQuery, isFieldValue, isToken } from './request-rules.js';
import type { HttpExecOptions, HttpRequestSpec } from './types.js';

export interface PreparedRequest {
  readonly method: string;
  /** Path plus query, as written on the request line. */
  readonly target: string;
  /** Flat [name, value, name, value, …] list, in sending order. */
  readonly headers: readonly string[];
  readonly body: Uint8Array | null;
  /** origin + path + query, with any query credential replaced by a marker. */
  readonly displayUrl: string;
}

function missingClock(): never {
  throw new PosternError('INTERNAL', 'a signed request needs the clock; nothing was sent', { sideEffectStarted: false });
}

function invalid(message: string, details: Record<string, string | number> = {}): PosternError {
  return new PosternError('INPUT_INVALID', message, { details, sideEffectStarted: false });
}

export function prepareRequest(
  spec: HttpRequestSpec,
  opts: Pick<HttpExecOptions, 'credential' | 'idempotencyKey' | 'auth' | 'now'>,
  origin: string,
): PreparedRequest {
  checkMethod(spec.method);
  checkPath(spec.path);
  const injection = credentialInjection(opts.credential, opts.auth);

  const idem = opts.idempotencyKey;
  const idemName = idem?.header.toLowerCase();
  if (idem !== undefined && idemName !== undefined) {
    if (!isToken(idem.header) || (reservedHeader(idemName) !== undefined && idemName !== 'idempotency-key')) {
      throw invalid('the idempotency header name is not allowed');
    }
    if (!isFieldValue(idem.value) || idem.value === '') throw invalid('the idempotency key is not a valid header value');
  }

  const owned = [...injection.ownedHeaders, ...(idemName === undefined ? [] : [idemName])];
  if (spec.body !== undefined) {
    owned.push('content-type');
    if (!isFieldValue(spec.body.contentType) || spec.body.contentType === '') throw invalid('the body content type is not a valid header value');
  }
  checkHeaders(spec.headers, owned);

  const param = injection.queryParam;
  if (param !== null && spec.query.some(([name]) => queryNameCollides(name, param.name))) {
    throw invalid(`the query parameter ${param.name} carries the credential and may not be supplied`, { query: param.name });
  }
  if (injection.sign !== undefined) {
    for (const [name] of spec.query) {
      const signed = sigv4QueryParam(name);
      if (signed !== undefined) throw invalid(`a query parameter can be read as ${signed}, which is part of the AWS signature`, { query: signed });
    }
  }
  const query = encodeQuery(spec.query);
  const sentQuery = param === null ? query : [...query, param.encoded];
  const shownQuery = param === null ? query : [...query, `${param.encoded.split('=')[0] ?? ''}=${redactionMarker(opts.credential?.meta.name)}`];
  const withQuery = (q: readonly string[]): string => (q.length === 0 ? spec.path : `${spec.path}?${q.join('&')}`);

  const headers: string[] = [];
  for (const [name, value] of spec.headers) headers.push(name, value);
  if (spec.body !== undefined) headers.push('content-type', spec.body.contentType);
  for (const [name, value] of injection.headers) headers.push(name, value);
  if (idem !== undefined) headers.push(idem.header, idem.value);
  headers.push('accept-encoding', 'identity');
  if (!spec.headers.some(([name]) => headerKey(name) === 'user-agent')) headers.push('user-agent', `postern/${VERSION}`);
  const target = withQuery(sentQuery);
  // Signed last, over the request exactly as it will be written (the Host header is the origin's, as undici sends it).
  if (injection.sign !== undefined) {
    const now = opts.now?.() ?? missingClock();
    const body = spec.body?.bytes ?? null;
    // The transport adds content-length for a body; it is signed too, so the length cannot be changed unnoticed.
    const signed = body === null ? headers : [...headers, 'content-length', String(body.byteLength)];
    for (const [name, value] of injection.sign({ method: spec.method, target, host: new URL(origin).host, headers: signed, body }, now)) headers.push(name, value);
  }

  return {
    method: spec.method,
    target,
    headers,
    body: spec.body?.bytes ?? null,
    displayUrl: origin + withQuery(shownQuery),
  };
}
