/**
 * What the approval page lets through, decided before any route runs. Pure.
 *
 * In this order: the `Host` header must name the page's own address (its
 * bound address and port, or `localhost:<port>` on loopback) — anything else
 * is DNS rebinding or a misdirected request (421); an `Origin`, when present,
 * must be the page's own origin, and a POST must carry one (403); a browser's
 * `Sec-Fetch-Site`, when present, must be `same-origin` or `none` (403); only
 * GET and POST (405; no CORS preflight is ever answered with CORS headers); a
 * POST must say `Content-Type: application/json` (415), so no form or
 * "simple request" is ever read. The page token and the device cookie are
 * checked by the routes that need them (server.ts).
 */
import type { ErrorCode } from '../../rules/errors.js';
import { isJsonContentType } from '../http/gate.js';

interface PageGateInput {
  readonly method: string;
  readonly host: string | undefined;
  readonly origin: string | undefined;
  readonly secFetchSite: string | undefined;
  readonly contentType: string | undefined;
}

export interface PageAddress {
  readonly bind: string;
  readonly port: number;
  readonly scheme: 'http' | 'https';
}

type PageGateVerdict =
  | { readonly kind: 'pass'; readonly method: 'GET' | 'POST' }
  | { readonly kind: 'refuse'; readonly status: number; readonly code: ErrorCode; readonly message: string };

const refuse = (status: number, message: string): PageGateVerdict => ({ kind: 'refuse', status, code: 'PAGE_REFUSED', message });

/** The Host values that name the page (a browser sends the name it resolved, which DNS rebinding cannot change). */
function pageHosts(a: PageAddress): readonly string[] {
  return a.bind === '127.0.0.1' ? [`127.0.0.1:${a.port}`, `localhost:${a.port}`] : [`${a.bind}:${a.port}`];
}

export function pageOrigins(a: PageAddress): readonly string[] {
  return pageHosts(a).map((h) => `${a.scheme}://${h}`);
}

export function judgePageRequest(r: PageGateInput, a: PageAddress): PageGateVerdict {
  const host = r.host?.toLowerCase();
  if (host === undefined || !pageHosts(a).includes(host)) return refuse(421, "the Host header does not name the approval page's own address");
  const origin = r.origin?.toLowerCase();
  if (origin !== undefined && !pageOrigins(a).includes(origin)) return refuse(403, 'requests from a page of another origin are refused');
  if (r.secFetchSite !== undefined && r.secFetchSite !== 'same-origin' && r.secFetchSite !== 'none') return refuse(403, 'cross-site requests are refused');
  if (r.method !== 'GET' && r.method !== 'POST') return refuse(405, `method ${r.method.slice(0, 16)} is not allowed`);
  if (r.method === 'POST') {
    if (origin === undefined) return refuse(403, 'a POST must carry the Origin header of the page');
    if (!isJsonContentType(r.contentType)) return refuse(415, 'a POST must have Content-Type: application/json');
  }
  return { kind: 'pass', method: r.method };
}

/** The headers of every answer: nothing runs or loads that is not the page's own, nothing frames it, nothing is cached. */
export const PAGE_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; manifest-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";
export const PAGE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Content-Security-Policy': PAGE_CSP,
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
});
