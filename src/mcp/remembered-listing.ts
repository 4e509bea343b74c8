/**
 * The tools a `postern mcp` shim last relayed from the daemon, remembered on
 * disk so that a host started while the daemon is down is still offered them
 * (stand-in.ts). Some hosts (Codex) list the tools once per session and never
 * again, whatever `tools/list_changed` says: without this memory such a
 * session would hold only `postern_status` to its end.
 *
 * Where: `$HOME/.local/state/postern/listings/<sha256(agent socket)[:32]>.json`,
 * one file per agent socket (so per Postern home), in the home of the user
 * the shim runs as — the agent's, which may be another OS user than the
 * operator. `XDG_STATE_HOME` is deliberately not read: some hosts pass HOME
 * to their MCP servers but no XDG_* variable, and the shim of every session
 * must find the same file. `POSTERN_LISTING_MEMORY=off` turns the memory off.
 *
 * Invariants:
 * - best effort: a memory that cannot be read or written is as if absent;
 *   nothing here ever fails a request;
 * - what is recalled is checked whole (the socket it was listed from, at most
 *   MAX_REMEMBERED tools, each a valid name with an object input schema, at
 *   most MAX_MEMORY_BYTES); anything else makes it absent, never half-read;
 * - written through a temp file and a rename (0600 in a 0700 directory): a
 *   reader sees the old listing or the new one;
 * - declared, never trusted: a remembered tool only ever gets
 *   DAEMON_UNAVAILABLE from the shim, and the revisions it declares in the
 *   hello can only make the daemon stricter (src/protocol/shim-hello.ts).
 *   Whoever can write the file can make the agent see tools that do not run.
 */
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { MAX_RELAYED } from '../protocol/shim-hello.js';
import { TOOL_NAME } from '../protocol/tool-name.js';

/** `off` turns the memory off (the demo's agent and the test helpers do). */
export const LISTING_MEMORY_ENV = 'POSTERN_LISTING_MEMORY';
const MAX_MEMORY_BYTES = 1024 * 1024;
const MAX_REMEMBERED = MAX_RELAYED;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The memory file for the agent socket `socketPath`, or null when the memory is off. */
export function listingMemoryPath(socketPath: string, env: NodeJS.ProcessEnv = process.env): string | null {
  if (env[LISTING_MEMORY_ENV] === 'off') return null;
  const home = env['HOME'] !== undefined && env['HOME'] !== '' ? env['HOME'] : homedir();
  const name = createHash('sha256').update(socketPath).digest('hex').slice(0, 32);
  return join(home, '.local', 'state', 'postern', 'listings', `${name}.json`);
}

/** A tool as remembered: a valid name (not `exclude`), an object input schema. */
function rememberable(t: unknown, exclude: string): t is Json {
  return isObject(t) && typeof t['name'] === 'string' && TOOL_NAME.test(t['name']) && t['name'] !== exclude && isObject(t['inputSchema']);
}

/**
 * The text of `path` when it is a regular file of at most `max` bytes, else null. Opened without
 * following a last symlink and without blocking, then checked on the open descriptor: a FIFO or a
 * device put at the path (whoever can write the agent's home can) never stalls the shim.
 */
function readRegularFile(path: string, max: number): string | null {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    return st.isFile() && st.size <= max ? readFileSync(fd, 'utf8') : null;
  } finally {
    closeSync(fd);
  }
}

export class ListingMemory {
  readonly #path: string | null;
  readonly #socket: string;
  /** The stand-in's own tool: never remembered. */
  readonly #exclude: string;
  /** The text last read or written: an unchanged listing is not written again. */
  #last: string | null = null;

  constructor(path: string | null, socketPath: string, exclude: string) {
    this.#path = path;
    this.#socket = socketPath;
    this.#exclude = exclude;
  }

  /** The tools last remembered for this socket, or null (none, off, unreadable or not valid). */
  recall(): Json[] | null {
    if (this.#path === null) return null;
    try {
      const text = readRegularFile(this.#path, MAX_MEMORY_BYTES);
      if (text === null) return null;
      const v: unknown = JSON.parse(text);
      if (!isObject(v) || v['v'] !== 1 || v['socket'] !== this.#socket || !Array.isArray(v['tools'])) return null;
      const tools: unknown[] = v['tools'];
      if (tools.length === 0 || tools.length > MAX_REMEMBERED || !tools.every((t) => rememberable(t, this.#exclude))) return null;
      if (new Set(tools.map((t) => t['name'])).size !== tools.length) return null;
      this.#last = text;
      return tools;
    } catch {
      return null;
    }
  }

  /** Remembers the tools of a full `tools/list` result the daemon gave (a result that is not one is ignored). */
  remember(result: unknown): void {
    if (this.#path === null || !isObject(result) || !Array.isArray(result['tools']) || result['nextCursor'] !== undefined) return;
    const tools = (result['tools'] as unknown[]).filter((t) => rememberable(t, this.#exclude));
    if (tools.length === 0 || tools.length > MAX_REMEMBERED) return;
    const text = `${JSON.stringify({ v: 1, socket: this.#socket, tools })}\n`;
    if (text === this.#last || Buffer.byteLength(text) > MAX_MEMORY_BYTES) return;
    const dir = join(this.#path, '..');
    const tmp = `${this.#path}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      writeFileSync(tmp, text, { mode: 0o600, flag: 'wx' });
      renameSync(tmp, this.#path);
      this.#last = text;
    } catch {
      try {
        unlinkSync(tmp);
      } catch {
        // never created
      }
    }
  }
}
