/**
 * The client's side of `postern mcp` (shim.ts): how the shim writes to the
 * client, and what it answers by itself — while the daemon is away, or for
 * the requests the daemon still owed when its connection dropped — in each
 * request's protocol era.
 *
 * Invariants:
 * - the daemon's bytes are relayed as they come, so the client's stream may
 *   stand in the middle of a daemon line; the shim's own lines wait for that
 *   line to end (or, when the daemon went away, end it), never landing inside;
 * - 2026-07-28 results carry `resultType: 'complete'` and server info, and a
 *   stand-in listing is not cacheable;
 * - a `tools/call` that was in flight when the connection dropped is reported
 *   as possibly started (`unknown`), never as not run;
 * - a `subscriptions/listen` is acknowledged and stays open: the shim tells it
 *   when the daemon is back (listens.ts);
 * - while the daemon is away, the listing holds `postern_status` and the tools
 *   the daemon last listed (remembered-listing.ts), so a host that lists once
 *   per session still has them once the daemon runs; a call of one is
 *   DAEMON_UNAVAILABLE, never run, and the client is then planning against
 *   the remembered revisions (`planned`: declared in the next hello).
 */
import { encodeLine } from '../protocol/ndjson.js';
import { acknowledgement } from './listens.js';
import { toolErrorResult } from '../protocol/tool-result.js';
import { ErrorCodes } from '../rules/errors.js';

export type Json = Record<string, unknown>;

const FALLBACK_PROTOCOL = '2025-11-25';
/** The modern era the daemon serves (its SDK's `serveStdio`). */
const MODERN_PROTOCOL = '2026-07-28';
/** The one tool listed while the daemon is away. */
export const STATUS_TOOL = 'postern_status';
/** A request carrying this `_meta` key speaks the 2026-07-28 era (no `initialize`; per-request envelope). */
const PROTOCOL_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';
const SERVER_INFO_META_KEY = 'io.modelcontextprotocol/serverInfo';

/** What the agent is told while the daemon is away: one sentence it can pass on to the operator. */
function daemonDownMessage(home: string | undefined): string {
  const where = home === undefined ? '' : ` for the home ${home}`;
  return `the Postern daemon is not running${where}: ask the operator to run \`postern daemon\` (Postern's tools appear once it is running)`;
}

/** A call while the daemon is away; `tool` when it is one of the remembered tools the stand-in listed. */
function unavailableResult(home: string | undefined, tool?: string): Json {
  const rest = tool === undefined ? '' : `; ${tool} did not run, and the same call can be made once the daemon runs`;
  return toolErrorResult('DAEMON_UNAVAILABLE', `${daemonDownMessage(home)}${rest}`, false);
}

/** The stand-in listing: no outputSchema (so no client validates its error result), no arguments. */
function statusTool(home: string | undefined): Json {
  return {
    name: STATUS_TOOL,
    title: 'Postern status (daemon not running)',
    description: `Postern is unavailable: ${daemonDownMessage(home)}. Call this tool to check again; it runs nothing.`,
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  };
}

/** A `tools/call` the daemon had accepted when the connection dropped: it may have run. */
function lostCallResult(): Json {
  const message =
    'the connection to the Postern daemon was lost while this call was in progress: it may or may not have taken effect. ' +
    'A retry with the same idempotency_key never runs it twice, and postern_call_status reports its outcome once the daemon is back';
  return toolErrorResult('DAEMON_UNAVAILABLE', message, 'unknown');
}

/** Whether a request's params carry the 2026-07-28 per-request envelope. */
export function isModern(params: unknown): boolean {
  const meta = typeof params === 'object' && params !== null ? (params as Json)['_meta'] : undefined;
  return typeof meta === 'object' && meta !== null && typeof (meta as Json)[PROTOCOL_VERSION_META_KEY] === 'string';
}

