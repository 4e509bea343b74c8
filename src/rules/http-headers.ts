/**
 * The one home of the HTTP header-name rules, imported by the catalog (what a
 * template may declare, what counts as authority) and by the HTTP executor
 * (what a request spec may carry), so `catalog check`, the approval card and
 * the executor refuse exactly the same names.
 *
 * - Names are compared by `headerKey`: lower case, `_` read as `-`, because
 *   CGI-style servers (PHP, many gateways) fold `X_Api_Key` and `X-Api-Key`
 *   into the same `HTTP_X_API_KEY`.
 * - Reserved: credentials, framing, connection management, the idempotency
 *   key, the response coding (always `identity`, so redaction sees the bytes)
 *   and every `proxy-*` name. Nobody but the executor sets them.
 * - Request-meaning headers make a server run another method, path, host,
 *   scheme or client address than the request line says
 *   (`X-HTTP-Method-Override`, `X-Original-URL`, `X-Forwarded-*`,
 *   `Forwarded`, …). They are not refused, but they are part of a revision's
 *   authority and must be fixed text (src/contracts/authority/authority.ts).
 */

/** The comparison key of a header name. */
export function headerKey(name: string): string {
  return name.toLowerCase().replaceAll('_', '-');
}

/** Headers the executor owns; no catalog template and no request spec may carry them. */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'idempotency-key',
  // Always "identity": a compressed body could hide an echoed secret from redaction.
  'accept-encoding',
  'proxy-connection',
]);

const RESERVED_PREFIXES = ['proxy-'];

/** Reserved names a custom credential header may still use (a non-Bearer Authorization scheme, a session cookie). */
const CREDENTIAL_HEADERS_ALLOWED: ReadonlySet<string> = new Set(['authorization', 'cookie']);

/** Headers that change the method, path, host, scheme or client a server acts on. */
const REQUEST_MEANING_HEADERS: ReadonlySet<string> = new Set([
  // method
  'x-http-method-override', 'x-http-method', 'x-method-override', 'x-original-method',
  // path
  'x-original-url', 'x-original-uri', 'x-rewrite-url', 'x-override-url', 'x-envoy-original-path', 'x-forwarded-prefix',
  'x-forwarded-uri', 'x-forwarded-path', 'x-request-uri',
  // host, scheme, port
  'forwarded', 'x-forwarded-host', 'x-forwarded-server', 'x-host', 'x-http-host-override', 'x-original-host',
  'x-forwarded-proto', 'x-forwarded-protocol', 'x-forwarded-scheme', 'x-forwarded-port', 'x-forwarded-ssl', 'x-url-scheme',
  'x-scheme', 'front-end-https',
  // client address (IP allow-lists)
  'x-forwarded-for', 'x-real-ip', 'x-client-ip', 'true-client-ip', 'client-ip', 'x-originating-ip', 'x-remote-ip',
  'x-remote-addr', 'x-cluster-client-ip', 'cf-connecting-ip', 'fastly-client-ip',
]);

/** Families whose members all count, including ones not listed by name (fail closed). */
const REQUEST_MEANING_PREFIXES = ['x-forwarded-', 'x-original-', 'x-rewrite-', 'x-override-', 'x-http-method', 'x-method-', 'x-envoy-original-'];

/** The reserved name (as Postern spells it) that `name` stands for, or undefined. */
export function reservedHeader(name: string): string | undefined {
  const key = headerKey(name);
  if (RESERVED_HEADERS.has(key) || RESERVED_PREFIXES.some((p) => key.startsWith(p))) return key;
  return undefined;
}

/** Whether `name` makes a server act on another method, path, host, scheme or client address. */
export function isRequestMeaningHeader(name: string): boolean {
  const key = headerKey(name);
  return REQUEST_MEANING_HEADERS.has(key) || REQUEST_MEANING_PREFIXES.some((p) => key.startsWith(p));
}

/**
 * Why a header name may not carry a credential (`auth: { header: NAME }`, or
 * an `http_header` credential's field), or undefined. `isToken` is the
 * caller's RFC 9110 token test.
 */
export function credentialHeaderProblem(name: string): string | undefined {
  const key = headerKey(name);
  if (reservedHeader(key) !== undefined && !CREDENTIAL_HEADERS_ALLOWED.has(key)) return `header ${key} is reserved and cannot carry a credential`;
  if (isRequestMeaningHeader(key)) return `header ${key} changes the meaning of the request and cannot carry a credential`;
  return undefined;
}

/**
 * Why a request may not carry header `name`, or undefined: reserved for the
 * executor, or `owned` by this call (the credential's header, the
 * idempotency header, content-type next to a body), in any case or spelling.
 */
export function headerNameProblem(name: string, owned: readonly string[]): string | undefined {
  const reserved = reservedHeader(name);
  if (reserved !== undefined) return `the ${reserved} header is set by Postern and may not be supplied`;
  const key = headerKey(name);
  if (owned.some((o) => headerKey(o) === key)) return `the ${key} header is set by Postern for this call and may not be supplied`;
  return undefined;
}
