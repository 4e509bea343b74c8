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
 * answered from its first bytes, as the pipeline would: REQUEST_TOO_LARGE, a
 * tool result for a `tools/call`, else 413; the rest is read and discarded so
 * the answer arrives, then the connection closed); at most `max_sessions` sessions live at once — a new one closes
 * the session idle the longest (no open request, stream or task), and only when
 * every session is busy is it refused (503); a session ends on DELETE, after
 * `IDLE_SESSION_MS` with no open request, and on daemon stop; no response carries CORS headers; a throw while serving one
 * request answers 500 to that request only and never reaches the daemon.
 */
import { createServer, type IncomingMessage, type Server as NodeHttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Server } from '@modelcontextprotocol/server';
import type { Clock } from '../../clock/index.js';
import { agentLineLimit, oversizedAnswer } from '../../protocol/agent-limits.js';
import { screenAgentMessage } from '../mcp/agent-screen.js';
import { broadcastListChanged } from '../mcp/session-server.js';
import { blankSession, HttpSessions, type LiveSession } from './sessions.js';
import type { Services, SessionInfo } from '../pipeline/context.js';
import { judgeRequest, MCP_PATH, refusalBody } from './gate.js';
import { answerOversized, readBody, sendJson, webRequest, writeResponse } from './node-bridge.js';
import { INVALID_REQUEST } from '../../protocol/jsonrpc-screen.js';
import { PosternError, type ErrorCode } from '../../rules/errors.js';

const SESSION_HEADER = 'mcp-session-id';

interface HttpListenerOptions {
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

function refuse(res: ServerResponse, status: number, code: ErrorCode, message: string, extra: Readonly<Record<string, string>> = {}): void {
  sendJson(res, status, refusalBody(code, message), extra);
}

const rpcId = (v: unknown): string | number | null => (typeof v === 'string' || typeof v === 'number' ? v : null);

const isInitialize = (m: unknown): boolean => typeof m === 'object' && m !== null && !Array.isArray(m) && (m as Record<string, unknown>)['method'] === 'initialize';

export async function startHttpListener(svc: Services, opts: HttpListenerOptions): Promise<HttpEndpoint> {
  const { clock, hooks } = opts;
  const sessions = new HttpSessions(svc, clock, hooks, agentLineLimit(svc.config.max_request_bytes));
  const sockets = new Set<Socket>();
  let accepting = true;
  let port = opts.port;
  const limit = sessions.limit;

  /** One POST body, screened; returns the parsed message to hand over, or null when answered here. */
  const screenBody = async (req: IncomingMessage, res: ServerResponse, info: SessionInfo): Promise<{ message: unknown } | null> => {
    const body = await readBody(req, limit);
    if (body.kind === 'oversized') {
      const answer = oversizedAnswer({ head: body.head, tail: '' }, limit);
      if (answer !== null && 'result' in answer) answerOversized(req, res, 200, answer, body.read);
      else answerOversized(req, res, 413, refusalBody('REQUEST_TOO_LARGE', `the message is larger than ${limit} bytes`, { id: rpcId(answer?.['id']), code: INVALID_REQUEST }), body.read);
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
      if (sessions.size >= opts.maxSessions && !(await sessions.evictIdlest())) return refuse(res, 503, 'HTTP_SESSION_LIMIT', `${opts.maxSessions} HTTP sessions are open and busy (mcp_http.max_sessions); end one with DELETE or retry later`, { 'Retry-After': '5' });
      const screened = await screenBody(req, res, blankSession());
      if (screened === null) return;
      if (!isInitialize(screened.message)) return sendJson(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: Mcp-Session-Id header is required' } });
      s = await sessions.open();
      message = screened.message;
      hasBody = true;
    } else {
      const found = sessions.get(sessionId);
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
      sessions.endIfUnstarted(session);
    }
  };

  const http = guardedServer(serve, sockets);
  await listenLoopback(http, opts.port);
  port = (http.address() as AddressInfo).port;
  sessions.startSweep();

  return {
    url: `http://127.0.0.1:${port}${MCP_PATH}`,
    port,
    sessions: sessions.servers,
    broadcastListChanged: () => broadcastListChanged(sessions.servers),
    stopAccepting() {
      accepting = false;
      http.close();
    },
    async close() {
      accepting = false;
      await sessions.closeAll();
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}

/** Binds 127.0.0.1:`port` (0: any free port), exclusively; HTTP_LISTEN_FAILED says what to do when it cannot. */
async function listenLoopback(http: NodeHttpServer, port: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const onError = (e: NodeJS.ErrnoException): void => {
      const why = e.code === 'EADDRINUSE' ? 'is in use' : `cannot be bound (${e.code ?? 'error'})`;
      reject(new PosternError('HTTP_LISTEN_FAILED', `port ${port} on 127.0.0.1 ${why}: set another mcp_http.port and run \`postern http enable --port N\``));
    };
    http.once('error', onError);
    http.listen({ host: '127.0.0.1', port, exclusive: true }, () => {
      http.off('error', onError);
      resolve();
    });
  });
}

/**
 * The node HTTP server around `serve`: a throw while serving one request
 * answers 500 to that request only; its sockets are tracked (to cut them at
 * close); receiving a request is bounded in time, a response (an SSE stream)
 * is not (idle sessions are swept instead).
 */
function guardedServer(serve: (req: IncomingMessage, res: ServerResponse) => Promise<void>, sockets: Set<Socket>): NodeHttpServer {
  const http = createServer((req, res) => {
    serve(req, res).catch(() => {
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
  http.requestTimeout = 60_000;
  return http;
}
