/**
 * AWS Signature Version 4 (the published algorithm: canonical request →
 * string to sign → HMAC chain from "AWS4" + secret key → signature), applied
 * last, to the request exactly as it will be written: every header Postern
 * sends is signed (plus `host`), the path as it goes on the request line,
 * the query as sent, and the SHA-256 of the body.
 *
 * Invariants:
 * - pure: the time comes from the caller's clock; no I/O;
 * - the secret access key is used only inside the HMAC chain; what is
 *   returned (headers) holds the access key id, the date, the scope, the
 *   signed header names, the signature and — when the credential has one —
 *   the session token, which the redactor knows as a secret part;
 * - Amazon S3 signs the path as sent (URI-encoded once); every other service
 *   signs each path segment URI-encoded again, as the specification says.
 */
import { createHash, createHmac } from 'node:crypto';

interface SigV4Credential {
  readonly accessKeyId: string;
  readonly secretAccessKey: Uint8Array;
  readonly sessionToken?: string;
}

export interface SigV4Request {
  readonly method: string;
  /** The request target as written on the request line: path, then `?query` if any. */
  readonly target: string;
  /** `host[:port]`, as the Host header will carry it. */
  readonly host: string;
  /** Flat [name, value, …] list of the headers that will be sent (host excluded). */
  readonly headers: readonly string[];
  readonly body: Uint8Array | null;
}

interface SigV4Scope {
  readonly region: string;
  readonly service: string;
}

/** The headers the signature owns: the request's own spec may not set them (one home: rules/sigv4-names.ts). */
export { SIGV4_OWNED_HEADERS as SIGV4_HEADERS } from '../../rules/sigv4-names.js';

const sha256Hex = (b: Uint8Array | string): string => createHash('sha256').update(b).digest('hex');
const hmac = (key: Uint8Array | string, data: string): Buffer => createHmac('sha256', key).update(data, 'utf8').digest();

/** RFC 3986 unreserved characters stay; every other byte is %XX (upper case), as SigV4's UriEncode. */
export function uriEncode(bytes: Uint8Array | string, keepSlash = false): string {
  const b = typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : Buffer.from(bytes);
  let out = '';
  for (const c of b) {
    const ch = String.fromCharCode(c);
    if (/[A-Za-z0-9\-_.~]/.test(ch) || (keepSlash && ch === '/')) out += ch;
    else out += `%${c.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** Percent-decoding to bytes; a `%` not followed by two hex digits stays as it is. */
function percentDecode(s: string): Buffer {
  const out: number[] = [];
  const raw = Buffer.from(s, 'utf8');
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c === 0x25 && i + 2 < raw.length && /^[0-9A-Fa-f]{2}$/.test(raw.subarray(i + 1, i + 3).toString('latin1'))) {
      out.push(parseInt(raw.subarray(i + 1, i + 3).toString('latin1'), 16));
      i += 2;
    } else out.push(c);
  }
  return Buffer.from(out);
}

function canonicalUri(path: string, service: string): string {
  if (path === '') return '/';
  if (service === 's3') return path;
  return path
    .split('/')
    .map((seg) => uriEncode(seg))
    .join('/');
}

function canonicalQuery(query: string): string {
  if (query === '') return '';
  const pairs = query.split('&').map((p) => {
    const eq = p.indexOf('=');
    const name = eq === -1 ? p : p.slice(0, eq);
    const value = eq === -1 ? '' : p.slice(eq + 1);
    return [uriEncode(percentDecode(name.replace(/\+/g, '%20'))), uriEncode(percentDecode(value.replace(/\+/g, '%20')))] as const;
  });
  pairs.sort(([an, av], [bn, bv]) => (an < bn ? -1 : an > bn ? 1 : av < bv ? -1 : av > bv ? 1 : 0));
  return pairs.map(([n, v]) => `${n}=${v}`).join('&');
}

/** `YYYYMMDD'T'HHMMSS'Z'`. */
export function amzDate(now: Date): string {
  return now.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
}

interface SigV4Parts {
  readonly canonicalRequest: string;
  readonly stringToSign: string;
  readonly signature: string;
  /** The headers to add, in this order. */
  readonly headers: readonly (readonly [string, string])[];
}

/** Signs `req`; returns the headers to append (x-amz-date, the token, the payload hash for S3, authorization). */
export function signSigV4(req: SigV4Request, cred: SigV4Credential, scope: SigV4Scope, now: Date): SigV4Parts {
  const date = amzDate(now);
  const day = date.slice(0, 8);
  const payloadHash = sha256Hex(req.body ?? new Uint8Array());
  const added: [string, string][] = [['x-amz-date', date]];
  if (cred.sessionToken !== undefined) added.push(['x-amz-security-token', cred.sessionToken]);
  if (scope.service === 's3') added.push(['x-amz-content-sha256', payloadHash]);

  const byName = new Map<string, string[]>();
  const put = (name: string, value: string): void => {
    const k = name.toLowerCase();
    const v = value.trim().replace(/ +/g, ' ');
    byName.set(k, [...(byName.get(k) ?? []), v]);
  };
  put('host', req.host);
  for (let i = 0; i + 1 < req.headers.length; i += 2) put(req.headers[i]!, req.headers[i + 1]!);
  for (const [n, v] of added) put(n, v);
  const names = [...byName.keys()].sort();
  const canonicalHeaders = names.map((n) => `${n}:${(byName.get(n) ?? []).join(',')}\n`).join('');
  const signedHeaders = names.join(';');

  const q = req.target.indexOf('?');
  const path = q === -1 ? req.target : req.target.slice(0, q);
  const query = q === -1 ? '' : req.target.slice(q + 1);
  const canonicalRequest = [req.method, canonicalUri(path, scope.service), canonicalQuery(query), canonicalHeaders, signedHeaders, payloadHash].join('\n');
  const credentialScope = `${day}/${scope.region}/${scope.service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', date, credentialScope, sha256Hex(canonicalRequest)].join('\n');

  const secret = Buffer.concat([Buffer.from('AWS4'), cred.secretAccessKey]);
  try {
    const kDate = hmac(secret, day);
    const kRegion = hmac(kDate, scope.region);
    const kService = hmac(kRegion, scope.service);
    const kSigning = hmac(kService, 'aws4_request');
    const signature = createHmac('sha256', kSigning).update(stringToSign, 'utf8').digest('hex');
    for (const k of [kDate, kRegion, kService, kSigning]) k.fill(0);
    const authorization = `AWS4-HMAC-SHA256 Credential=${cred.accessKeyId}/${credentialScope}, SignedHeaders=${signedHeaders}, Signature=${signature}`;
    return { canonicalRequest, stringToSign, signature, headers: [...added, ['authorization', authorization]] };
  } finally {
    secret.fill(0);
  }
}
