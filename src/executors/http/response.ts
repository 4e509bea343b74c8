/**
 * Reading and shaping a response: the body is read up to the cap plus
 * `readPast` bytes and the download is aborted there (the rest is never
 * buffered); codings the target applied are undone first (content-coding.ts),
 * and a body in a coding that cannot be decoded is withheld. The result is
 * JSON when the content type says JSON, it parses without losing number
 * precision and nests at most MAX_RESULT_JSON_DEPTH deep, otherwise text when
 * it is valid UTF-8, otherwise base64. Only a fixed list of response headers
 * is passed on (no set-cookie, no auth challenges, nothing unexpected).
 *
 * Decision: over the cap we truncate (`truncated: true`) rather than fail
 * with RESPONSE_TOO_LARGE — the request already had its effect, so the
 * agent is better served by the status and the start of the body. The bytes
 * read past the cap stay in the body with `truncatedAt` saying where the cap
 * falls: redaction needs them to see a secret that straddles the cut whole,
 * and drops them (Redactor.redactCut).
 */
import { Readable } from 'node:stream';
import { exceedsJsonDepth } from '../../rules/json-depth.js';
import { decodeCapped, planDecoding } from './content-coding.js';
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

interface CappedBody {
  readonly bytes: Buffer;
  readonly truncated: boolean;
}

/** Reads at most `max` bytes; leaving the loop early destroys the stream, which aborts the download. */
async function readCapped(body: AsyncIterable<Buffer | Uint8Array>, max: number): Promise<CappedBody> {
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

interface ReadBody {
  /** What was read: up to the cap plus `readPast` bytes, decoded. */
  readonly bytes: Buffer;
  /** How many of `bytes` fall within the cap (all of them when not truncated). */
  readonly keep: number;
  readonly truncated: boolean;
  /** Codings that were undone, as undone (e.g. "br, gzip"), or null. */
  readonly decodedFrom: string | null;
  /** Why the body is withheld, or null. */
  readonly withheld: string | null;
}

/**
 * Reads the body (decoding what the target encoded) up to `max` bytes plus
 * `readPast`. When reading stopped before the end, the last `readPast` bytes
 * read are never within `keep`: whatever straddles the cut is seen whole.
 */
export async function readBody(
  body: AsyncIterable<Buffer | Uint8Array>,
  headers: Readonly<Record<string, string | string[] | undefined>>,
  max: number,
  readPast: number,
): Promise<ReadBody> {
  const plan = planDecoding(headers);
  const limit = max + readPast;
  let bytes: Buffer;
  let complete: boolean;
  let decodedFrom: string | null = null;
  switch (plan.kind) {
    case 'refuse':
      return { bytes: Buffer.alloc(0), keep: 0, truncated: false, decodedFrom: null, withheld: plan.reason };
    case 'identity': {
      const read = await readCapped(body, limit);
      bytes = read.bytes;
      complete = !read.truncated;
      break;
    }
    case 'decode': {
      const decoded = await decodeCapped(body, plan.codings, limit, limit);
      if (decoded.kind === 'refused') return { bytes: Buffer.alloc(0), keep: 0, truncated: false, decodedFrom: null, withheld: decoded.reason };
      bytes = decoded.bytes;
      complete = decoded.complete;
      decodedFrom = plan.codings.join(', ');
      break;
    }
  }
  const keep = complete ? Math.min(bytes.length, max) : Math.min(max, Math.max(0, bytes.length - readPast));
  return { bytes, keep, truncated: keep < bytes.length || !complete, decodedFrom, withheld: null };
}

/** The contents of a gzip file returned as a body, decoded under `max` bytes (Latin-1, for inspection only). */
export async function inspectGzip(bytes: Buffer, max: number): Promise<{ text: string; complete: boolean }> {
  const decoded = await decodeCapped(Readable.from([bytes]), ['gzip'], bytes.length, max);
  return decoded.kind === 'decoded' ? { text: decoded.bytes.toString('latin1'), complete: decoded.complete } : { text: '', complete: false };
}

/** The body that stands for bytes Postern could not inspect. */
export function withheldBody(reason: string): HttpBody {
  return { kind: 'withheld', value: `[WITHHELD: the body was not returned: ${reason}]` };
}

const JSON_TYPE = /^\s*(?:application\/(?:[a-z0-9.!#$&^_-]+\+)?json|text\/json)\s*(?:;|$)/i;
const utf8 = new TextDecoder('utf-8', { fatal: true });

interface ShapedBody {
  readonly body: HttpBody;
  /** When truncated: how many characters of `body.value` fall within the cap. */
  readonly truncatedAt: number | null;
}

/** The body as JSON, text or base64; a truncated one is never JSON, and its value runs past the cap (see ReadBody). */
export function decodeBody(bytes: Uint8Array, contentType: string | undefined, truncated: boolean, keep: number = bytes.length): ShapedBody {
  const text = utf8OrNull(bytes, truncated);
  if (text === null) {
    const value = Buffer.from(bytes).toString('base64');
    // Base64 characters fully determined by the first `keep` bytes.
    return { body: { kind: 'base64', value }, truncatedAt: truncated ? Math.floor((4 * keep) / 3) : null };
  }
  if (!truncated && contentType !== undefined && JSON_TYPE.test(contentType) && !losesNumberPrecision(text) && !exceedsJsonDepth(text)) {
    try {
      return { body: { kind: 'json', value: JSON.parse(text) as unknown }, truncatedAt: null };
    } catch {
      // not JSON after all: fall through to text
    }
  }
  return { body: { kind: 'text', value: text }, truncatedAt: truncated ? charsIn(bytes, keep) : null };
}

/** The characters of the UTF-8 text `bytes` that lie within its first `keep` bytes (whole characters only). */
function charsIn(bytes: Uint8Array, keep: number): number {
  let end = Math.min(keep, bytes.length);
  // Back off a character cut by `keep`: continuation bytes are 10xxxxxx.
  while (end > 0 && end < bytes.length && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return Buffer.from(bytes.buffer, bytes.byteOffset, end).toString('utf8').length;
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
/** A number with more significant digits than that has half as many in a row before or after its point: text without such a run has none to lose. */
const LONG_DIGIT_RUN = new RegExp(`\\d{${Math.ceil((MAX_EXACT_DIGITS + 1) / 2)}}`);

/**
 * True when a number literal has more significant digits than a double keeps
 * (e.g. 64-bit ids). Parsing would silently change it — and could leave part
 * of a numeric secret unrecognizable to redaction — so such bodies stay text.
 */
function losesNumberPrecision(text: string): boolean {
  if (!LONG_DIGIT_RUN.test(text)) return false;
  for (const [token] of text.matchAll(JSON_TOKEN)) {
    if (token.startsWith('"')) continue;
    const mantissa = token.replace(/^-/, '').replace(/[eE].*$/, '').replace('.', '');
    const significant = mantissa.replace(/^0+/, '').replace(/0+$/, '');
    if (significant.length > MAX_EXACT_DIGITS) return true;
  }
  return false;
}
