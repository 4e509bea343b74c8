/**
 * An agent session in this process, over the MCP SDK's linked in-memory
 * transport pair: the daemon's session server (mcp/session-server.ts) served
 * exactly as the agent socket serves each connection (agent-socket.ts
 * `serveAgentSession`), without the socket. With `inProcessServices`
 * (in-process.ts) it lets a test, or the benchmark, drive real MCP requests
 * from an official SDK client through the whole call pipeline — admission,
 * approval, idempotency, journal, executor, redaction — with no process to
 * spawn and no file but the vault and journals the caller opened.
 *
 *   const agent = connectInMemory(svc);
 *   const client = new Client({ name: 'test', version: '1' });
 *   await client.connect(agent.client);
 *   …
 *   await agent.close();
 *
 * Not on this path: the agent socket's line screen and size limit
 * (agent-screen.ts; the messages here are objects, never lines) and the
 * `postern mcp` shim. What those answer is tested over the real socket and
 * the built CLI.
 */
import { InMemoryTransport, type Transport } from '@modelcontextprotocol/server';
import { newSessionInfo, serveAgentSession, type AgentSessionHooks } from './agent-socket.js';
import type { Services, SessionInfo } from '../pipeline/context.js';

export interface InMemoryAgent {
  /** The agent's end: give it to an SDK client's `connect`. */
  readonly client: Transport;
  /** The session's facts as the pipeline sees them (id, client, revisions seen). */
  readonly session: SessionInfo;
  /** Ends the session as a closed connection does: its tasks and waiting calls are cancelled. */
  close(): Promise<void>;
}

const noHooks: AgentSessionHooks = { sessionStarted: () => undefined, sessionEnded: () => undefined };

export function connectInMemory(svc: Services, hooks: AgentSessionHooks = noHooks): InMemoryAgent {
  const [client, daemonSide] = InMemoryTransport.createLinkedPair();
  const session = newSessionInfo(null);
  const served = serveAgentSession(svc, session, hooks, daemonSide);
  return {
    client,
    session,
    async close() {
      served.close();
      await client.close();
    },
  };
}
