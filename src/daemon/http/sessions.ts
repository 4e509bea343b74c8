/**
 * The HTTP listener's live MCP sessions: each one a `createSessionServer`
 * session over the SDK's WebStandardStreamableHTTPServerTransport, with its
 * own MCP tasks. A session ends once: on DELETE, when its server closes, when
 * it is evicted to make room (the one idle the longest: no open request,
 * stream or task), after `IDLE_SESSION_MS` with no open request, and at
 * close; a session whose initialize the transport refused ends at once.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { WebStandardStreamableHTTPServerTransport, type Server } from '@modelcontextprotocol/server';
import type { Clock } from '../../clock/index.js';
import { createSessionServer } from '../mcp/session-server.js';
import { TaskStore, taskLimits } from '../mcp/task-store.js';
import type { Services, SessionInfo } from '../pipeline/context.js';

/** A session with no open request for this long is closed (a client that vanished without DELETE). */
export const IDLE_SESSION_MS = 30 * 60_000;
const SWEEP_MS = 60_000;

/** An HTTP session's record before its client says who it is: no shim, so no declared listing. */
export function blankSession(): SessionInfo {
  return { id: randomUUID(), clientName: null, clientVersion: null, protocolVersion: null, pid: null, runId: null, agentRelease: null, seen: new Map(), listedToolset: null };
}

export interface LiveSession {
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

export class HttpSessions {
  readonly #live = new Map<string, LiveSession>();
  readonly servers = new Set<Server>();
  #sweep: NodeJS.Timeout | undefined;

  constructor(
    private readonly svc: Services,
    private readonly clock: Clock,
    private readonly hooks: { sessionStarted(s: SessionInfo): void; sessionEnded(s: SessionInfo): void },
    /** The largest request body read, in bytes (protocol/agent-limits.ts). */
    readonly limit: number,
  ) {}

  get size(): number {
    return this.#live.size;
  }

  get(id: string): LiveSession | undefined {
    return this.#live.get(id);
  }

  /** A new session, connected to its transport; it is live once the transport names it (after initialize). */
  async open(): Promise<LiveSession> {
    const info = blankSession();
    // The transport's callbacks need the session record, which needs the transport.
    const ref: { s?: LiveSession } = {};
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomBytes(16).toString('hex'),
      onsessioninitialized: (id) => {
        if (ref.s !== undefined) this.#live.set(id, ref.s);
      },
      onsessionclosed: () => {
        if (ref.s !== undefined) this.end(ref.s);
      },
      maxRequestBodySize: this.limit,
    });
    const tasks = new TaskStore(this.svc.clock, taskLimits(this.svc.config));
    const started = (s: SessionInfo): void => {
      if (ref.s !== undefined) ref.s.begun = true;
      this.hooks.sessionStarted(s);
    };
    const server = createSessionServer(this.svc, info, { started }, tasks);
    const s: LiveSession = { info, server, tasks, transport, begun: false, openRequests: 0, lastSeenMs: this.clock.monotonicMs(), ended: false };
    ref.s = s;
    server.onclose = () => this.end(s);
    this.servers.add(server);
    await server.connect(transport);
    return s;
  }

  end(s: LiveSession): void {
    if (s.ended) return;
    s.ended = true;
    const id = s.transport.sessionId;
    if (id !== undefined) this.#live.delete(id);
    this.servers.delete(s.server);
    s.tasks.closeAll();
    void s.server.close().catch(() => undefined);
    if (s.begun) this.hooks.sessionEnded(s.info);
  }

  /** An initialize the transport refused leaves a session that never started: it ends. */
  endIfUnstarted(s: LiveSession): void {
    if (s.transport.sessionId === undefined || !this.#live.has(s.transport.sessionId)) this.end(s);
  }

  /**
   * Makes room for a new session by closing the one idle the longest (no open
   * request, no open stream, no task it could still ask about): many clients
   * never send DELETE. False when every session is busy.
   */
  async evictIdlest(): Promise<boolean> {
    let idlest: LiveSession | undefined;
    for (const s of this.#live.values()) if (s.openRequests === 0 && s.tasks.size === 0 && (idlest === undefined || s.lastSeenMs < idlest.lastSeenMs)) idlest = s;
    if (idlest === undefined) return false;
    const s = idlest;
    await s.transport.close().catch(() => undefined);
    this.end(s);
    return true;
  }

  /** Closes sessions idle past IDLE_SESSION_MS, every minute (the timer never keeps the process alive). */
  startSweep(): void {
    this.#sweep = setInterval(() => {
      const now = this.clock.monotonicMs();
      for (const s of [...this.#live.values()]) if (s.openRequests === 0 && now - s.lastSeenMs > IDLE_SESSION_MS) void s.transport.close().finally(() => this.end(s));
    }, SWEEP_MS);
    this.#sweep.unref();
  }

  async closeAll(): Promise<void> {
    clearInterval(this.#sweep);
    for (const s of [...this.#live.values()]) {
      await s.transport.close().catch(() => undefined);
      this.end(s);
    }
  }
}
