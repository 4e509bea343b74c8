/**
 * The undici connector for one call: it ignores the host undici asks for and
 * connects to the single address that was resolved and checked beforehand
 * (no second DNS lookup, so no rebinding window), with TLS verification on
 * and SNI / certificate checks against the origin's host name. After the
 * connection is up it checks the socket's actual remote address again and
 * destroys the socket, before a byte of the request is written, if that
 * address is not the pinned one or is not allowed.
 *
 * Invariants:
 * - `rejectUnauthorized: true` is explicit, so NODE_TLS_REJECT_UNAUTHORIZED=0
 *   in the environment cannot turn verification off.
 * - `onConnected` runs only for a socket that passed the check, and right
 *   before undici may write the request on it.
 */
import { isIP } from 'node:net';
import type { buildConnector, Dispatcher } from 'undici';
import { undici } from '../../libraries.js';
import { PosternError } from '../../rules/errors.js';
import { egressVerdict, sameAddress } from './ip-policy.js';
import { egressBlocked } from './target.js';
import type { CheckedConnection } from './types.js';

interface PinnedConnectorOptions extends CheckedConnection {
  readonly onConnected?: (remoteAddress: string) => void;
  /** Resume TLS sessions on later connections made by this connector (a pooled key); off for a one-call connector. */
  readonly keepTlsSessions?: boolean;
  /**
   * The connector that opens the socket (undici's by default). Tests pass one
   * that lands elsewhere, as a routing or NAT surprise would, to prove the
   * re-check after connecting.
   */
  readonly base?: buildConnector.connector;
}

export function pinnedConnector(opts: PinnedConnectorOptions): buildConnector.connector {
  const base = opts.base ?? undici().buildConnector({ timeout: opts.connectTimeoutMs, rejectUnauthorized: true, maxCachedSessions: opts.keepTlsSessions === true ? 100 : 0 });
  // SNI carries names only (RFC 6066), without a trailing dot.
  const servername = isIP(opts.host) === 0 ? opts.host.replace(/\.$/, '') : undefined;
  return (_requested, callback) => {
    const target = { hostname: opts.address, host: opts.address, protocol: opts.protocol, port: String(opts.port), servername };
    base(target, (err, socket) => {
      if (err !== null) {
        callback(err, null);
        return;
      }
      const remote = socket.remoteAddress ?? '';
      const verdict = egressVerdict(remote, opts.allowPrivate);
      if (!verdict.allowed) {
        socket.destroy();
        callback(egressBlocked(opts.host, remote === '' ? 'unknown' : remote, verdict.reason), null);
        return;
      }
      if (!sameAddress(remote, opts.address)) {
        socket.destroy();
        callback(
          new PosternError('EGRESS_BLOCKED', `connection to ${opts.host} refused: connected to ${remote}, not the checked ${opts.address}`, {
            details: { host: opts.host, address: remote, reason: 'address-changed' },
            sideEffectStarted: false,
          }),
          null,
        );
        return;
      }
      opts.onConnected?.(remote);
      callback(null, socket);
    });
  };
}

/**
 * An undici interceptor that calls `onWrite` when a request is about to be
 * written on a connection (undici's `onRequestStart`, called once the socket
 * is connected and checked, before the first byte): the moment from which a
 * failure may have reached the target.
 */
export function noticeOnWrite(onWrite: () => void): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts, handler) =>
    dispatch(opts, {
      onRequestStart: (controller, context: unknown) => {
        onWrite();
        handler.onRequestStart?.(controller, context);
      },
      onRequestUpgrade: (controller, statusCode, headers, socket) => handler.onRequestUpgrade?.(controller, statusCode, headers, socket),
      onResponseStart: (controller, statusCode, headers, statusMessage) => handler.onResponseStart?.(controller, statusCode, headers, statusMessage),
      onResponseData: (controller, chunk) => handler.onResponseData?.(controller, chunk),
      onResponseEnd: (controller, trailers) => handler.onResponseEnd?.(controller, trailers),
      onResponseError: (controller, error) => handler.onResponseError?.(controller, error),
    });
}
