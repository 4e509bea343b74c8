/**
 * The agent socket: every connection is one MCP session served by the SDK
 * (`serveStdio` picks the 2025 `initialize` era or the 2026-07-28 era per
 * connection). The `postern mcp` shim may open with one hello line carrying
 * its pid and the listing it relayed before a reconnect (the revisions its
 * client planned against, src/protocol/shim-hello.ts); that line is read and
 * removed before the MCP stream starts, and the session starts from it.
 *
 * Before the SDK sees a line, the agent screen (`agent-screen.ts`, shared
 * with the HTTP listener) answers what the SDK would drop silently or change
 * (protocol errors stay JSON-RPC errors, DESIGN §6). A line longer than the
 * limit (`protocol/agent-limits.ts`, derived from `max_request_bytes`) is
 * discarded with bounded memory and answered as the pipeline would:
 * REQUEST_TOO_LARGE for a `tools/call`, -32600 otherwise.
 * A peer that does not read its answers is disconnected; one connection's
 * trouble never reaches another.
 */
import { createServer, type Server as NetServer, type Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { PassThrough, type Readable } from 'node:stream';
import type { Server, Transport } from '@modelcontextprotocol/server';
import { serveStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { agentLineLimit, oversizedAnswer } from '../../protocol/agent-limits.js';
import { encodeLine, lineSplitter } from '../../protocol/ndjson.js';
import { listenPrivate, prepareSocketPath, removeIfOurs } from '../lifecycle/socket-file.js';
import { broadcastListChanged, createSessionServer } from './session-server.js';
import { TaskStore, taskLimits } from './task-store.js';
import type { Services, SessionInfo } from '../pipeline/context.js';
import { HELLO_MAX_BYTES, parseHello, type ShimHello } from '../../protocol/shim-hello.js';
import { screenAgentMessage } from './agent-screen.js';
import { ErrorCodes } from '../../rules/errors.js';

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
 * not `{`, the bytes are MCP traffic and passed on as they are. Leaves the
 * socket paused: the caller resumes it once it listens.
 */
function readHello(socket: Socket): Promise<{ hello: ShimHello | null; rest: Buffer }> {
  return new Promise((resolve) => {
    let held: Buffer = Buffer.alloc(0);
    const done = (hello: ShimHello | null, rest: Buffer): void => {
      // Paused until the caller listens (it resumes): chunks already buffered behind the hello are
      // emitted at once while flowing, and would be lost between this listener and the next.
      socket.pause();
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
  const limit = agentLineLimit(svc.config.max_request_bytes);
  return lineSplitter(
    limit,
    (line) => {
      const verdict = screenAgentMessage(line, svc, session);
      switch (verdict.kind) {
        case 'pass':
          return pass(line);
        case 'answer':
          return answer(verdict.response);
        case 'answer-later':
          void verdict.response.then(answer);
          return;
        case 'drop':
          return;
      }
    },
    (o) => answer(oversizedAnswer(o, limit) ?? { jsonrpc: '2.0', id: null, error: { code: -32600, message: `Invalid Request: the message is larger than ${limit} bytes` } }),
  );
}

export interface AgentSessionHooks {
  sessionStarted(s: SessionInfo): void;
  sessionEnded(s: SessionInfo): void;
}

/** A new session's facts; a reconnecting shim's hello declares its pid and what it relayed. */
export function newSessionInfo(hello: ShimHello | null): SessionInfo {
  return {
    id: randomUUID(), clientName: null, clientVersion: null, protocolVersion: null, pid: hello?.pid ?? null, runId: null, agentRelease: null,
    seen: new Map(hello?.relayed?.revisions ?? []), listedToolset: hello?.relayed?.toolset ?? null,
  };
}

/**
 * One agent session served by the SDK over `transport` (the agent socket's
 * connection, or an in-memory pair: in-memory-agent.ts). Its MCP tasks end
 * with it (their running calls are cancelled); `close` ends it, and the
 * session-ended hook runs once it had started.
 */
export function serveAgentSession(svc: Services, session: SessionInfo, hooks: AgentSessionHooks, transport: Transport, onServer: (server: Server) => void = () => undefined): { close(): void } {
  let begun = false;
  const tasks = new TaskStore(svc.clock, taskLimits(svc.config));
  const handle = serveStdio(
    () => {
      const server = createSessionServer(svc, session, {
        started: (s) => {
          begun = true;
          hooks.sessionStarted(s);
        },
      }, tasks);
      onServer(server);
      return server;
    },
    { transport, legacy: 'serve', onerror: () => undefined },
  );
  let closed = false;
  return {
    close() {
      if (closed) return;
      closed = true;
      tasks.closeAll();
      void handle.close();
      if (begun) hooks.sessionEnded(session);
    },
  };
}

export interface AgentEndpoint {
  readonly sessions: ReadonlySet<Server>;
  /** Sends tools/list_changed to every live session. */
  broadcastListChanged(): Promise<number>;
  /** Stops admitting new connections; live sessions go on. */
  stopAccepting(): void;
  close(): Promise<void>;
}

/** Who may use a connection: the peer's user, or the one-line reason it is refused. */
export type Admission = { readonly ok: true; readonly peer: { readonly uid: number; readonly user: string | null } } | { readonly ok: false; readonly message: string };

interface AgentSocketOptions {
  /** Checks every connection before any of its bytes are read (the shared socket: agent-users.ts). */
  readonly admit?: (socket: Socket) => Promise<Admission>;
  /** The socket file's mode (default 0600: the private socket in the 0700 run directory). */
  readonly shared?: boolean;
}

/** The JSON-RPC error every request on a refused connection gets (docs/errors.md, AGENT_USER_NOT_ALLOWED). */
const AGENT_USER_REFUSED_CODE = -32001;

/**
 * A refused connection is never served: each request on it is answered with
 * one JSON-RPC error that names the refusal (what the shim relays to its
 * client), notifications are dropped, and nothing reaches the SDK.
 */
function refuseConnection(socket: Socket, message: string): void {
  const data = { error_code: 'AGENT_USER_NOT_ALLOWED', side_effect_started: false, required_action: ErrorCodes.AGENT_USER_NOT_ALLOWED.action };
  let answered = 0;
  const onLine = lineSplitter(HELLO_MAX_BYTES, (line) => {
    let v: unknown;
    try {
      v = JSON.parse(line.toString('utf8'));
    } catch {
      return;
    }
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return;
    const { id, method } = v as Json;
    if (typeof method !== 'string' || (typeof id !== 'string' && typeof id !== 'number')) return;
    if (socket.destroyed || ++answered > 64) return void socket.destroy();
    socket.write(encodeLine({ jsonrpc: '2.0', id, error: { code: AGENT_USER_REFUSED_CODE, message, data } }));
  });
  socket.on('data', (chunk: Buffer) => {
    try {
      onLine(chunk);
    } catch {
      socket.destroy();
    }
  });
  socket.on('end', () => socket.end());
}

export async function startAgentSocket(path: string, svc: Services, hooks: AgentSessionHooks, opts: AgentSocketOptions = {}): Promise<AgentEndpoint> {
  const servers = new Set<Server>();
  const sockets = new Set<Socket>();
  const admitted = (socket: Socket): Promise<Admission | null> => (opts.admit === undefined ? Promise.resolve(null) : opts.admit(socket).catch((): Admission => ({ ok: false, message: 'the agent socket could not check who is connecting' })));
  const net: NetServer = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    // The connection's bytes wait in the kernel until it is admitted (nothing reads them before).
    void admitted(socket).then(async (admission) => {
      if (admission !== null && !admission.ok) return refuseConnection(socket, admission.message);
      const { hello, rest } = await readHello(socket);
      // A reconnecting shim declares what it relayed: the new session knows what its client planned against.
      const session = newSessionInfo(hello);
      if (admission !== null) session.peer = admission.peer;
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
      socket.resume();
      socket.on('end', () => input.end());
      const served = serveAgentSession(svc, session, hooks, new SocketTransport(input, socket, agentLineLimit(svc.config.max_request_bytes)), (server) => {
        servers.add(server);
        server.onclose = () => servers.delete(server);
      });
      socket.on('close', () => served.close());
    });
  });
  await prepareSocketPath(path, opts.shared === true);
  const identity = await listenPrivate(net, path, opts.shared === true ? 0o666 : 0o600);
  return {
    sessions: servers,
    broadcastListChanged: () => broadcastListChanged(servers),
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
