/**
 * `postern mcp`: the stdio MCP endpoint an agent host launches. It holds no
 * secrets and makes no decisions: it relays newline-delimited JSON-RPC between
 * stdio and the daemon's agent socket. When the daemon is not there (not
 * started, or gone mid-session), it answers by itself — every `tools/call`
 * gets an `isError` result saying what the human must run — and reconnects on
 * the next request, replaying the client's `initialize` so the session
 * continues. It imports nothing from the vault, executors or journals.
 *
 * While the daemon is away, the listing holds one tool, `postern_status`,
 * whose description (and result, when called) tells the agent what the
 * operator must run, for which home; the initialize result's `instructions`
 * say the same. Clients show tool descriptions to the model; not all of them
 * show `instructions`. Once a session that was given the stand-in listing
 * reaches the daemon again, the shim sends `notifications/tools/list_changed`
 * so the client lists the real tools.
 *
 * The shim remembers the revisions (and toolset) of the daemon's last
 * `tools/list` it relayed, and declares them in the hello of each reconnect
 * (src/protocol/shim-hello.ts): a daemon restarted meanwhile then knows what
 * the client planned against, refuses or adapts its calls by the catalog's
 * policies, and tells it to list again when the tools changed.
 *
 * Invariants:
 * - every client request gets exactly one answer, never a hang: the shim
 *   remembers which requests the daemon has not answered yet, and when the
 *   daemon connection drops it answers them itself — a `tools/call` that was
 *   in flight is reported as possibly started (the daemon journals it and a
 *   retry with the same idempotency key never runs twice); once the client
 *   has closed its input, nothing is answered any more, and closing the
 *   daemon connection is how the daemon learns the client gave up (it
 *   cancels that session's waiting calls);
 * - `notifications/cancelled` is forwarded like any line, so the daemon
 *   cancels the call (and its approval card) the client gave up on;
 * - client lines are split on bytes and forwarded byte for byte, so a
 *   multi-byte character that straddles two reads arrives intact and invalid
 *   UTF-8 is not "repaired" into U+FFFD (the daemon refuses it, with its id);
 * - the daemon's bytes are relayed as they come; the shim's own answers never
 *   land inside one of its lines;
 * - answers the shim makes itself fit the request's protocol era (2026-07-28
 *   results carry `resultType`, and a stand-in listing is not cacheable);
 * - a request whose envelope the SDK would drop (`params` an array or
 *   `null`…) is answered here with the daemon's own rule
 *   (`protocol/jsonrpc-screen.ts`), daemon or no daemon;
 * - a client line longer than the daemon accepts is not forwarded; it is
 *   answered (when its id can be found) and discarded, with bounded memory;
 * - MCP tasks live in the daemon's session and end with its connection: while
 *   the daemon is away (or when it went away mid-request), a task-augmented
 *   `tools/call` is a JSON-RPC error (DAEMON_UNAVAILABLE in `data`; the
 *   client expects a CreateTaskResult, not a tool result), `tasks/get`,
 *   `tasks/result` and `tasks/cancel` are -32602 TASK_NOT_FOUND, and
 *   `tasks/list` is empty.
 */
import { connect, type Socket } from 'node:net';
import { isUtf8 } from 'node:buffer';
import { oversizedAnswer, SHIM_LINE_LIMIT } from '../protocol/agent-limits.js';
import { idFromEdges, screenMessage, type ScreenVerdict } from '../protocol/jsonrpc-screen.js';
import { encodeLine, lineSplitter, type Oversized } from '../protocol/ndjson.js';
import { toolErrorResult } from '../protocol/tool-result.js';
import { encodeHello, listingOf, type RelayedListing } from '../protocol/shim-hello.js';
import { ErrorCodes } from '../rules/errors.js';

