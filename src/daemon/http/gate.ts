/**
 * What the HTTP listener lets through, decided before any MCP code runs. Pure.
 *
 * In this order: the `Host` header must name the listener itself
 * (`127.0.0.1:<port>` or `localhost:<port>`) — anything else is DNS rebinding
 * or a misdirected request (421); an `Origin`, when present, must be the
 * listener's own origin (a browser page elsewhere → 403; non-browser clients
 * send none); the path must be `/mcp` (404); the bearer token must match
 * (401); the method must be GET, POST or DELETE (405; a CORS preflight
 * `OPTIONS` is refused like any other, and no response carries CORS headers);
 * a POST must say `Content-Type: application/json` (415), so no browser
 * "simple request" (text/plain, form encodings) is ever read.
 */
import type { ErrorCode } from '../../rules/errors.js';
import { ErrorCodes } from '../../rules/errors.js';
import { bearerMatches } from './token.js';

export const MCP_PATH = '/mcp';

export interface GateInput {
  readonly method: string;
  /** The request target as sent (path and query). */
  readonly url: string;
  readonly host: string | undefined;
  readonly origin: string | undefined;
  readonly authorization: string | undefined;
  readonly contentType: string | undefined;
}

type GateVerdict =
  | { readonly kind: 'pass'; readonly method: 'GET' | 'POST' | 'DELETE' }
  | { readonly kind: 'refuse'; readonly status: number; readonly code: ErrorCode; readonly message: string; readonly headers?: Readonly<Record<string, string>> };

const refuse = (status: number, code: ErrorCode, message: string, headers?: Record<string, string>): GateVerdict => ({ kind: 'refuse', status, code, message, ...(headers === undefined ? {} : { headers }) });

/** The Host values that name this listener (a browser sends the name it resolved, which DNS rebinding cannot change). */
function ownHosts(port: number): readonly string[] {
  return [`127.0.0.1:${port}`, `localhost:${port}`];
}

function ownOrigins(port: number): readonly string[] {
  return ownHosts(port).map((h) => `http://${h}`);
}

/** `application/json`, with parameters allowed (`; charset=utf-8`), nothing else. */
export function isJsonContentType(v: string | undefined): boolean {
  if (v === undefined) return false;
  const type = v.split(';')[0]?.trim().toLowerCase();
  return type === 'application/json';
}

export function judgeRequest(r: GateInput, port: number, token: string): GateVerdict {
  const host = r.host?.toLowerCase();
  if (host === undefined || !ownHosts(port).includes(host)) return refuse(421, 'HTTP_REFUSED', 'the Host header does not name this listener (127.0.0.1 or localhost, with its port)');
  if (r.origin !== undefined && !ownOrigins(port).includes(r.origin.toLowerCase())) return refuse(403, 'HTTP_REFUSED', 'requests from a web page of another origin are refused');
  const path = r.url.split('?')[0];
  if (path !== MCP_PATH) return refuse(404, 'HTTP_REFUSED', `nothing is served here; the MCP endpoint is ${MCP_PATH}`);
  if (!bearerMatches(r.authorization, token)) return refuse(401, 'HTTP_AUTH_REQUIRED', 'missing or wrong bearer token (Authorization: Bearer <the token in run/mcp-http.token>)', { 'WWW-Authenticate': 'Bearer realm="postern"' });
  const method = r.method;
  if (method !== 'GET' && method !== 'POST' && method !== 'DELETE') return refuse(405, 'HTTP_REFUSED', `method ${method.slice(0, 16)} is not allowed`, { Allow: 'GET, POST, DELETE' });
  if (method === 'POST' && !isJsonContentType(r.contentType)) return refuse(415, 'HTTP_REFUSED', 'a POST must have Content-Type: application/json');
  return { kind: 'pass', method };
}

/**
 * The body of every refusal the listener shapes itself: a JSON-RPC error
 * (MCP clients read one; with the request's id when it is known) whose
 * message starts with the Postern code and whose data carries the code and
 * the action, as every other Postern error does.
 */
export function refusalBody(code: ErrorCode, message: string, rpc: { readonly id?: string | number | null; readonly code?: number } = {}): Record<string, unknown> {
  return { jsonrpc: '2.0', id: rpc.id ?? null, error: { code: rpc.code ?? -32000, message: `${code}: ${message}`, data: { error_code: code, message, required_action: ErrorCodes[code].action } } };
}
