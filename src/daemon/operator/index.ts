/**
 * The daemon's operator channel: the socket `postern approvals …` and
 * `postern attach` reach after proving the vault passphrase (spec:
 * src/protocol/operator/wire.ts), and in-process ports (`postern up`) handed
 * in by the composition root. Both serve the same session (./session.ts).
 *
 * Invariants: the socket is 0600 in a private directory, never created over a
 * symlink, a foreign file or a live socket; nobody is authenticated while
 * `key()` returns null; decisions are attributed to the backend's `operatorName`; at most `maxConnections` connections exist and
 * at most `maxUnauthenticated` of them are still in the handshake. A new
 * connection is never refused for lack of a handshake slot: the OLDEST
 * unauthenticated connection is evicted instead, so a process that keeps
 * opening connections cannot lock the operator out — the operator's own
 * connection is always among the newest and proves itself within a round
 * trip. Only when every slot holds an authenticated operator is a newcomer
 * refused. close() drops every connection and removes the socket only if it
 * is still ours.
 */
import { createServer, type Socket } from 'node:net';
import type { MessagePort } from 'node:worker_threads';
import { acceptPortTransport } from '../../protocol/operator/port-transport.js';
import { usableKey } from '../../protocol/operator/crypto.js';
import type { OperatorTransport } from '../../protocol/operator/index.js';
import type { EventBus } from '../services/events.js';
import { serveSocket, type OperatorNotice } from './connection.js';
import type { OperatorBackend } from './handlers.js';
import { serveOperator } from './session.js';
import { listenPrivate, prepareSocketPath, removeIfOurs } from '../lifecycle/socket-file.js';

export type { OperatorNotice } from './connection.js';
export type { OperatorBackend } from './handlers.js';

export interface OperatorServerOptions {
  readonly socketPath: string;
  /** The vault's operator-auth key, or null while locked (then every handshake is refused). */
  readonly key: () => Uint8Array | null;
  /** What the ops do (backend.lock is called for `lock`, before the answer is sent). */
  readonly backend: OperatorBackend;
  readonly bus: EventBus;
  readonly handshakeTimeoutMs?: number;
  /** Delay before a failed proof is answered (default 250 ms). */
  readonly failureDelayMs?: number;
  readonly maxConnections?: number;
  readonly maxUnauthenticated?: number;
  /** Per-connection output backlog bound; a subscriber that falls further behind is dropped (OPERATOR_TOO_SLOW). */
  readonly maxBufferedBytes?: number;
  /** Authentication outcomes, for the daemon's log (never contains key material). */
  readonly onNotice?: (n: OperatorNotice) => void;
}

/**
 * How long a peer may take to prove the key. A real client has derived its key
 * before it connects and answers the hello at once; a second is generous.
 */
export const HANDSHAKE_TIMEOUT_MS = 1_000;

export interface OperatorServer {
  /**
   * Serves a private in-process port (`postern up`): the peer attaches with
   * connectPortTransport. Resolves once attached; rejects if it never does.
   */
  attachPort(port: MessagePort): Promise<void>;
  close(): Promise<void>;
}

function usableKeyNow(key: () => Uint8Array | null): boolean {
  try {
    return usableKey(key());
  } catch {
    return false; // a vault that throws VAULT_LOCKED is locked
  }
}

export async function startOperatorServer(opts: OperatorServerOptions): Promise<OperatorServer> {
  await prepareSocketPath(opts.socketPath);
  const sockets = new Set<Socket>();
  /** Connections still in the handshake, oldest first (a Set keeps insertion order). */
  const handshaking = new Set<Socket>();
  const maxConnections = opts.maxConnections ?? 32;
  const maxUnauthenticated = Math.min(opts.maxUnauthenticated ?? 16, maxConnections);
  const evictOldest = (): boolean => {
    const oldest = handshaking.values().next();
    if (oldest.done === true) return false;
    handshaking.delete(oldest.value);
    sockets.delete(oldest.value);
    oldest.value.destroy();
    return true;
  };

  const transports = new Set<OperatorTransport>();
  const serve = (t: OperatorTransport): void => {
    transports.add(t);
    void t.closed.then(() => transports.delete(t));
    serveOperator(t, {
      backend: opts.backend,
      bus: opts.bus,
      isLocked: () => !usableKeyNow(opts.key),
      maxBacklogBytes: opts.maxBufferedBytes ?? 8 * 1024 * 1024,
      onRefused: (code, reason) => notice({ type: 'refused', code, reason }),
    });
  };
  const notice = (n: OperatorNotice): void => {
    try {
      opts.onNotice?.(n);
    } catch {
      // A failing logger must not take the channel down.
    }
  };

  const server = createServer({ allowHalfOpen: false }, (sock) => {
    while (handshaking.size >= maxUnauthenticated && evictOldest()) {
      // make room: the newest connection is the one most likely to be the operator's
    }
    if (sockets.size >= maxConnections && !evictOldest()) {
      sock.destroy(); // every slot is an authenticated operator
      return;
    }
    sockets.add(sock);
    handshaking.add(sock);
    sock.once('close', () => {
      handshaking.delete(sock);
      sockets.delete(sock);
    });
    serveSocket(sock, {
      key: opts.key,
      handshakeTimeoutMs: opts.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS,
      failureDelayMs: opts.failureDelayMs ?? 250,
      notify: (n) => {
        if (n.type === 'authenticated') handshaking.delete(sock);
        notice(n);
      },
      ready: serve,
    });
  });
  const identity = await listenPrivate(server, opts.socketPath);

  let closing: Promise<void> | null = null;
  return {
    async attachPort(port) {
      const t = await acceptPortTransport(port);
      serve(t);
      notice({ type: 'authenticated', role: t.role });
    },
    close() {
      closing ??= (async () => {
        await removeIfOurs(opts.socketPath, identity);
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const s of sockets) s.destroy();
        for (const t of transports) t.close(null);
        await closed;
      })();
      return closing;
    },
  };
}
