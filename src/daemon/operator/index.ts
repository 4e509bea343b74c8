/**
 * The daemon's operator socket: `postern approvals …` (and `postern attach`)
 * list, approve and deny pending calls through it after proving the vault
 * passphrase (spec: src/protocol/operator.ts).
 *
 * Invariants: the socket is 0600 in a private directory, never created over a
 * symlink, a foreign file or a live socket; nobody is authenticated while
 * `key()` returns null; decisions are attributed to `operatorName`
 * ("operator-cli" by default); at most `maxConnections` connections exist and
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
import type { ApprovalQueue } from '../../approvals/queue.js';
import { serveConnection, type OperatorNotice } from './connection.js';
import { listenPrivate, prepareSocketPath, removeIfOurs } from '../socket-file.js';

export type { OperatorNotice } from './connection.js';

export interface OperatorServerOptions {
  readonly socketPath: string;
  /** The vault's operator-auth key, or null while locked (then every handshake is refused). */
  readonly key: () => Uint8Array | null;
  readonly queue: ApprovalQueue;
  /** A JSON-serializable status object for `status` (no secret values: it crosses the socket). */
  readonly status: () => unknown;
  /** Called for `lock`, before the answer is sent; tear the server down asynchronously if at all. */
  readonly onLock: () => void;
  readonly operatorName?: string;
  readonly handshakeTimeoutMs?: number;
  /** Delay before a failed proof is answered (default 250 ms). */
  readonly failureDelayMs?: number;
  readonly maxConnections?: number;
  readonly maxUnauthenticated?: number;
  /** Per-connection output buffer bound; a subscriber that falls further behind is dropped. */
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
  close(): Promise<void>;
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
    serveConnection(sock, {
      key: opts.key,
      queue: opts.queue,
      status: opts.status,
      onLock: opts.onLock,
      operatorName: opts.operatorName ?? 'operator-cli',
      handshakeTimeoutMs: opts.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS,
      failureDelayMs: opts.failureDelayMs ?? 250,
      maxBufferedBytes: opts.maxBufferedBytes ?? 8 * 1024 * 1024,
      notify: (n) => {
        if (n.type === 'authenticated') handshaking.delete(sock);
        try {
          opts.onNotice?.(n);
        } catch {
          // A failing logger must not take the channel down.
        }
      },
    });
  });
  const identity = await listenPrivate(server, opts.socketPath);

  let closing: Promise<void> | null = null;
  return {
    close() {
      closing ??= (async () => {
        await removeIfOurs(opts.socketPath, identity);
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const s of sockets) s.destroy();
        await closed;
      })();
      return closing;
    },
  };
}
