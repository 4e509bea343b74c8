/**
 * The `postern mcp` shim's hello: one JSON line it sends before the MCP
 * stream on each connection to the daemon's agent socket —
 * `{"postern_shim":1,"pid":N,"relayed":{"toolset":T,"revisions":{TOOL:REV}}}`.
 * `relayed` is what the shim relayed to its client from the daemon's last
 * `tools/list` (each tool's `dev.postern/revision`, the listing's
 * `dev.postern/toolset`), declared again when it reconnects so the new
 * session knows what the client planned against.
 *
 * Invariants: the line is at most HELLO_MAX_BYTES; at most MAX_RELAYED tools,
 * each a valid tool name with an integer revision in 1..1 000 000; anything
 * else in `relayed` makes it absent (never half-trusted). Declared, not
 * authenticated: it can only make the daemon treat calls as older plans
 * (stricter), never run anything the catalog does not serve. No zod here: the
 * shim must stay small (the import-boundary test).
 */
import { META_PREFIX, TOOL_NAME } from './tool-name.js';

export const HELLO_MAX_BYTES = 64 * 1024;
export const MAX_RELAYED = 512;
const MAX_REVISION = 1_000_000;
const TOOLSET = /^[A-Za-z0-9._-]{1,64}$/;

export interface RelayedListing {
  readonly toolset: string | null;
  readonly revisions: ReadonlyMap<string, number>;
}

export interface ShimHello {
  readonly pid: number | null;
  readonly relayed: RelayedListing | null;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const isRevision = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= MAX_REVISION;

/** The hello line (with its newline); a listing too large to declare is left out. */
export function encodeHello(pid: number, relayed: RelayedListing | null): string {
  const base = { postern_shim: 1, pid };
  if (relayed === null || relayed.revisions.size > MAX_RELAYED) return `${JSON.stringify(base)}\n`;
  const line = JSON.stringify({ ...base, relayed: { toolset: relayed.toolset, revisions: Object.fromEntries(relayed.revisions) } });
  return Buffer.byteLength(line) < HELLO_MAX_BYTES ? `${line}\n` : `${JSON.stringify(base)}\n`;
}

function relayedOf(v: unknown): RelayedListing | null {
  if (!isObject(v) || !isObject(v['revisions'])) return null;
  const toolset = v['toolset'];
  if (toolset !== null && !(typeof toolset === 'string' && TOOLSET.test(toolset))) return null;
  const entries = Object.entries(v['revisions']);
  if (entries.length > MAX_RELAYED) return null;
  const revisions = new Map<string, number>();
  for (const [name, rev] of entries) {
    if (!TOOL_NAME.test(name) || !isRevision(rev)) return null;
    revisions.set(name, rev);
  }
  return { toolset, revisions };
}

/** The hello in `line` (without its newline), or null when the line is not one. */
export function parseHello(line: Buffer): ShimHello | null {
  if (line.length >= HELLO_MAX_BYTES) return null;
  let v: unknown;
  try {
    v = JSON.parse(line.toString('utf8'));
  } catch {
    return null;
  }
  if (!isObject(v) || v['postern_shim'] !== 1) return null;
  const pid = v['pid'];
  return { pid: typeof pid === 'number' && Number.isInteger(pid) ? pid : null, relayed: relayedOf(v['relayed']) };
}

/**
 * What a `tools/list` result relays: each tool's revision and the toolset, from
 * their `_meta` under `prefix`; null when the result is not a full listing
 * (a page with a cursor is not remembered).
 */
export function listingOf(result: unknown, prefix = META_PREFIX): RelayedListing | null {
  if (!isObject(result) || !Array.isArray(result['tools']) || result['nextCursor'] !== undefined) return null;
  const revisions = new Map<string, number>();
  let toolset: string | null = null;
  for (const t of result['tools'] as unknown[]) {
    if (!isObject(t) || typeof t['name'] !== 'string' || !isObject(t['_meta'])) continue;
    const rev = t['_meta'][`${prefix}/revision`];
    const ts = t['_meta'][`${prefix}/toolset`];
    if (typeof ts === 'string' && TOOLSET.test(ts)) toolset = ts;
    if (isRevision(rev) && TOOL_NAME.test(t['name']) && revisions.size < MAX_RELAYED) revisions.set(t['name'], rev);
  }
  return { toolset, revisions };
}
