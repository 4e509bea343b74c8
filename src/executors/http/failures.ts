/**
 * Maps whatever the network stack threw to one PosternError with a one-line
 * message. Library messages are never copied: they can quote request headers
 * (and so the credential). Only an error's code, when it looks like a code
 * (`ECONNREFUSED`, `UND_ERR_SOCKET`, `ERR_TLS_CERT_ALTNAME_INVALID`…), is
 * kept, and the original error is not attached as `cause`.
 *
 * Invariant: `sideEffectStarted` is true exactly when a connection to a
 * checked address had been handed to the HTTP client (the request may have
 * been written), whatever failed afterwards.
 */
import { isPosternError, PosternError } from '../../rules/errors.js';
import type { HttpTimeouts } from './types.js';

const CODE = /^[A-Z][A-Z0-9_]{0,63}$/;
const TLS_CODE = /^ERR_TLS_|^ERR_SSL_|CERT|SELF_SIGNED|UNABLE_TO_|DEPTH_ZERO|HOSTNAME_MISMATCH/;

/** An error's code if it looks like one; never its message. */
export function safeCode(e: unknown): string {
  const code = typeof e === 'object' && e !== null && 'code' in e ? e.code : undefined;
  return typeof code === 'string' && CODE.test(code) ? code : 'UNKNOWN';
}

interface FailureContext {
  readonly host: string;
  readonly port: number;
  /** A connection to a checked address was handed to the HTTP client. */
  readonly sent: boolean;
  readonly aborted: boolean;
  readonly timeouts: HttpTimeouts;
}

export function targetFailure(e: unknown, ctx: FailureContext): PosternError {
  if (isPosternError(e)) return e;
  const where = `${ctx.host}:${ctx.port}`;
  const code = safeCode(e);
  const details = { host: ctx.host, port: ctx.port, error: code };
  const sideEffectStarted = ctx.sent;
  if (ctx.aborted) {
    return new PosternError('TARGET_ERROR', 'the request was aborted', { details: { ...details, reason: 'aborted' }, sideEffectStarted });
  }
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
      return new PosternError('TARGET_TIMEOUT', `connecting to ${where} took longer than ${ctx.timeouts.connectMs} ms`, {
        details: { ...details, phase: 'connect' },
        sideEffectStarted,
      });
    case 'UND_ERR_HEADERS_TIMEOUT':
      return new PosternError('TARGET_TIMEOUT', `${where} sent no response headers within ${ctx.timeouts.headersMs} ms`, {
        details: { ...details, phase: 'headers' },
        sideEffectStarted,
      });
    case 'UND_ERR_BODY_TIMEOUT':
      return new PosternError('TARGET_TIMEOUT', `${where} paused the response body for more than ${ctx.timeouts.bodyMs} ms`, {
        details: { ...details, phase: 'body' },
        sideEffectStarted,
      });
    default:
      if (TLS_CODE.test(code)) {
        return new PosternError('TARGET_ERROR', `TLS verification of ${where} failed (${code})`, { details: { ...details, phase: 'tls' }, sideEffectStarted });
      }
      return new PosternError('TARGET_ERROR', `the request to ${where} failed (${code})`, { details, sideEffectStarted });
  }
}