/** The longest client line forwarded: the ceiling of the one size rule; the daemon applies its configured limit. */
export const MAX_CLIENT_LINE_BYTES = SHIM_LINE_LIMIT;
/** Daemon lines are relayed as they come; longer ones than this are not parsed (their id is read from the edges). */
const MAX_TRACKED_LINE_BYTES = 16 * 1024 * 1024;
const FALLBACK_PROTOCOL = '2025-11-25';
/** The modern era the daemon serves (its SDK's `serveStdio`). */
const MODERN_PROTOCOL = '2026-07-28';
/** The one tool listed while the daemon is away. */
export const STATUS_TOOL = 'postern_status';
/** A request carrying this `_meta` key speaks the 2026-07-28 era (no `initialize`; per-request envelope). */
const PROTOCOL_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';
const SERVER_INFO_META_KEY = 'io.modelcontextprotocol/serverInfo';

type Json = Record<string, unknown>;

export interface ShimOptions {
  readonly socketPath: string;
  /** The Postern home, named in what the agent is told while the daemon is away. */
  readonly home?: string;
  readonly input: NodeJS.ReadableStream;
  readonly output: NodeJS.WritableStream;
  readonly version: string;
}

function tryConnect(path: string): Promise<Socket | null> {
  return new Promise((resolve) => {
    const s = connect(path);
    s.once('connect', () => resolve(s));
    s.once('error', () => resolve(null));
  });
}

/** What the agent is told while the daemon is away: one sentence it can pass on to the operator. */
export function daemonDownMessage(home: string | undefined): string {
  const where = home === undefined ? '' : ` for the home ${home}`;
  return `the Postern daemon is not running${where}: ask the operator to run \`postern daemon\` (Postern's tools appear once it is running)`;
}

