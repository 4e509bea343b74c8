/**
 * The agent socket: every connection is one MCP session served by the SDK
 * (`serveStdio` picks the 2025 `initialize` era or the 2026-07-28 era per
 * connection). The `postern mcp` shim may open with one hello line carrying
 * its pid and the listing it relayed before a reconnect (the revisions its
 * client planned against, src/protocol/shim-hello.ts); that line is read and
 * removed before the MCP stream starts, and the session starts from it.
 *
 * Before the SDK sees a line, a screen answers what the SDK would drop
 * silently or change (protocol errors stay JSON-RPC errors, DESIGN §6):
 * - a line that is not JSON, or not UTF-8 → -32700 Parse error (with the
 *   request's id when one can be read), never "repaired" into U+FFFD and run;
 * - a line longer than the limit (`protocol/agent-limits.ts`, derived from
 *   `max_request_bytes`) → discarded with bounded memory and answered as the
 *   pipeline would: REQUEST_TOO_LARGE for a `tools/call`, -32600 otherwise;
 * - an envelope the SDK would drop without a word (`params` an array, `null`,
 *   a string or a number; a `_meta` that is not an object; an unusable id) →
 *   -32602 / -32600 from `protocol/jsonrpc-screen.ts`, never silence;
 * - a `tools/call` whose arguments carry an own `__proto__` key → the SDK's
 *   schema copy would drop that key (and re-parent the object), so the call is
 *   refused here as VALIDATION_FAILED (-32602, the tool error in `data`) and
 *   journaled as a rejection like any other.
 * A peer that does not read its answers is disconnected; one connection's
 * trouble never reaches another.
 */
import { createServer, type Server as NetServer, type Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { isUtf8 } from 'node:buffer';
import { PassThrough, type Readable } from 'node:stream';
import type { Server } from '@modelcontextprotocol/server';
import { serveStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { PosternError } from '../protocol/errors.js';
import { screenMessage } from '../protocol/jsonrpc-screen.js';
import { agentLineLimit, oversizedAnswer } from '../protocol/agent-limits.js';
import { encodeLine, lineSplitter } from '../protocol/ndjson.js';
import { listenPrivate, prepareSocketPath, removeIfOurs } from './socket-file.js';
import { createSessionServer } from './mcp/session-server.js';
import { TaskStore, taskLimits } from './mcp/task-store.js';
import type { Services, SessionInfo } from './pipeline/context.js';
import { Trail } from './pipeline/trail.js';
import { HELLO_MAX_BYTES, parseHello, type ShimHello } from '../protocol/shim-hello.js';

/** Answers queued for a peer that does not read them, before it is disconnected. */
const MAX_UNREAD_BYTES = 16 * 1024 * 1024;

class SocketTransport extends StdioServerTransport {
  constructor(
    input: Readable,
    private readonly socket: Socket,
    lineLimit: number,
  ) {
    // Lines reach the transport one at a time, already bounded by the screen.
    super(input, socket, { maxBufferSize: lineLimit + 1 });
  }
  override async close(): Promise<void> {
    await super.close();
    if (!this.socket.destroyed) {
      this.socket.end();
      setTimeout(() => this.socket.destroy(), 250).unref();
    }
  }
}

/**
 * Reads an optional shim hello first line (src/protocol/shim-hello.ts) and
 * returns what it declares and the bytes after it (or every byte read, when
 * the first line is not a hello). Bounded: at most HELLO_MAX_BYTES are held
 * while the first line is incomplete; past that, or when the first byte is
 * not `{`, the bytes are MCP traffic and passed on as they are.
 */
function readHello(socket: Socket): Promise<{ hello: ShimHello | null; rest: Buffer }> {
  return new Promise((resolve) => {
    let held: Buffer = Buffer.alloc(0);
    const done = (hello: ShimHello | null, rest: Buffer): void => {
      socket.off('data', onData);
      socket.off('end', onEnd);
      resolve({ hello, rest });
    };
    const onData = (chunk: Buffer): void => {
      held = held.length === 0 ? chunk : Buffer.concat([held, chunk]);
      if (held[0] !== 0x7b) return done(null, held);
      const nl = held.indexOf(0x0a);
      if (nl === -1) {
        if (held.length >= HELLO_MAX_BYTES) done(null, held);
        return;
      }
      const hello = nl < HELLO_MAX_BYTES ? parseHello(held.subarray(0, nl)) : null;
      done(hello, hello === null ? held : held.subarray(nl + 1));
    };
    const onEnd = (): void => done(null, held);
    socket.on('data', onData);
    socket.on('end', onEnd);
  });
}

type Json = Record<string, unknown>;
type RpcId = string | number | null;

function asId(v: unknown): RpcId {
  return typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)) ? v : null;
}