/** A `tools/call` that asks to run as an MCP task. */
export function asksForTask(m: Json | null): boolean {
  const params = m?.['params'];
  if (m?.['method'] !== 'tools/call' || typeof params !== 'object' || params === null) return false;
  const task = (params as Json)['task'];
  return typeof task === 'object' && task !== null && !Array.isArray(task);
}

/** The client's output stream: the daemon's bytes as they come, the shim's own lines only between daemon lines. */
export class ClientOutput {
  readonly #out: NodeJS.WritableStream;
  #midLine = false;
  readonly #deferred: string[] = [];

  constructor(out: NodeJS.WritableStream) {
    this.#out = out;
  }

  /** Daemon bytes, relayed as they come. */
  relay(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.#out.write(chunk);
    this.#midLine = chunk[chunk.length - 1] !== 0x0a;
    if (!this.#midLine) this.#flush();
  }

  /** The daemon went away: a line it cut off is ended (the client drops it as unparseable), then what waited goes. */
  endBrokenLine(): void {
    if (this.#midLine) this.#out.write('\n');
    this.#midLine = false;
    this.#flush();
  }

  /** One of the shim's own messages. */
  write(msg: Json): void {
    const line = encodeLine(msg);
    if (this.#midLine) this.#deferred.push(line);
    else this.#out.write(line);
  }

  #flush(): void {
    if (this.#deferred.length > 0) this.#out.write(this.#deferred.splice(0).join(''));
  }
}

/** A client request the daemon has not answered yet. */
export interface Owed {
  readonly id: unknown;
  readonly method: string;
  readonly modern: boolean;
  readonly task: boolean;
}

interface StandInOptions {
  /** The Postern home, named in what the agent is told. */
  readonly home: string | undefined;
  readonly version: string;
  /** The tools the daemon last listed (remembered-listing.ts), or null. */
  readonly recall: () => Json[] | null;
  /** The client was given these remembered tools: what it now plans against. */
  readonly planned: (tools: Json[]) => void;
}

/** What the shim answers by itself, in each request's era. */
export class StandIn {
  /** The client was given the stand-in listing: it must re-list once the daemon is back. */
  listed = false;
  readonly #out: ClientOutput;
  readonly #opts: StandInOptions;
  readonly #instructions: string;
  /** The remembered tools the stand-in listed. */
  #offered = new Set<string>();

  constructor(out: ClientOutput, opts: StandInOptions) {
    this.#out = out;
    this.#opts = opts;
    this.#instructions = `Postern: ${daemonDownMessage(opts.home)}.`;
  }

  /**
   * A result the shim makes itself, in the request's era: 2026-07-28 results
   * must say `resultType: 'complete'`, and a listing must say how long it may
   * be cached (not at all: it is a stand-in while the daemon is away).
   */
  result(id: unknown, method: string, modern: boolean, body: Json): void {
    if (!modern) return this.#out.write({ jsonrpc: '2.0', id, result: body });
    const cache = method === 'tools/list' ? { ttlMs: 0, cacheScope: 'private' } : {};
    this.#out.write({ jsonrpc: '2.0', id, result: { ...body, ...cache, resultType: 'complete', _meta: { [SERVER_INFO_META_KEY]: { name: 'postern', version: this.#opts.version } } } });
  }

  /** The stand-in tool, called from a listing taken while the daemon was away: the daemon has no such tool. */
  statusWhileUp(id: unknown, params: unknown): void {
    this.result(id, 'tools/call', isModern(params), { content: [{ type: 'text', text: 'The Postern daemon is running: list the tools again to see them.' }] });
  }

  /** Answers a client request while no daemon is reachable. */
  alone(id: unknown, method: string, params: unknown, modern = isModern(params)): void {
    if ((method !== 'tools/call' || asksForTask({ method, params })) && this.#task(id, method, modern, false)) return;
    switch (method) {
      case 'initialize': {
        const asked = (params as Json | undefined)?.['protocolVersion'];
        return this.#out.write({ jsonrpc: '2.0', id, result: { protocolVersion: typeof asked === 'string' ? asked : FALLBACK_PROTOCOL, capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'postern', version: this.#opts.version }, instructions: this.#instructions } });
      }
      case 'server/discover':
        // The 2026-07-28 era's opening (in place of initialize): the era the daemon speaks, nothing cacheable.
        return this.result(id, 'server/discover', true, { supportedVersions: [MODERN_PROTOCOL], capabilities: { tools: { listChanged: true } }, instructions: this.#instructions, ttlMs: 0, cacheScope: 'private' });
      case 'subscriptions/listen': {
        // The 2026-07-28 era's way to be told of changes: acknowledged and kept open (listens.ts).
        const ack = acknowledgement(id, params);
        if (ack === undefined) return this.#out.write({ jsonrpc: '2.0', id, error: { code: -32602, message: "Invalid params: 'notifications' is required and must be a valid SubscriptionFilter" } });
        return this.#out.write(ack);
      }
      case 'ping':
        return this.result(id, method, modern, {});
      case 'tools/list': {
        this.listed = true;
        const remembered = this.#opts.recall() ?? [];
        if (remembered.length > 0) this.#opts.planned(remembered);
        this.#offered = new Set(remembered.map((t) => String(t['name'])));
        return this.result(id, method, modern, { tools: [statusTool(this.#opts.home), ...remembered] });
      }
      case 'tools/call': {
        const name = (params as Json | undefined)?.['name'];
        return this.result(id, method, modern, unavailableResult(this.#opts.home, typeof name === 'string' && this.#offered.has(name) ? name : undefined));
      }
      default:
        this.#out.write({ jsonrpc: '2.0', id, error: { code: -32601, message: 'Method not found' } });
    }
  }

  /** The daemon connection dropped with these requests unanswered: each gets its answer now. */
  lost(owed: Iterable<Owed>): void {
    for (const { id, method, modern, task } of owed) {
      if ((task || method.startsWith('tasks/')) && this.#task(id, method, modern, true)) continue;
      if (method === 'tools/call') this.result(id, method, modern, lostCallResult());
      else if (method === 'initialize' || method === 'server/discover' || method === 'ping' || method === 'tools/list') this.alone(id, method, undefined, modern);
      else this.#out.write({ jsonrpc: '2.0', id, error: { code: -32603, message: 'the connection to the Postern daemon was lost' } });
    }
  }

  /**
   * MCP tasks live in the daemon's session and end with its connection: a
   * task request while the daemon is away (`lost`: it went away while the
   * request was in flight); false if `method` is not one.
   */
  #task(id: unknown, method: string, modern: boolean, lost: boolean): boolean {
    const facts = (code: 'DAEMON_UNAVAILABLE' | 'TASK_NOT_FOUND'): Json => ({ error_code: code, required_action: ErrorCodes[code].action });
    switch (method) {
      case 'tools/call': {
        // Lost in flight: whether it started is unknown (null), never "no".
        const message = lost
          ? 'the connection to the Postern daemon was lost while the task was being created: it may or may not have started, and its task is gone with the connection; a retry with the same idempotency_key never runs it twice'
          : `${daemonDownMessage(this.#opts.home)}; no task was started`;
        this.#out.write({ jsonrpc: '2.0', id, error: { code: -32603, message, data: { ...facts('DAEMON_UNAVAILABLE'), side_effect_started: lost ? null : false } } });
        return true;
      }
      case 'tasks/list':
        this.result(id, method, modern, { tasks: [] });
        return true;
      case 'tasks/get':
      case 'tasks/result':
      case 'tasks/cancel':
        this.#out.write({ jsonrpc: '2.0', id, error: { code: -32602, message: `Failed to retrieve task: tasks end with the connection to the Postern daemon, which ${lost ? 'was lost' : 'is not running'}`, data: facts('TASK_NOT_FOUND') } });
        return true;
      default:
        return false;
    }
  }
}
