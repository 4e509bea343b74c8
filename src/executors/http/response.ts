/**
 * Reading and shaping a response: the body is read up to the cap and the
 * download is aborted there (the rest is never buffered); the result is JSON
 * when the content type says JSON and it parses without losing number
 * precision, otherwise text when it is valid UTF-8, otherwise base64. Only a
 * fixed list of response headers is passed on (no set-cookie, no auth
 * challenges, nothing unexpected).
 *
 * Decision: over the cap we truncate (`truncated: true`) rather than fail
 * with RESPONSE_TOO_LARGE — the request already had its effect, so the
 * agent is better served by the status and the start of the body.
 */
import type { HttpBody } from './types.js';

const SAFE_RESPONSE_HEADERS: readonly string[] = [
  'content-type',
  'content-length',
  'content-encoding',
  'content-language',
  'content-range',
  'content-disposition',
  'location',
  'etag',
  'last-modified',
  'cache-control',
  'expires',
  'date',
  'retry-after',
  'link',
  'x-request-id',
  'x-correlation-id',
  'request-id',
  'ratelimit',
  'ratelimit-policy',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
];

export function safeHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of SAFE_RESPONSE_HEADERS) {
    const value = headers[name];
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

export interface CappedBody {
  readonly bytes: Buffer;
  readonly truncated: boolean;
}

/** Reads at most `max` bytes; leaving the loop early destroys the stream, which aborts the download. */
export async function readCapped(body: AsyncIterable<Buffer | Uint8Array>, max: number): Promise<CappedBody> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body) {
    const room = max - total;
    if (chunk.length > room) {
      chunks.push(Buffer.from(chunk.subarray(0, room)));
      total += room;
      return { bytes: Buffer.concat(chunks, total), truncated: true };
    }
    chunks.push(Buffer.from(chunk));
    total += chunk.length;
  }
  return { bytes: Buffer.concat(chunks, total), truncated: false };
}

const JSON_TYPE = /^\s*(?:application\/(?:[a-z0-9.!#$&^_-]+\+)?json|text\/json)\s*(?:;|$)/i;
const utf8 = new TextDecoder('utf-8', { fatal: true });

export function decodeBody(bytes: Uint8Array, contentType: string | undefined, truncated: boolean): HttpBody {
  const text = utf8OrNull(bytes, truncated);
  if (text === null) return { kind: 'base64', value: Buffer.from(bytes).toString('base64') };
  if (!truncated && contentType !== undefined && JSON_TYPE.test(contentType) && !losesNumberPrecision(text)) {
    try {
      return { kind: 'json', value: JSON.parse(text) as unknown };
    } catch {
      // not JSON after all: fall through to text
    }
  }
  return { kind: 'text', value: text };
}

/** Valid UTF-8 as text; a truncated body may end inside a character, so drop up to 3 trailing bytes. */
function utf8OrNull(bytes: Uint8Array, truncated: boolean): string | null {
  for (let cut = 0; cut <= (truncated ? Math.min(3, bytes.length) : 0); cut++) {
    try {
      return utf8.decode(bytes.subarray(0, bytes.length - cut));
    } catch {
      // try a shorter prefix
    }
  }
  return null;
}

const JSON_TOKEN = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
const MAX_EXACT_DIGITS = 15;

/**
 * True when a number literal has more significant digits than a double keeps
 * (e.g. 64-bit ids). Parsing would silently change it — and could leave part
 * of a numeric secret unrecognizable to redaction — so such bodies stay text.
 */
export function losesNumberPrecision(text: string): boolean {
  for (const [token] of text.matchAll(JSON_TOKEN)) {
    if (token.startsWith('"')) continue;
    const mantissa = token.replace(/^-/, '').replace(/[eE].*$/, '').replace('.', '');
    const significant = mantissa.replace(/^0+/, '').replace(/0+$/, '');
    if (significant.length > MAX_EXACT_DIGITS) return true;
  }
  return false;
}
