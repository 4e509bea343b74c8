/**
 * executeHttp: one HTTP call on a fixed origin with an injected credential,
 * in two steps over one value.
 *
 *   prepareHttp — everything decided, nothing sent: the limits checked, the
 *   origin parsed, the request built as it will be written with the
 *   credential injected (prepare-request.ts, the one place injection is
 *   entered), and the origin resolved once with every address checked by the
 *   address policy (target.ts `pinAddress`, the one place it decides): an
 *   `HttpRequest` that names the pinned connection.
 *   sendHttp — connect to that pinned address (the connector re-checks the
 *   socket it got: the connected address, under the same policy, must be
 *   the pinned one), send, read the response up to the cap, shape the
 *   result.
 *
 * Invariants:
 * - Never the global dispatcher, so proxy environment variables and a
 *   replaced global dispatcher have no effect: the daemon's HttpPool
 *   (pool.ts) when given, else a private undici Client for this call only;
 *   redirects are never followed (a 3xx comes back with its `location`).
 * - `onRequestSent` runs once, when undici is about to write this request
 *   on a checked connection (new or kept alive): from then on a failure is
 *   `side_effect_started: true`.
 * - Every failure is a PosternError whose `sideEffectStarted` says whether
 *   the request may have been written; messages never carry header values.
 * - The result's `url` never contains a query credential. The result is not
 *   redacted here: the daemon runs it through src/redaction, like everything
 *   else that leaves the pipeline.
 * - Body bytes in a coding that could not be decoded never come back
 *   (`body.kind: 'withheld'`); status and headers do.
 */
import { EventEmitter } from 'node:events';
import type { Client, Dispatcher } from 'undici';
import { undici } from '../../libraries.js';
import { PosternError } from '../../rules/errors.js';
import { noticeOnWrite, pinnedConnector } from './connector.js';
import { targetFailure } from './failures.js';
import { prepareRequest, type PreparedRequest } from './prepare-request.js';
import { decodeBody, inspectGzip, readBody, safeHeaders, withheldBody } from './response.js';
import { looksGzipped } from './content-coding.js';
import { parseOrigin, pinAddress, systemResolver, type Origin } from './target.js';
import type { CheckedConnection, HttpExecOptions, HttpRequestSpec, HttpResult, HttpTimeouts } from './types.js';
import { DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_TIMEOUTS } from './types.js';

/** One request, prepared: every check made and every decision taken; nothing has been sent. */
interface HttpRequest {
  readonly origin: Origin;
  /** What goes on the wire (the credential already in it) and the URL that may be shown. */
  readonly wire: PreparedRequest;
  /** The pinned, checked address and how to connect to it. */
  readonly connection: CheckedConnection;
  readonly timeouts: HttpTimeouts;
  readonly maxBytes: number;
  readonly readPast: number;
}

export async function executeHttp(spec: HttpRequestSpec, opts: HttpExecOptions): Promise<HttpResult> {
  return sendHttp(await prepareHttp(spec, opts), opts);
}

async function prepareHttp(spec: HttpRequestSpec, opts: HttpExecOptions): Promise<HttpRequest> {
  const timeouts = checkedTimeouts(opts.timeouts);
  const maxBytes = opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 1) throw invalid('maxResponseBytes must be a positive integer');
  const readPast = opts.readPastCapBytes ?? 0;
  if (!Number.isSafeInteger(readPast) || readPast < 0) throw invalid('readPastCapBytes must be a non-negative integer');
  const origin = parseOrigin(spec.origin);
  const wire = prepareRequest(spec, opts, origin.href);
  if (isAborted(opts.signal)) {
    throw new PosternError('TARGET_ERROR', 'the request was aborted', { details: { host: origin.host, reason: 'aborted' }, sideEffectStarted: false });
  }
  const address = await pinAddress(origin, {
    allowPrivate: opts.allowPrivate,
    resolve: opts.resolve ?? systemResolver,
    timeoutMs: timeouts.connectMs,
    signal: opts.signal,
  });
  const connection: CheckedConnection = {
    protocol: origin.protocol,
    host: origin.host,
    address,
    port: origin.port,
    allowPrivate: opts.allowPrivate,
    connectTimeoutMs: timeouts.connectMs,
  };
  return { origin, wire, connection, timeouts, maxBytes, readPast };
}

