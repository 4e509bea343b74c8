/**
 * The optional Streamable HTTP MCP listener (off by default; config.yaml
 * `mcp_http` plus the operator's authorization, src/home/http-authorization.ts).
 * It binds 127.0.0.1 only and lets nothing through the gate (`gate.ts`: Host,
 * Origin, path, bearer token, method, content type) unanswered by Postern
 * itself. Each HTTP MCP session (`Mcp-Session-Id`, the 2025-11-25 session
 * protocol) is one `createSessionServer` session over the SDK's
 * `WebStandardStreamableHTTPServerTransport`, exactly like one agent-socket
 * connection, and each POST body passes the same agent screen
 * (`agent-screen.ts`) and size rule (`protocol/agent-limits.ts`) first.
 *
 * Invariants: bodies are read with bounded memory (a body over the limit is
 * answered from its first bytes, as the pipeline would, and the connection
 * closed); at most `max_sessions` sessions live at once — a new one closes
 * the session idle the longest (no open request, stream or task), and only when
 * every session is busy is it refused (503); a session ends on DELETE, after
 * `IDLE_SESSION_MS` with no open request, and on daemon stop; no response carries CORS headers; a throw while serving one
 * request answers 500 to that request only and never reaches the daemon.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as NodeHttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebStandardStreamableHTTPServerTransport, type Server } from '@modelcontextprotocol/server';
import type { Clock } from '../../clock/index.js';
import { agentLineLimit, oversizedAnswer } from '../../protocol/agent-limits.js';
import { screenAgentMessage } from '../agent-screen.js';
import { broadcastListChanged, createSessionServer } from '../mcp/session-server.js';
import { TaskStore, taskLimits } from '../mcp/task-store.js';
import type { Services, SessionInfo } from '../pipeline/context.js';
import { judgeRequest, MCP_PATH, refusalBody } from './gate.js';
import { readBody, sendJson, webRequest, writeResponse } from './node-bridge.js';
import { PosternError, type ErrorCode } from '../../protocol/errors.js';

/** A session with no open request for this long is closed (a client that vanished without DELETE). */
/** An HTTP session's record before its client says who it is: no shim, so no declared listing. */
function blankSession(): SessionInfo {
  return { id: randomUUID(), clientName: null, clientVersion: null, protocolVersion: null, pid: null, runId: null, agentRelease: null, seen: new Map(), listedToolset: null };
}

export const IDLE_SESSION_MS = 30 * 60_000;
const SWEEP_MS = 60_000;
const SESSION_HEADER = 'mcp-session-id';

export interface HttpListenerOptions {
  readonly port: number;
  readonly maxSessions: number;
  readonly token: string;
  readonly clock: Clock;
  readonly hooks: { sessionStarted(s: SessionInfo): void; sessionEnded(s: SessionInfo): void };
}

export interface HttpEndpoint {
  readonly url: string;
  readonly port: number;
  readonly sessions: ReadonlySet<Server>;
  broadcastListChanged(): Promise<number>;
  stopAccepting(): void;
  close(): Promise<void>;
}

interface LiveSession {
  readonly info: SessionInfo;
  readonly server: Server;
  /** This session's MCP tasks (src/daemon/mcp/task-store.ts), ended with it. */
  readonly tasks: TaskStore;
  readonly transport: WebStandardStreamableHTTPServerTransport;
  begun: boolean;
  openRequests: number;
  lastSeenMs: number;
  ended: boolean;
}

function refuse(res: ServerResponse, status: number, code: ErrorCode, message: string, extra: Readonly<Record<string, string>> = {}): void {
  sendJson(res, status, refusalBody(code, message), extra);
}

const isInitialize = (m: unknown): boolean => typeof m === 'object' && m !== null && !Array.isArray(m) && (m as Record<string, unknown>)['method'] === 'initialize';