/** The id of a line that cannot be accepted, if a lenient reading finds one. */
function lenientId(line: Buffer): RpcId {
  try {
    const v: unknown = JSON.parse(line.toString('utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? asId((v as Json)['id']) : null;
  } catch {
    return null;
  }
}

const hasOwn = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

/**
 * Screens one connection's lines; returns the chunk handler. Accepted lines
 * go to `pass` (with their newline); everything else is answered on `socket`.
 */
function screen(socket: Socket, svc: Services, session: SessionInfo, pass: (line: Buffer) => void): (chunk: Buffer) => void {
  const answer = (msg: Json): void => {
    if (socket.destroyed) return;
    socket.write(encodeLine(msg));
    if (socket.writableLength > MAX_UNREAD_BYTES) socket.destroy();
  };
  const parseError = (id: RpcId, why: string): void => answer({ jsonrpc: '2.0', id, error: { code: -32700, message: `Parse error: ${why}` } });

  /** Journals the refusal through the call pipeline's own trail and answers with its tool error. */
  const refuseProtoKey = (id: RpcId, name: unknown, args: unknown): void => {
    const tool = typeof name === 'string' ? name : '';
    const trail = new Trail(svc, session, tool, svc.state.snapshot().handlerRevision, randomUUID());
    trail.step('admit');
    trail.step('screen:proto_key');
    try {
      trail.raw(svc.state.redactor().redactValue(args));
    } catch {
      // locked: the rejection is journaled without its arguments
    }
    const err = new PosternError('VALIDATION_FAILED', 'the key "__proto__" is not allowed in arguments', { details: { field: '__proto__' } });
    void trail.fail(err).then((result) => {
      answer({ jsonrpc: '2.0', id, error: { code: -32602, message: `Invalid params: ${err.message}`, data: result.structuredContent ?? { error_code: err.code } } });
    });
  };

  const limit = agentLineLimit(svc.config.max_request_bytes);
  return lineSplitter(
    limit,
    (line) => {
      if (!isUtf8(line)) return parseError(lenientId(line), 'the message is not valid UTF-8');
      let msg: unknown;
      try {
        msg = JSON.parse(line.toString('utf8'));
      } catch {
        return parseError(null, 'the message is not valid JSON');
      }
      const verdict = screenMessage(msg);
      if (verdict.kind === 'answer') return answer(verdict.response);
      if (verdict.kind === 'drop') return;
      if (typeof msg === 'object' && msg !== null && !Array.isArray(msg)) {
        const m = msg as Json;
        const params = m['params'];
        if (m['method'] === 'tools/call' && typeof params === 'object' && params !== null) {
          const args = (params as Json)['arguments'];
          if (typeof args === 'object' && args !== null && !Array.isArray(args) && hasOwn(args, '__proto__')) {
            return refuseProtoKey(asId(m['id']), (params as Json)['name'], args);
          }
        }
      }
      pass(line);
    },
    (o) => answer(oversizedAnswer(o, limit) ?? { jsonrpc: '2.0', id: null, error: { code: -32600, message: `Invalid Request: the message is larger than ${limit} bytes` } }),
  );
}

export interface AgentEndpoint {
  readonly sessions: ReadonlySet<Server>;
  /** Sends tools/list_changed to every live session. */
  broadcastListChanged(): Promise<number>;
  /** Stops admitting new connections; live sessions go on. */
  stopAccepting(): void;
  close(): Promise<void>;
}

export async function startAgentSocket(path: string, svc: Services, hooks: { sessionStarted(s: SessionInfo): void; sessionEnded(s: SessionInfo): void }): Promise<AgentEndpoint> {
  const servers = new Set<Server>();
  const sockets = new Set<Socket>();
  const net: NetServer = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    void readHello(socket).then(({ hello, rest }) => {
      // A reconnecting shim declares what it relayed: the new session knows what its client planned against.
      const session: SessionInfo = {
        id: randomUUID(), clientName: null, clientVersion: null, protocolVersion: null, pid: hello?.pid ?? null, runId: null, agentRelease: null,
        seen: new Map(hello?.relayed?.revisions ?? []), listedToolset: hello?.relayed?.toolset ?? null,
      };
      const input = new PassThrough();
      const newline = Buffer.from('\n');
      const onChunk = screen(socket, svc, session, (line) => {
        input.write(line);
        input.write(newline);
      });
      const feed = (chunk: Buffer): void => {
        try {
          onChunk(chunk);
        } catch {
          socket.destroy(); // never let one connection's surprise reach the daemon's event loop
        }
      };
      if (rest.length > 0) feed(rest);
      socket.on('data', feed);
      socket.on('end', () => input.end());
      let begun = false;
      // The session's MCP tasks: they end with it (their running calls are cancelled).
      const tasks = new TaskStore(svc.clock, taskLimits(svc.config));
      const handle = serveStdio(
        () => {
          const server = createSessionServer(svc, session, {
            started: (s) => {
              begun = true;
              hooks.sessionStarted(s);
            },
          }, tasks);
          servers.add(server);
          server.onclose = () => servers.delete(server);
          return server;
        },
        { transport: new SocketTransport(input, socket, agentLineLimit(svc.config.max_request_bytes)), legacy: 'serve', onerror: () => undefined },
      );
      socket.on('close', () => {
        tasks.closeAll();
        void handle.close();
        if (begun) hooks.sessionEnded(session);
      });
    });
  });
  await prepareSocketPath(path);
  const identity = await listenPrivate(net, path);
  return {
    sessions: servers,
    async broadcastListChanged() {
      const all = [...servers];
      await Promise.all(all.map((s) => s.sendToolListChanged().catch(() => undefined)));
      return all.length;
    },
    stopAccepting() {
      net.close();
    },
    async close() {
      await removeIfOurs(path, identity);
      await new Promise<void>((resolve) => {
        net.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
    },
  };
}
