/**
 * The JSON-RPC envelope screen, pure: what Postern answers itself before a
 * message reaches the MCP SDK. The SDK (2.4) silently drops any message its
 * envelope schema refuses — `params` that is an array, `null`, a string, a
 * number or a boolean; a `_meta` that is not an object; a progress token that
 * is neither a string nor an integer; an id that is `null`, fractional or an
 * object — so the client would wait for its own timeout. Every such request
 * gets a JSON-RPC error here instead (protocol errors stay JSON-RPC errors,
 * DESIGN §6): -32602 Invalid params when the request itself is well formed,
 * -32600 Invalid Request when it is not (with `id: null` when its id cannot be
 * used). A notification is never answered (JSON-RPC), only dropped.
 *
 * Both entry points apply it (`screenBytes`), daemon or no daemon: the
 * daemon's agent socket and HTTP listener, and the `postern mcp` shim, which
 * answers by the same rule whether the daemon is there or not and never
 * forwards what it refuses:
 * - bytes that are not UTF-8, or not JSON → -32700 Parse error (with the id a
 *   lenient reading finds, else `id: null`), never "repaired" into U+FFFD;
 * - a `tools/call` whose `name` is not a string or whose `arguments` is not an
 *   object → -32602 (the SDK would answer the same; the shim alone could not).
 */
import { isUtf8 } from 'node:buffer';

type Json = Record<string, unknown>;
export type RpcId = string | number;

type ScreenVerdict =
  | { readonly kind: 'pass' }
  | { readonly kind: 'drop'; readonly why: string }
  | { readonly kind: 'answer'; readonly response: Json };

const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
const INVALID_PARAMS = -32602;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const validId = (v: unknown): v is RpcId => typeof v === 'string' || (typeof v === 'number' && Number.isSafeInteger(v));
const kindOf = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`);

export function rpcError(id: RpcId | null, code: number, message: string): Json {
  return { jsonrpc: '2.0', id, error: { code, message } };
}

/** What is wrong with a request's `params`, if anything the SDK would drop it for. */
function paramsProblem(m: Json): string | undefined {
  if (!Object.hasOwn(m, 'params')) return undefined;
  const params = m['params'];
  if (!isObject(params)) return `params must be an object, not ${kindOf(params)}`;
  if (!Object.hasOwn(params, '_meta')) return undefined;
  const meta = params['_meta'];
  if (!isObject(meta)) return `params._meta must be an object, not ${kindOf(meta)}`;
  if (Object.hasOwn(meta, 'progressToken') && !validId(meta['progressToken'])) return 'params._meta.progressToken must be a string or an integer';
  return undefined;
}

/** What is wrong with a `tools/call`'s own params (already an object, or absent), if anything. */
function callProblem(m: Json): string | undefined {
  if (m['method'] !== 'tools/call') return undefined;
  const params = m['params'];
  if (!isObject(params)) return 'tools/call needs params with a "name"';
  if (typeof params['name'] !== 'string') return `the tool "name" must be a string, not ${Object.hasOwn(params, 'name') ? kindOf(params['name']) : 'absent'}`;
  if (Object.hasOwn(params, 'arguments') && !isObject(params['arguments'])) return `"arguments" must be an object, not ${kindOf(params['arguments'])}`;
  return undefined;
}

/** The verdict on one parsed JSON message. */
export function screenMessage(msg: unknown): ScreenVerdict {
  if (!isObject(msg)) return { kind: 'answer', response: rpcError(null, INVALID_REQUEST, `Invalid Request: a message must be a JSON object, not ${kindOf(msg)} (batches are not supported)`) };
  // A response (to one of the server's own requests) is never answered: the SDK matches it or ignores it.
  if (!Object.hasOwn(msg, 'method') && (Object.hasOwn(msg, 'result') || Object.hasOwn(msg, 'error'))) return { kind: 'pass' };
  const hasId = Object.hasOwn(msg, 'id');
  const id = hasId && validId(msg['id']) ? msg['id'] : null;
  const invalid = (why: string): ScreenVerdict => ({ kind: 'answer', response: rpcError(id, INVALID_REQUEST, `Invalid Request: ${why}`) });
  if (msg['jsonrpc'] !== '2.0') return invalid('"jsonrpc" must be "2.0"');
  if (hasId && id === null) return invalid('"id" must be a string or an integer');
  if (!Object.hasOwn(msg, 'method')) return invalid('a message needs a "method", or a "result" or "error"');
  if (typeof msg['method'] !== 'string') return hasId ? invalid('"method" must be a string') : { kind: 'drop', why: 'a notification whose method is not a string' };
  const problem = paramsProblem(msg) ?? callProblem(msg);
  if (problem === undefined) return { kind: 'pass' };
  if (id === null) return { kind: 'drop', why: `a notification with invalid params: ${problem}` };
  return { kind: 'answer', response: rpcError(id, INVALID_PARAMS, `Invalid params: ${problem}`) };
}

/** The id of a JSON-RPC message only the edges of which could be seen (the SDKs put `id` first or last). */
export function idFromEdges(o: { readonly head: string; readonly tail: string }): RpcId | undefined {
  const pick = (m: RegExpExecArray | null): RpcId | undefined => {
    const raw = m?.[1];
    if (raw === undefined) return undefined;
    try {
      const v: unknown = JSON.parse(raw);
      return typeof v === 'string' || typeof v === 'number' ? v : undefined;
    } catch {
      return undefined;
    }
  };
  return pick(/"id"\s*:\s*(-?\d{1,16}|"(?:[^"\\]|\\.){0,200}")\s*\}\s*$/.exec(o.tail)) ?? pick(/^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,16}|"(?:[^"\\]|\\.){0,200}")/.exec(o.head));
}

type BytesVerdict =
  /** Well formed: the message, parsed. */
  | { readonly kind: 'pass'; readonly message: unknown }
  | Exclude<ScreenVerdict, { readonly kind: 'pass' }>;

/** The id of bytes that cannot be accepted, if a lenient reading (U+FFFD in place of bad bytes) finds one. */
function lenientId(bytes: Buffer): RpcId | null {
  try {
    const v: unknown = JSON.parse(bytes.toString('utf8'));
    return isObject(v) && validId(v['id']) ? v['id'] : null;
  } catch {
    return null;
  }
}

/** The verdict on one whole message, as the bytes that carried it. */
export function screenBytes(bytes: Buffer): BytesVerdict {
  if (!isUtf8(bytes)) return { kind: 'answer', response: rpcError(lenientId(bytes), PARSE_ERROR, 'Parse error: the message is not valid UTF-8') };
  let message: unknown;
  try {
    message = JSON.parse(bytes.toString('utf8'));
  } catch {
    return { kind: 'answer', response: rpcError(null, PARSE_ERROR, 'Parse error: the message is not valid JSON') };
  }
  const verdict = screenMessage(message);
  return verdict.kind === 'pass' ? { kind: 'pass', message } : verdict;
}