async function sendHttp(r: HttpRequest, opts: HttpExecOptions): Promise<HttpResult> {
  const { origin, wire, connection, timeouts, maxBytes, readPast } = r;
  // A pooled dispatcher keeps its connections; a private client lives for this call only.
  let own: Client | null = null;
  const base: Dispatcher =
    opts.pool?.dispatcher({ origin: origin.href, connector: connection, credential: opts.credential }) ??
    (own = new (undici().Client)(origin.href, { connect: pinnedConnector(connection), pipelining: 1, headersTimeout: timeouts.headersMs, bodyTimeout: timeouts.bodyMs }));
  let sent = false;
  const client = base.compose(
    noticeOnWrite(() => {
      if (sent) return;
      sent = true;
      notify(opts.onRequestSent);
    }),
  );
  // The caller's cancellation (an agent that went away) stops the request until
  // the target has answered; after the response headers the outcome is known,
  // so the body is read to the end (bounded by the body timeout and the cap)
  // and the real outcome is journaled, not outcome_unknown.
  const untilAnswered = new UntilAnswered();
  const forward = (): void => untilAnswered.abort(opts.signal?.reason);
  if (opts.signal?.aborted === true) forward();
  else opts.signal?.addEventListener('abort', forward, { once: true });
  let answered = false;
  try {
    const res = await client.request({
      method: wire.method,
      path: wire.target,
      headers: [...wire.headers],
      body: wire.body,
      signal: untilAnswered,
      headersTimeout: timeouts.headersMs,
      bodyTimeout: timeouts.bodyMs,
      reset: opts.pool === undefined,
    });
    answered = true;
    opts.signal?.removeEventListener('abort', forward);
    const read = await readBody(res.body, res.headers, maxBytes, readPast);
    const contentType = res.headers['content-type'];
    const shaped =
      read.withheld === null
        ? decodeBody(read.bytes, Array.isArray(contentType) ? contentType[0] : contentType, read.truncated, read.keep)
        : { body: withheldBody(read.withheld), truncatedAt: null };
    const embedded = shaped.body.kind === 'base64' && looksGzipped(read.bytes) ? await inspectGzip(read.bytes, maxBytes) : null;
    return {
      status: res.statusCode,
      headers: safeHeaders(res.headers),
      body: shaped.body,
      embedded,
      truncated: read.truncated,
      truncated_at: shaped.truncatedAt,
      decoded_from: read.decodedFrom,
      // The connector refused any socket whose remote address is not this one.
      connected_ip: connection.address,
      url: wire.displayUrl,
      side_effect_started: true,
    };
  } catch (e) {
    throw targetFailure(e, {
      host: origin.host,
      port: origin.port,
      sent,
      aborted: !answered && isAborted(opts.signal),
      timeouts,
    });
  } finally {
    opts.signal?.removeEventListener('abort', forward);
    await own?.destroy();
  }
}

/**
 * The request's own abort signal, raised by the caller's until the target has
 * answered: undici takes an EventEmitter with `aborted` and `reason` as a
 * request's signal, which costs a call less than an AbortController.
 */
class UntilAnswered extends EventEmitter {
  aborted = false;
  reason: unknown = undefined;

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }
}

// A function, not an inline test: the signal changes between the two places it is read.
function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

function invalid(message: string): PosternError {
  return new PosternError('INPUT_INVALID', message, { sideEffectStarted: false });
}

function checkedTimeouts(given: Partial<HttpTimeouts> | undefined): HttpTimeouts {
  const t = { ...DEFAULT_TIMEOUTS, ...given };
  for (const [name, ms] of Object.entries(t)) {
    if (!Number.isSafeInteger(ms) || ms < 1) throw invalid(`the ${name} timeout must be a positive integer`);
  }
  return t;
}

/** The daemon's hook must not break the connection it is told about. */
function notify(hook: (() => void) | undefined): void {
  try {
    hook?.();
  } catch {
    // ignored: the call proceeds; the daemon learns the outcome from the result
  }
}