export async function startHttpListener(svc: Services, opts: HttpListenerOptions): Promise<HttpEndpoint> {
  const { clock, hooks } = opts;
  const live = new Map<string, LiveSession>();
  const servers = new Set<Server>();
  const sockets = new Set<Socket>();
  let accepting = true;
  let port = opts.port;
  const limit = agentLineLimit(svc.config.max_request_bytes);

  const end = (s: LiveSession): void => {
    if (s.ended) return;
    s.ended = true;
    const id = s.transport.sessionId;
    if (id !== undefined) live.delete(id);
    servers.delete(s.server);
    s.tasks.closeAll();
    void s.server.close().catch(() => undefined);
    if (s.begun) hooks.sessionEnded(s.info);
  };

  const newSession = async (): Promise<LiveSession> => {
    const info = blankSession();
    // The transport's callbacks need the session record, which needs the transport.
    const ref: { s?: LiveSession } = {};
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomBytes(16).toString('hex'),
      onsessioninitialized: (id) => {
        if (ref.s !== undefined) live.set(id, ref.s);
      },
      onsessionclosed: () => {
        if (ref.s !== undefined) end(ref.s);
      },
      maxRequestBodySize: limit,
    });
    const tasks = new TaskStore(svc.clock, taskLimits(svc.config));
    const server = createSessionServer(
      svc,
      info,
      {
        started: (s) => {
          if (ref.s !== undefined) ref.s.begun = true;
          hooks.sessionStarted(s);
        },
      },
      tasks,
    );
    const s: LiveSession = { info, server, tasks, transport, begun: false, openRequests: 0, lastSeenMs: clock.monotonicMs(), ended: false };
    ref.s = s;
    server.onclose = () => end(s);
    servers.add(server);
    await server.connect(transport);
    return s;
  };

  /**
   * Makes room for a new session by closing the one idle the longest (no open
   * request, no open stream, no task it could still ask about): many clients
   * never send DELETE. False when every session is busy.
   */
  const evictIdlest = async (): Promise<boolean> => {
    let idlest: LiveSession | undefined;
    for (const s of live.values()) if (s.openRequests === 0 && s.tasks.size === 0 && (idlest === undefined || s.lastSeenMs < idlest.lastSeenMs)) idlest = s;
    if (idlest === undefined) return false;
    const s = idlest;
    await s.transport.close().catch(() => undefined);
    end(s);
    return true;
  };

  /** One POST body, screened; returns the parsed message to hand over, or null when answered here. */
  const screenBody = async (req: IncomingMessage, res: ServerResponse, info: SessionInfo): Promise<{ message: unknown } | null> => {
    const body = await readBody(req, limit);
    if (body.kind === 'oversized') {
      const answer = oversizedAnswer({ head: body.head, tail: '' }, limit);
      const close = { Connection: 'close' };
      if (answer !== null && 'result' in answer) sendJson(res, 200, answer, close);
      else sendJson(res, 413, answer ?? { jsonrpc: '2.0', id: null, error: { code: -32600, message: `Invalid Request: the message is larger than ${limit} bytes` } }, close);
      res.once('finish', () => req.destroy());
      return null;
    }
    const verdict = screenAgentMessage(body.bytes, svc, info);
    switch (verdict.kind) {
      case 'pass':
        return { message: verdict.message };
      case 'answer':
        sendJson(res, 200, verdict.response);
        return null;
      case 'answer-later':
        sendJson(res, 200, await verdict.response);
        return null;
      case 'drop':
        res.writeHead(202).end();
        return null;
    }
  };

  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const header = (name: string): string | undefined => {
      const v = req.headers[name];
      return Array.isArray(v) ? v.join(', ') : v;
    };
    const verdict = judgeRequest({ method: req.method ?? '', url: req.url ?? '', host: header('host'), origin: header('origin'), authorization: header('authorization'), contentType: header('content-type') }, port, opts.token);
    if (verdict.kind === 'refuse') return refuse(res, verdict.status, verdict.code, verdict.message, verdict.headers);
    const sessionId = header(SESSION_HEADER);
    let s: LiveSession | undefined;
    let message: unknown;
    let hasBody = false;
    if (sessionId === undefined) {
      if (verdict.method !== 'POST') return sendJson(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: Mcp-Session-Id header is required' } });
      if (!accepting) return refuse(res, 503, 'HTTP_SESSION_LIMIT', 'the daemon is shutting down');
      if (live.size >= opts.maxSessions && !(await evictIdlest())) return refuse(res, 503, 'HTTP_SESSION_LIMIT', `${opts.maxSessions} HTTP sessions are open and busy (mcp_http.max_sessions); end one with DELETE or retry later`, { 'Retry-After': '5' });
      const screened = await screenBody(req, res, blankSession());
      if (screened === null) return;
      if (!isInitialize(screened.message)) return sendJson(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: Mcp-Session-Id header is required' } });
      s = await newSession();
      message = screened.message;
      hasBody = true;
    } else {
      const found = live.get(sessionId);
      if (found === undefined) return sendJson(res, 404, { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
      s = found;
      if (verdict.method === 'POST') {
        // Busy while its body is read, so it is never the idle one closed to make room.
        found.openRequests++;
        const screened = await screenBody(req, res, found.info).finally(() => void found.openRequests--);
        if (screened === null) return;
        message = screened.message;
        hasBody = true;
      }
    }
    const session = s;
    session.openRequests++;
    session.lastSeenMs = clock.monotonicMs();
    const abort = new AbortController();
    res.once('close', () => abort.abort());
    try {
      const response = await session.transport.handleRequest(webRequest(req, port, abort.signal), hasBody ? { parsedBody: message } : {});
      await writeResponse(res, response);
    } finally {
      session.openRequests--;
      session.lastSeenMs = clock.monotonicMs();
      // An initialize the transport refused leaves a session that never started.
      if (session.transport.sessionId === undefined || !live.has(session.transport.sessionId)) end(session);
    }
  };

  const http: NodeHttpServer = createServer((req, res) => {
    serve(req, res).catch(() => {
      // one request's surprise stays with that request
      if (!res.headersSent) refuse(res, 500, 'INTERNAL', 'the request could not be served');
      else res.destroy();
    });
  });
  http.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  http.on('clientError', (_e, socket: Socket) => socket.destroy());
  http.headersTimeout = 10_000;
  // Receiving a request (headers and body) is bounded; a response (an SSE stream) is not: idle sessions are swept instead.
  http.requestTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    const onError = (e: NodeJS.ErrnoException): void => {
      const why = e.code === 'EADDRINUSE' ? 'is in use' : `cannot be bound (${e.code ?? 'error'})`;
      reject(new PosternError('HTTP_LISTEN_FAILED', `port ${opts.port} on 127.0.0.1 ${why}: set another mcp_http.port and run \`postern http enable --port N\``));
    };
    http.once('error', onError);
    http.listen({ host: '127.0.0.1', port: opts.port, exclusive: true }, () => {
      http.off('error', onError);
      resolve();
    });
  });
  port = (http.address() as AddressInfo).port;
  const sweep = setInterval(() => {
    const now = clock.monotonicMs();
    for (const s of [...live.values()]) if (s.openRequests === 0 && now - s.lastSeenMs > IDLE_SESSION_MS) void s.transport.close().finally(() => end(s));
  }, SWEEP_MS);
  sweep.unref();

  return {
    url: `http://127.0.0.1:${port}${MCP_PATH}`,
    port,
    sessions: servers,
    broadcastListChanged: () => broadcastListChanged(servers),
    stopAccepting() {
      accepting = false;
      http.close();
    },
    async close() {
      accepting = false;
      clearInterval(sweep);
      for (const s of [...live.values()]) {
        await s.transport.close().catch(() => undefined);
        end(s);
      }
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}
