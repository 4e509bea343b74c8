/**
 * HttpPool: the HTTP executor's kept-alive connections, so a call to an
 * origin that was just called pays no TCP or TLS handshake.
 *
 * Invariants:
 * - One undici `Pool` per key = (origin, checked address, allowPrivate,
 *   connect timeout, credential name, keyed digest of the credential's kind
 *   and secret bytes). A call reuses a connection only to the very address its
 *   own resolution just checked, for the same credential bytes: a new DNS
 *   answer or a rotated secret gets new connections. The key never holds the
 *   secret itself; a value with a source is digested once (credential-digest.ts).
 * - Every new connection goes through the pinned connector (connector.ts),
 *   so the connected-address check runs on every connection, new or not yet
 *   reused; TLS sessions are resumed only within one key.
 * - Idle connections close after keepAliveMs (or the server's shorter
 *   keep-alive hint); at most maxOrigins keys are kept, least recently used
 *   first out; idle sockets never keep the process alive.
 * - retire(name) and close() (vault change, lock) let running requests finish
 *   and then close the connections: a request that is being answered is never
 *   cut by them. destroy() (shutdown past its grace) cuts them. Later calls
 *   open new connections.
 */
import type { Pool } from 'undici';
import { undici } from '../../libraries.js';
import { CredentialDigests } from '../credential-digest.js';
import { pinnedConnector } from './connector.js';
import type { CheckedConnection, HttpCredential, HttpDispatchers } from './types.js';

export interface HttpPoolOptions {
  /** How long an idle connection stays open (undici's keepAliveTimeout). */
  readonly keepAliveMs?: number;
  /** Concurrent connections per key. */
  readonly connectionsPerOrigin?: number;
  /** Keys kept at once; the least recently used is closed beyond this. */
  readonly maxOrigins?: number;
}

interface PoolTarget {
  readonly connector: CheckedConnection;
  readonly origin: string;
  readonly credential: HttpCredential | null;
}

interface Entry {
  readonly pool: Pool;
  readonly credential: string | null;
}

export class HttpPool implements HttpDispatchers {
  readonly #entries = new Map<string, Entry>();
  readonly #digests = new CredentialDigests();
  readonly #keepAliveMs: number;
  readonly #connections: number;
  readonly #maxOrigins: number;

  constructor(opts: HttpPoolOptions = {}) {
    this.#keepAliveMs = opts.keepAliveMs ?? 4_000;
    this.#connections = opts.connectionsPerOrigin ?? 16;
    this.#maxOrigins = opts.maxOrigins ?? 64;
  }

  /** The kept-alive dispatcher for this target, created on first use. */
  dispatcher(target: PoolTarget): Pool {
    const key = this.#key(target);
    const found = this.#entries.get(key);
    if (found !== undefined && !found.pool.closed && !found.pool.destroyed) {
      // Most recently used last, so the first key is the one to evict.
      this.#entries.delete(key);
      this.#entries.set(key, found);
      return found.pool;
    }
    const pool = new (undici().Pool)(target.origin, {
      connections: this.#connections,
      connect: pinnedConnector({ ...target.connector, keepTlsSessions: true }),
      pipelining: 1,
      keepAliveTimeout: this.#keepAliveMs,
      keepAliveMaxTimeout: this.#keepAliveMs,
    });
    this.#entries.set(key, { pool, credential: target.credential?.meta.name ?? null });
    while (this.#entries.size > this.#maxOrigins) {
      const [oldest, entry] = this.#entries.entries().next().value as [string, Entry];
      this.#entries.delete(oldest);
      void entry.pool.close().catch(() => undefined);
    }
    return pool;
  }

  /** Closes (once idle) every connection made for this credential; returns how many keys were retired. */
  retire(credential: string): number {
    let n = 0;
    for (const [key, entry] of this.#entries) {
      if (entry.credential !== credential) continue;
      this.#entries.delete(key);
      void entry.pool.close().catch(() => undefined);
      n++;
    }
    return n;
  }

  /** Closes every connection once its running request is done; the pool stays usable. */
  async close(): Promise<void> {
    const pools = [...this.#entries.values()].map((e) => e.pool);
    this.#entries.clear();
    await Promise.allSettled(pools.map((p) => p.close()));
  }

  /** Ends every connection now, running requests included (daemon shutdown, past its grace period). */
  async destroy(): Promise<void> {
    const pools = [...this.#entries.values()].map((e) => e.pool);
    this.#entries.clear();
    await Promise.allSettled(pools.map((p) => p.destroy()));
  }

  /** How many keys hold a dispatcher (for tests and status). */
  get size(): number {
    return this.#entries.size;
  }

  #key(t: PoolTarget): string {
    const c = t.connector;
    const cred = t.credential === null ? null : [t.credential.meta.name, this.#digests.of(t.credential)];
    return JSON.stringify([t.origin, c.protocol, c.host, c.address, c.port, c.allowPrivate, c.connectTimeoutMs, cred]);
  }
}
