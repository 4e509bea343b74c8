/**
 * The agent socket: every connection is one MCP session served by the SDK
 * (`serveStdio` picks the 2025 `initialize` era or the 2026-07-28 era per
 * connection). The `postern mcp` shim may open with one hello line carrying
 * its pid; that line is read and removed before the MCP stream starts.
 * A malformed or oversized stream closes only its own connection.
 */
import { createServer, type Server as NetServer, type Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { PassThrough, type Readable } from 'node:stream';
import type { Server } from '@modelcontextprotocol/server';
import { serveStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { listenPrivate } from './socket-files.js';
import { createSessionServer } from './mcp/session-server.js';
import type { Services, SessionInfo } from './pipeline/context.js';

/**
 * The longest message a connection may buffer. The shim forwards lines up to
 * 4 MiB (and answers longer ones itself); the margin covers the start of the
 * next line arriving in the same read.
 */
const MAX_MESSAGE_BYTES = 5 * 1024 * 1024;
const HELLO_MAX = 512;

class SocketTransport extends StdioServerTransport {
  constructor(
    input: Readable,
    private readonly socket: Socket,
  ) {
    super(input, socket, { maxBufferSize: MAX_MESSAGE_BYTES });
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
 * Reads an optional `{"postern_shim":1,"pid":N}` first line and returns a
 * stream of everything after it (or of everything, when there is no hello).
 */
function readHello(socket: Socket): Promise<{ pid: number | null; input: Readable }> {
  return new Promise((resolve) => {
    const onData = (chunk: Buffer): void => {
      socket.off('data', onData);
      socket.pause();
      const input = new PassThrough();
      let pid: number | null = null;
      let rest = chunk;
      const nl = chunk.indexOf(0x0a);
      if (chunk[0] === 0x7b && nl > 0 && nl < HELLO_MAX) {
        try {
          const h = JSON.parse(chunk.subarray(0, nl).toString('utf8')) as { postern_shim?: unknown; pid?: unknown };
          if (h.postern_shim === 1) {
            rest = chunk.subarray(nl + 1);
            if (typeof h.pid === 'number' && Number.isInteger(h.pid)) pid = h.pid;
          }
        } catch {
          // not a hello: an MCP message, passed on as it is
        }
      }
      if (rest.length > 0) input.write(rest);
      socket.pipe(input);
      resolve({ pid, input });
    };
    socket.on('data', onData);
  });
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
    void readHello(socket).then(({ pid, input }) => {
      const session: SessionInfo = { id: randomUUID(), clientName: null, clientVersion: null, protocolVersion: null, pid, runId: null, seen: new Map() };
      let begun = false;
      const handle = serveStdio(
        () => {
          const server = createSessionServer(svc, session, {
            started: (s) => {
              begun = true;
              hooks.sessionStarted(s);
            },
          });
          servers.add(server);
          server.onclose = () => servers.delete(server);
          return server;
        },
        { transport: new SocketTransport(input, socket), legacy: 'serve', onerror: () => undefined },
      );
      socket.on('close', () => {
        void handle.close();
        if (begun) hooks.sessionEnded(session);
      });
    });
  });
  await listenPrivate(net, path);
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
      await new Promise<void>((resolve) => {
        net.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
    },
  };
}
