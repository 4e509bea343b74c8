/**
 * The client's `subscriptions/listen` requests (MCP 2026-07-28), held by the
 * shim for as long as the client keeps them open — across daemon restarts.
 * In that era the host never sends `initialize`: a listen request is how it
 * asks to be told that the tools changed, and it stays open (no result) until
 * the client cancels it or the server ends it.
 *
 * Invariants:
 * - while the daemon is away the stand-in acknowledges a listen itself (what it
 *   can honor: `toolsListChanged`), and the subscription stays open;
 * - a subscription is never ended because the daemon went away: a daemon that
 *   stops answers each listen with its graceful-close result, which the shim
 *   keeps from the client (its subscription goes on with the next daemon);
 * - on reconnect every open listen is replayed to the new daemon connection
 *   (its acknowledgement is the shim's, not relayed again), and each one that
 *   asked for tool changes is sent `notifications/tools/list_changed` stamped
 *   with its subscription id.
 */
import type { SubscriptionFilter } from '@modelcontextprotocol/server';

type Json = Record<string, unknown>;

/** The `_meta` key that ties a notification (or the listen's closing result) to its subscription. */
const SUBSCRIPTION_ID_META_KEY = 'io.modelcontextprotocol/subscriptionId';
const ACKNOWLEDGED = 'notifications/subscriptions/acknowledged';

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const idKey = (id: unknown): string => JSON.stringify(id ?? null);

interface Listen {
  readonly id: unknown;
  /** The request as the client sent it, replayed on each reconnect. */
  readonly line: Buffer;
  readonly filter: SubscriptionFilter;
}

/** The filter a listen request asked for, or undefined when it names none (the daemon's SDK answers that -32602). */
function filterOf(params: unknown): SubscriptionFilter | undefined {
  const n = isObject(params) ? params['notifications'] : undefined;
  return isObject(n) ? n : undefined;
}

/** A notification stamped with its subscription id. */
export function stamped(method: string, params: Json, id: unknown): Json {
  const meta = isObject(params['_meta']) ? params['_meta'] : {};
  return { jsonrpc: '2.0', method, params: { ...params, _meta: { ...meta, [SUBSCRIPTION_ID_META_KEY]: id } } };
}

/** What the stand-in can honor of a filter: tool changes only (the one list it serves). */
export function acknowledgement(id: unknown, params: unknown): Json | undefined {
  const filter = filterOf(params);
  if (filter === undefined) return undefined;
  const honored: SubscriptionFilter = filter.toolsListChanged === true ? { toolsListChanged: true } : {};
  return stamped(ACKNOWLEDGED, { notifications: honored }, id);
}

export class Listens {
  readonly #open = new Map<string, Listen>();

  get size(): number {
    return this.#open.size;
  }

  /** A client's listen request; false when it names no filter (not held: it gets an error answer). */
  add(msg: Json, line: Buffer): boolean {
    const filter = filterOf(msg['params']);
    if (filter === undefined) return false;
    this.#open.set(idKey(msg['id']), { id: msg['id'], line, filter });
    return true;
  }

  /** The client cancelled a request: true if it was one of its listens. */
  cancel(requestId: unknown): boolean {
    return this.#open.delete(idKey(requestId));
  }

  has(id: unknown): boolean {
    return this.#open.has(idKey(id));
  }

  /** The lines to replay to a new daemon connection, and the ids whose acknowledgement (or refusal) ends the replay. */
  replay(): { readonly lines: Buffer[]; readonly ids: Set<string> } {
    const all = [...this.#open.values()];
    return { lines: all.map((l) => l.line), ids: new Set(all.map((l) => idKey(l.id))) };
  }

  /** The notices for a reconnect: each subscription that asked for tool changes is told to list again. */
  toolsChanged(): Json[] {
    return [...this.#open.values()].filter((l) => l.filter.toolsListChanged === true).map((l) => stamped('notifications/tools/list_changed', {}, l.id));
  }

  /** Whether a daemon line is the graceful end of one of the client's open listens (kept from the client). */
  isClosingResult(m: Json | null): boolean {
    if (m === null || !('result' in m) || 'method' in m) return false;
    return this.has(m['id']);
  }

  /** Whether a daemon line acknowledges (or refuses) a listen being replayed: an ack names its id in `_meta`, a refusal in `id`. */
  static answers(m: Json | null, ids: ReadonlySet<string>): string | undefined {
    if (m === null) return undefined;
    if (m['method'] === ACKNOWLEDGED) {
      const meta = isObject(m['params']) ? m['params']['_meta'] : undefined;
      const key = isObject(meta) ? idKey(meta[SUBSCRIPTION_ID_META_KEY]) : undefined;
      return key !== undefined && ids.has(key) ? key : undefined;
    }
    if ('error' in m && ids.has(idKey(m['id']))) return idKey(m['id']);
    return undefined;
  }
}
