/**
 * Undoing the codings a target applied to a body although Postern asked for
 * `accept-encoding: identity`, so redaction sees the bytes an agent could
 * recover. A compressed body returned as is would hide an echoed secret from
 * redaction: the agent decompresses it out of the base64.
 *
 * Invariants:
 * - The plan covers `content-encoding` and every transfer coding but
 *   `chunked` (undici removes chunked framing, not `gzip, chunked`); they
 *   are undone last applied first. `gzip`/`x-gzip`, `deflate` (zlib-wrapped
 *   or raw) and `br` are decoded; any other coding, or more than
 *   MAX_CODINGS, is refused: the body's bytes are never returned.
 * - Decoding is streamed and bounded: output stops at `maxOut` bytes (a
 *   decompression bomb costs at most that, and the wire is read no further);
 *   the compressed input is bounded by `maxIn` bytes. A stream that fails to
 *   decode is refused; one that ends early (or is cut at `maxIn`) yields
 *   what decoded so far.
 * - Errors of the body itself (timeouts, resets) propagate unchanged.
 */
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Transform } from 'node:stream';
import zlib from 'node:zlib';

type Coding = 'gzip' | 'deflate' | 'br';

/** More stacked codings than this is not a plausible response: refused. */
const MAX_CODINGS = 3;

type CodingPlan =
  | { readonly kind: 'identity' }
  /** Codings in the order they are undone (last applied first). */
  | { readonly kind: 'decode'; readonly codings: readonly Coding[] }
  | { readonly kind: 'refuse'; readonly reason: string };

const KNOWN: Readonly<Record<string, Coding>> = { gzip: 'gzip', 'x-gzip': 'gzip', deflate: 'deflate', br: 'br' };

function listOf(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  const joined = Array.isArray(v) ? v.join(',') : (v ?? '');
  return joined
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
}

/** What to do with the body, from the response's `content-encoding` and `transfer-encoding`. */
export function planDecoding(headers: Readonly<Record<string, string | string[] | undefined>>): CodingPlan {
  const applied = [...listOf(headers['content-encoding']), ...listOf(headers['transfer-encoding']).filter((c) => c !== 'chunked')];
  if (applied.length === 0) return { kind: 'identity' };
  if (applied.length > MAX_CODINGS) return { kind: 'refuse', reason: `${applied.length} stacked codings (${printable(applied)})` };
  const codings: Coding[] = [];
  for (const c of applied.reverse()) {
    const known = KNOWN[c];
    if (known === undefined) return { kind: 'refuse', reason: `the coding "${printable([c])}" cannot be decoded` };
    codings.push(known);
  }
  return { kind: 'decode', codings };
}

/** Coding names as the target sent them, bounded and printable (the agent reads this). */
function printable(codings: readonly string[]): string {
  return codings
    .join(', ')
    .replace(/[^\x20-\x7e]/g, '?')
    .slice(0, 80);
}

type DecodedBody =
  | { readonly kind: 'decoded'; readonly bytes: Buffer; readonly complete: boolean }
  | { readonly kind: 'refused'; readonly reason: string };

/** A gzip member starts 1f 8b 08 (deflate): a binary body that does is a gzip file, whatever its headers say. */
export function looksGzipped(bytes: Uint8Array): boolean {
  return bytes[0] === 0x1f && bytes[1] === 0x8b && bytes[2] === 0x08;
}

/** A zlib-wrapped deflate stream starts with CM = 8 and a header checksum; anything else is raw deflate. */
function isZlibHeader(b0: number | undefined, b1: number | undefined): boolean {
  return b0 !== undefined && b1 !== undefined && (b0 & 0x0f) === 8 && ((b0 << 8) | b1) % 31 === 0;
}

/**
 * A stream that ends early (cut at the input cap, or sent short) yields what
 * decoded so far: those bytes are inspected like any others, and what could
 * not be decoded is never returned.
 */
function decoder(coding: Coding, first: Buffer): Transform {
  const flush = { finishFlush: zlib.constants.Z_SYNC_FLUSH };
  switch (coding) {
    case 'gzip':
      return zlib.createGunzip(flush);
    case 'deflate':
      return isZlibHeader(first[0], first[1]) ? zlib.createInflate(flush) : zlib.createInflateRaw(flush);
    case 'br':
      return zlib.createBrotliDecompress({ finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH });
  }
}

/**
 * Reads the body through the decoders: at most `maxIn` compressed bytes,
 * at most `maxOut` decoded bytes. `complete` is true when the whole body was
 * read and decoded within both bounds.
 */
export async function decodeCapped(body: AsyncIterable<Buffer | Uint8Array>, codings: readonly Coding[], maxIn: number, maxOut: number): Promise<DecodedBody> {
  const source = body[Symbol.asyncIterator]();
  const input: Buffer[] = [];
  let inBytes = 0;
  let cutInput = false;
  // The first coding's first bytes choose the deflate flavour; read them before building the chain.
  while (inBytes < 2) {
    const next = await source.next();
    if (next.done === true) break;
    input.push(Buffer.from(next.value));
    inBytes += next.value.length;
  }
  if (inBytes > maxIn) {
    input.splice(0, input.length, Buffer.concat(input).subarray(0, maxIn));
    inBytes = maxIn;
    cutInput = true;
  }
  let bodyError: { readonly error: unknown } | null = null;
  async function* wire(): AsyncGenerator<Buffer> {
    yield* input;
    if (cutInput) return;
    try {
      for (let next = await source.next(); next.done !== true; next = await source.next()) {
        const room = maxIn - inBytes;
        if (next.value.length > room) {
          cutInput = true;
          if (room > 0) yield Buffer.from(next.value.subarray(0, room));
          inBytes = maxIn;
          return;
        }
        inBytes += next.value.length;
        yield Buffer.from(next.value);
      }
    } catch (e) {
      bodyError = { error: e };
      throw e;
    } finally {
      await source.return?.();
    }
  }

  const out: Buffer[] = [];
  let outBytes = 0;
  let full = false;
  const stop = new AbortController();
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      if (!full && outBytes + chunk.length > maxOut) {
        out.push(chunk.subarray(0, maxOut - outBytes));
        outBytes = maxOut;
        full = true;
        // Stops the whole chain: no more decoding, and the download is aborted.
        stop.abort();
      } else if (!full) {
        out.push(chunk);
        outBytes += chunk.length;
      }
      done();
    },
  });
  const first = Buffer.concat(input);
  // Inner codings are decoded from what the outer ones yield; an inner deflate is taken as zlib-wrapped (RFC 9110).
  const chain = codings.map((c, i) => decoder(c, i === 0 ? first : Buffer.from([0x78, 0x9c])));
  try {
    // A generator function as the source (supported, not in the array overload's types): unlike
    // Readable.from, pipeline then ends it cleanly when the chain is aborted mid-read.
    const wireStream = wire as unknown as NodeJS.ReadableStream;
    await pipeline([wireStream, ...chain, sink], { signal: stop.signal });
  } catch {
    // The body's own failure (timeout, reset) is the executor's to report, unchanged.
    if (bodyError !== null) throw (bodyError as { readonly error: unknown }).error;
    if (!full) return { kind: 'refused', reason: `the ${codings.join(' then ')} stream is corrupt` };
  }
  return { kind: 'decoded', bytes: Buffer.concat(out, outBytes), complete: !full && !cutInput };
}