export function unavailableResult(home?: string): Json {
  return toolErrorResult('DAEMON_UNAVAILABLE', daemonDownMessage(home), false);
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
export function lostCallResult(): Json {
  const message =
    'the connection to the Postern daemon was lost while this call was in progress: it may or may not have taken effect. ' +
    'A retry with the same idempotency_key never runs it twice, and postern_call_status reports its outcome once the daemon is back';
  return toolErrorResult('DAEMON_UNAVAILABLE', message, 'unknown');
}

/** Whether a request's params carry the 2026-07-28 per-request envelope. */
function isModern(params: unknown): boolean {
  const meta = typeof params === 'object' && params !== null ? (params as Json)['_meta'] : undefined;
  return typeof meta === 'object' && meta !== null && typeof (meta as Json)[PROTOCOL_VERSION_META_KEY] === 'string';
}

/** A `tools/call` that asks to run as an MCP task. */
function asksForTask(m: Json | null): boolean {
  const params = m?.['params'];
  if (m?.['method'] !== 'tools/call' || typeof params !== 'object' || params === null) return false;
  const task = (params as Json)['task'];
  return typeof task === 'object' && task !== null && !Array.isArray(task);
}

const isRequest = (m: Json | null): m is Json => m !== null && 'id' in m && typeof m['method'] === 'string';
const isResponse = (m: Json | null): m is Json => m !== null && 'id' in m && m['method'] === undefined && ('result' in m || 'error' in m);
const idKey = (id: unknown): string => JSON.stringify(id ?? null);

/** A `tools/call` of the stand-in tool. */
function isStatusCall(m: Json): boolean {
  const params = m['params'];
  return m['method'] === 'tools/call' && typeof params === 'object' && params !== null && (params as Json)['name'] === STATUS_TOOL;
}

/** The screen's verdict on a line that is JSON; undefined when it is not (the daemon answers the parse error, with its id). */
function screenLine(line: Buffer): ScreenVerdict | undefined {
  try {
    return screenMessage(JSON.parse(line.toString('utf8')) as unknown);
  } catch {
    return undefined;
  }
}

function parseObject(line: string | Buffer): Json | null {
  try {
    const v: unknown = JSON.parse(typeof line === 'string' ? line : line.toString('utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : null;
  } catch {
    return null;
  }
}

export async function runShim(opts: ShimOptions): Promise<void> {
  // The daemon's bytes are relayed as they come, so the client's stream may stand in the middle of a
  // line; the shim's own answers wait for the line to end (or, if the daemon went away, end it).
  let midLine = false;
  const deferred: string[] = [];
  const flush = (): void => {
    if (deferred.length > 0) opts.output.write(deferred.splice(0).join(''));
  };
  const emit = (chunk: Buffer): void => {
    if (chunk.length === 0) return;
    opts.output.write(chunk);
    midLine = chunk[chunk.length - 1] !== 0x0a;
    if (!midLine) flush();
  };
  const endBrokenLine = (): void => {
    if (midLine) opts.output.write('\n'); // the client drops the cut-off line as unparseable
    midLine = false;
    flush();
  };
  const write = (msg: Json): void => {
    const line = encodeLine(msg);
    if (midLine) deferred.push(line);
    else opts.output.write(line);
  };
  let socket: Socket | null = null;
  /** The client closed its side: nothing is answered any more, and the daemon sees the session end. */
  let clientGone = false;
  let initialize: Buffer | null = null;
  let initialized = false;
  /** The client was given the stand-in listing: it must re-list once the daemon is back. */
  let standInListed = false;
  const downInstructions = `Postern: ${daemonDownMessage(opts.home)}.`;
  /** Client requests sent to the daemon and not answered yet: id → method, era, and whether it asked for a task. */
  const pending = new Map<string, { id: unknown; method: string; modern: boolean; task: boolean }>();
  /** The daemon's last full tools/list relayed to the client: declared in the hello of every reconnect. */
  let relayed: RelayedListing | null = null;

  /**
   * A result the shim makes itself, in the request's era: 2026-07-28 results
   * must say `resultType: 'complete'`, and a listing must say how long it may
   * be cached (not at all: it is a stand-in while the daemon is away).
   */
  const result = (id: unknown, method: string, modern: boolean, body: Json): void => {
    if (!modern) return write({ jsonrpc: '2.0', id, result: body });
    const cache = method === 'tools/list' ? { ttlMs: 0, cacheScope: 'private' } : {};
    write({ jsonrpc: '2.0', id, result: { ...body, ...cache, resultType: 'complete', _meta: { [SERVER_INFO_META_KEY]: { name: 'postern', version: opts.version } } } });
  };

  /** A task request while the daemon is away (`lost`: it went away while the request was in flight); false if `method` is not one. */
  const answerTask = (id: unknown, method: string, modern: boolean, lost: boolean): boolean => {
    const facts = (code: 'DAEMON_UNAVAILABLE' | 'TASK_NOT_FOUND'): Json => ({ error_code: code, required_action: ErrorCodes[code].action });
    switch (method) {
      case 'tools/call': {
        const message = lost
          ? 'the connection to the Postern daemon was lost while the task was being created: it may or may not have started, and its task is gone with the connection; a retry with the same idempotency_key never runs it twice'
          : `${daemonDownMessage(opts.home)}; no task was started`;
        write({ jsonrpc: '2.0', id, error: { code: -32603, message, data: { ...facts('DAEMON_UNAVAILABLE'), side_effect_started: lost } } });
        return true;
      }
      case 'tasks/list':
        result(id, method, modern, { tasks: [] });
        return true;
      case 'tasks/get':
      case 'tasks/result':
      case 'tasks/cancel':
        write({ jsonrpc: '2.0', id, error: { code: -32602, message: `Failed to retrieve task: tasks end with the connection to the Postern daemon, which ${lost ? 'was lost' : 'is not running'}`, data: facts('TASK_NOT_FOUND') } });
        return true;
      default:
        return false;
    }
  };

  /** Answers a client request while no daemon is reachable. */
  const answerAlone = (id: unknown, method: string, params: unknown, modern = isModern(params)): void => {
    if ((method !== 'tools/call' || asksForTask({ method, params })) && answerTask(id, method, modern, false)) return;
    switch (method) {
      case 'initialize': {
        const asked = (params as Json | undefined)?.['protocolVersion'];
        write({ jsonrpc: '2.0', id, result: { protocolVersion: typeof asked === 'string' ? asked : FALLBACK_PROTOCOL, capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'postern', version: opts.version }, instructions: downInstructions } });
        return;
      }
      case 'server/discover':
        // The 2026-07-28 era's opening (in place of initialize): the era the daemon speaks, nothing cacheable.
        return result(id, 'server/discover', true, { supportedVersions: [MODERN_PROTOCOL], capabilities: { tools: { listChanged: true } }, instructions: downInstructions, ttlMs: 0, cacheScope: 'private' });
      case 'ping':
        return result(id, method, modern, {});
      case 'tools/list':
        standInListed = true;
        return result(id, method, modern, { tools: [statusTool(opts.home)] });
      case 'tools/call':
        return result(id, method, modern, unavailableResult(opts.home));
      default:
        write({ jsonrpc: '2.0', id, error: { code: -32601, message: 'Method not found' } });
    }
  };

  /** The daemon connection dropped: every request it still owed an answer gets one now (unless the client left first). */
  const answerPending = (): void => {
    const owed = [...pending.values()];
    pending.clear();
    if (clientGone) return;
    for (const { id, method, modern, task } of owed) {
      if ((task || method.startsWith('tasks/')) && answerTask(id, method, modern, true)) continue;
      if (method === 'tools/call') result(id, method, modern, lostCallResult());
      else if (method === 'initialize' || method === 'server/discover' || method === 'ping' || method === 'tools/list') answerAlone(id, method, undefined, modern);
      else write({ jsonrpc: '2.0', id, error: { code: -32603, message: 'the connection to the Postern daemon was lost' } });
    }
  };

  /** A relay for one daemon connection: bytes go to the client as they come; a splitter notes which requests they answer. */
  const forwarder = (): ((chunk: Buffer) => void) => {
    const track = lineSplitter(
      MAX_TRACKED_LINE_BYTES,
      (line) => {
        if (pending.size === 0) return;
        const m = parseObject(line);
        if (!isResponse(m)) return;
        const asked = pending.get(idKey(m['id']));
        if (asked?.method === 'tools/list' && 'result' in m) relayed = listingOf(m['result']) ?? relayed;
        pending.delete(idKey(m['id']));
      },
      (o) => {
        const id = idFromEdges(o);
        if (id !== undefined) pending.delete(idKey(id));
      },
    );
    // The bytes go to the client first: noting what they answer (a whole tools/list is parsed for
    // the reconnect hello) is the shim's bookkeeping, not on the client's path.
    return (chunk) => {
      emit(chunk);
      track(chunk);
    };
  };

  /** Makes `s` the daemon connection; when it closes, every request it still owed is answered here. */
  const adopt = (s: Socket): void => {
    socket = s;
    s.on('close', () => {
      if (socket !== s) return;
      socket = null;
      endBrokenLine();
      answerPending();
    });
  };

  const hello = (): string => encodeHello(process.pid, relayed);

  const attach = (s: Socket): void => {
    s.on('data', forwarder());
    s.on('error', () => undefined);
    adopt(s);
    s.write(hello());
  };

  /** Reconnects and replays the session's initialize, swallowing the daemon's answer to it. */
  const reconnect = async (): Promise<void> => {
    const s = await tryConnect(opts.socketPath);
    if (s === null) return;
    if (initialize === null) {
      attach(s);
      return;
    }
    const init = initialize;
    const initId = idKey(parseObject(initialize)?.['id']);
    const forward = forwarder();
    let ready = false;
    let answered: (ok: boolean) => void = () => undefined;
    const replayed = new Promise<boolean>((resolve) => (answered = resolve));
    const replayLines = lineSplitter(MAX_TRACKED_LINE_BYTES, (line) => {
      const m = parseObject(line);
      if (!ready && isResponse(m) && idKey(m['id']) === initId) {
        ready = true;
        answered(!('error' in m));
      }
    });
    // Up to the answer to the replayed initialize, lines are the shim's own; the bytes after it are the client's.
    s.on('data', (d: Buffer) => {
      let start = 0;
      while (!ready && start < d.length) {
        const nl = d.indexOf(0x0a, start);
        const stop = nl === -1 ? d.length : nl + 1;
        replayLines(d.subarray(start, stop));
        start = stop;
      }
      if (ready && start < d.length) forward(d.subarray(start));
    });
    s.on('error', () => undefined);
    s.once('close', () => answered(false));
    const notice = initialized ? encodeLine({ jsonrpc: '2.0', method: 'notifications/initialized' }) : '';
    s.write(Buffer.concat([Buffer.from(hello()), init, Buffer.from(`\n${notice}`)]));
    if (!(await replayed) || s.destroyed) {
      s.destroy();
      return;
    }
    adopt(s);
    if (standInListed) {
      standInListed = false;
      write({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    }
  };

  const first = await tryConnect(opts.socketPath);
  if (first !== null) attach(first);

  // Client lines are forwarded byte for byte (invalid UTF-8 included: the daemon refuses it with its id).
  const handleLine = async (line: Buffer): Promise<void> => {
    // An envelope the daemon's SDK would drop is answered here, by the same rule as the daemon's screen.
    const verdict = isUtf8(line) ? screenLine(line) : undefined;
    if (verdict?.kind === 'answer') return write(verdict.response);
    if (verdict?.kind === 'drop') return;
    const msg = parseObject(line);
    if (msg?.['method'] === 'initialize') initialize = line;
    if (msg?.['method'] === 'notifications/initialized') initialized = true;
    if (msg?.['method'] === 'notifications/cancelled') {
      const rid = (msg['params'] as Json | undefined)?.['requestId'];
      if (rid !== undefined) pending.delete(idKey(rid));
    }
    if (socket === null && isRequest(msg)) {
      if (msg['method'] === 'initialize') {
        const s = await tryConnect(opts.socketPath);
        if (s !== null) attach(s);
      } else {
        await reconnect();
      }
    }
    const s: Socket | null = socket;
    if (s !== null && !s.destroyed && isRequest(msg) && isStatusCall(msg)) {
      // The stand-in tool, called from a listing taken while the daemon was away: the daemon has no such tool.
      return result(msg['id'], 'tools/call', isModern(msg['params']), { content: [{ type: 'text', text: 'The Postern daemon is running: list the tools again to see them.' }] });
    }
    if (s !== null && !s.destroyed) {
      if (isRequest(msg)) pending.set(idKey(msg['id']), { id: msg['id'], method: String(msg['method']), modern: isModern(msg['params']), task: asksForTask(msg) });
      s.write(Buffer.concat([line, Buffer.from('\n')]));
    } else if (isRequest(msg)) {
      answerAlone(msg['id'], String(msg['method']), msg['params']);
    }
  };

  /** A client line too long to forward: answer it if we can tell which request it was. */
  const refuseOversized = (o: Oversized): void => {
    const answer = oversizedAnswer(o, MAX_CLIENT_LINE_BYTES);
    if (answer !== null) write(answer);
  };

  let queue = Promise.resolve();
  opts.input.on(
    'data',
    lineSplitter(
      MAX_CLIENT_LINE_BYTES,
      (line) => {
        queue = queue.then(() => handleLine(line)).catch(() => undefined);
      },
      (o) => {
        queue = queue.then(() => refuseOversized(o)).catch(() => undefined);
      },
    ),
  );
  await new Promise<void>((resolve) => {
    opts.input.on('end', () => {
      void queue.then(() => {
        // The client gave up on whatever it still waited for: the daemon cancels those calls when the
        // connection closes (their approval cards leave the queue); they are not reported as lost.
        clientGone = true;
        const s: Socket | null = socket;
        s?.end();
        resolve();
      });
    });
  });
}
