/**
 * Between node:http and the SDK's Web-standard transport: reading a body with
 * bounded memory, writing JSON answers, building the `Request` the transport
 * takes and streaming its `Response` (SSE included) back to node.
 *
 * Invariants: a body is never held past `limit` bytes (past it, only the
 * first EDGE_BYTES are kept, to answer by id and method); the answer to an
 * oversized body reaches the client (the rest of the body is read and
 * discarded before the connection closes, up to DRAIN_LIMIT_BYTES); a JSON
 * answer always has a Content-Length and `Cache-Control: no-store`; a
 * streamed response ends when either side does, and honours backpressure.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { EDGE_BYTES } from '../../protocol/ndjson.js';
import { MCP_PATH } from './gate.js';

/** An oversized body: its first bytes and how many bytes were read before reading stopped. */
export type Body = { readonly kind: 'whole'; readonly bytes: Buffer } | { readonly kind: 'oversized'; readonly head: string; readonly read: number };

/** How much of an oversized body is read (and discarded) so that its answer arrives; a body longer than this has its connection cut. */
const DRAIN_LIMIT_BYTES = 256 * 1024 * 1024;

/** Reads a body up to `limit` bytes; past it, stops with the first bytes kept (to answer by id and method). */
export function readBody(req: IncomingMessage, limit: number): Promise<Body> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      req.once('data', (c: Buffer) => {
        req.pause();
        resolve({ kind: 'oversized', head: c.subarray(0, EDGE_BYTES).toString('utf8'), read: c.length });
      });
      req.once('end', () => resolve({ kind: 'oversized', head: '', read: 0 }));
      req.once('error', reject);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer): void => {
      size += c.length;
      if (size > limit) {
        req.off('data', onData);
        req.pause();
        const head = Buffer.concat([...chunks, c]).subarray(0, EDGE_BYTES).toString('utf8');
        resolve({ kind: 'oversized', head, read: size });
        return;
      }
      chunks.push(c);
    };
    req.on('data', onData);
    req.once('end', () => resolve({ kind: 'whole', bytes: Buffer.concat(chunks) }));
    req.once('error', reject);
  });
}

export function sendJson(res: ServerResponse, status: number, body: unknown, extra: Readonly<Record<string, string>> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.end(writeJsonHead(res, status, body, extra));
}

/** Writes the head of a JSON answer; returns the body text to write. */
function writeJsonHead(res: ServerResponse, status: number, body: unknown, extra: Readonly<Record<string, string>>): string {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), 'Cache-Control': 'no-store', ...extra });
  return text;
}

/**
 * Answers a body that `readBody` found oversized (`read` bytes of it read so
 * far), then closes the connection without a reset. The whole answer is
 * written at once, so a client that reads while it sends has it at once; but
 * the response ends (and node closes the connection, `Connection: close`) only
 * once the rest of the body has been read and discarded: closing a socket with
 * unread bytes sends a reset, which destroys the answer on its way (a client
 * that reads only after sending never sees it). A body that goes on past
 * DRAIN_LIMIT_BYTES is cut there; one that trickles is cut by the server's
 * request timeout.
 */
export function answerOversized(req: IncomingMessage, res: ServerResponse, status: number, body: unknown, read: number): void {
  res.write(writeJsonHead(res, status, body, { Connection: 'close' }));
  let drained = read;
  const finish = (): void => {
    req.off('data', onData);
    if (!res.writableEnded) res.end();
  };
  const onData = (c: Buffer): void => {
    drained += c.length;
    if (drained <= DRAIN_LIMIT_BYTES) return;
    finish();
    req.destroy();
  };
  if (req.readableEnded) return finish();
  req.on('data', onData);
  req.once('end', finish);
  req.once('close', finish);
  req.once('error', finish);
  req.resume();
}

/** The node request as a Web `Request` (the body is handed over parsed, never re-read). */
export function webRequest(req: IncomingMessage, port: number, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) headers.append(k, one);
  }
  return new Request(`http://127.0.0.1:${port}${MCP_PATH}`, { method: req.method ?? 'GET', headers, signal });
}

/** Copies a Web `Response` to node, streaming (SSE) bodies until either side ends. */
export async function writeResponse(res: ServerResponse, response: Response): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((v, k) => {
    headers[k] = v;
  });
  res.writeHead(response.status, headers);
  if (response.body === null) {
    res.end();
    return;
  }
  const reader: ReadableStreamDefaultReader<Uint8Array> = response.body.getReader();
  res.once('close', () => void reader.cancel().catch(() => undefined));
  try {
    for (;;) {
      const chunk: { done: true; value?: Uint8Array } | { done: false; value: Uint8Array } = await reader.read();
      if (chunk.done) break;
      if (!res.write(chunk.value)) await new Promise<void>((r) => res.once('drain', r).once('close', r));
      if (res.destroyed) break;
    }
  } finally {
    res.end();
  }
}
