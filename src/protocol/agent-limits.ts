/**
 * The one size rule for what an agent may send (DESIGN §6.1). The operator
 * sets `max_request_bytes`: a call's arguments, as compact JSON, may be at
 * most that long (the pipeline's admission refuses more with
 * REQUEST_TOO_LARGE). Every transport derives its line limit from the same
 * number, so that arguments the pipeline would admit always fit on the wire
 * however they are escaped (`\u0061` is 6 bytes for 1), and a longer line is
 * answered exactly as the pipeline would answer it: a `tools/call` gets the
 * REQUEST_TOO_LARGE tool error, anything else -32600.
 *
 * The daemon's agent socket applies the configured limit; `postern mcp`,
 * which cannot read the configuration, guards its own memory with the
 * ceiling (the limit at the largest configurable `max_request_bytes`) and
 * leaves the configured one to the daemon.
 */
import { toolErrorResult } from './tool-result.js';
import { idFromEdges, INVALID_REQUEST, rpcError } from './jsonrpc-screen.js';
import type { Oversized } from './ndjson.js';

export const DEFAULT_MAX_REQUEST_BYTES = 256 * 1024;
/** The largest `max_request_bytes` a configuration may set. */
export const MAX_REQUEST_BYTES_CEILING = 4 * 1024 * 1024;
/** The most a JSON character can grow when escaped (`a` → `\u0061`). */
const ESCAPE_FACTOR = 6;
/** Room for the JSON-RPC envelope, the tool name and `_meta`. */
const ENVELOPE_BYTES = 64 * 1024;

/** The longest JSON-RPC line accepted when arguments may be `maxRequestBytes` long. */
export function agentLineLimit(maxRequestBytes: number): number {
  return maxRequestBytes * ESCAPE_FACTOR + ENVELOPE_BYTES;
}

/** The longest line `postern mcp` forwards, whatever the daemon's configuration. */
export const SHIM_LINE_LIMIT = agentLineLimit(MAX_REQUEST_BYTES_CEILING);

const PROTOCOL_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';
const TOOLS_CALL = /"method"\s*:\s*"tools\/call"/;

/**
 * The answer to a line longer than `limit`, from what can be seen of it; null
 * when no id can be read (a notification, or an id buried in the middle).
 */
export function oversizedAnswer(o: Oversized, limit: number): Record<string, unknown> | null {
  const id = idFromEdges(o);
  if (id === undefined) return null;
  if (!TOOLS_CALL.test(o.head) && !TOOLS_CALL.test(o.tail)) return rpcError(id, INVALID_REQUEST, `Invalid Request: the message is larger than ${limit} bytes`);
  const result: Record<string, unknown> = { ...toolErrorResult('REQUEST_TOO_LARGE', `the request is larger than ${limit} bytes and was not run`, false) };
  // A 2026-07-28 request (its envelope in `_meta`) gets a result of its era.
  if (o.head.includes(PROTOCOL_VERSION_META_KEY) || o.tail.includes(PROTOCOL_VERSION_META_KEY)) result['resultType'] = 'complete';
  return { jsonrpc: '2.0', id, result };
}
