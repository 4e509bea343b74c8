/**
 * One MCP session: a low-level SDK `Server` per agent connection, serving
 * `tools/list` from the current catalog snapshot (and remembering which
 * revision of each tool this session was shown) and `tools/call` through the
 * call pipeline. Tool failures are `isError` results; protocol errors
 * (unknown method, malformed params) stay JSON-RPC errors, handled by the SDK.
 */
import { Server, type CallToolRequest, type CallToolResult, type ListToolsResult, type ServerContext } from '@modelcontextprotocol/server';
import { handleCall } from '../pipeline/call.js';
import type { Services, SessionInfo } from '../pipeline/context.js';
import { META_RUN_ID, progressTokenOf } from '../pipeline/context.js';
import { VERSION } from '../../version.js';
import { toolList } from './tools.js';
import { clipLabel } from '../../protocol/clip.js';

export interface SessionHooks {
  /** Called once, at the session's first request, when client facts are known. */
  started(session: SessionInfo): void;
}

const CLIENT_INFO_KEY = 'io.modelcontextprotocol/clientInfo';
const PROTOCOL_KEY = 'io.modelcontextprotocol/protocolVersion';

function learnClient(server: Server, session: SessionInfo, ctx: ServerContext): void {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const fromEnvelope: unknown = envelope?.[CLIENT_INFO_KEY];
  const info: { name?: unknown; version?: unknown } | undefined =
    typeof fromEnvelope === 'object' && fromEnvelope !== null ? fromEnvelope : server.getClientVersion();
  if (typeof info?.name === 'string') session.clientName = clipLabel(info.name, 128);
  if (typeof info?.version === 'string') session.clientVersion = clipLabel(info.version, 64);
  const proto = envelope?.[PROTOCOL_KEY] ?? server.getNegotiatedProtocolVersion();
  if (typeof proto === 'string') session.protocolVersion = proto;
  const runId = ctx.mcpReq._meta?.[META_RUN_ID];
  if (typeof runId === 'string' && session.runId === null) session.runId = clipLabel(runId, 128);
}

export function createSessionServer(svc: Services, session: SessionInfo, hooks: SessionHooks): Server {
  const server = new Server(
    { name: 'postern', version: VERSION },
    {
      capabilities: { tools: { listChanged: true } },
      instructions: 'Postern runs approved HTTP and SSH actions with credentials you never see. Tools with effects need an idempotency_key; after a timeout, use postern_call_status instead of repeating a call.',
    },
  );
  let started = false;
  const begin = (ctx: ServerContext): void => {
    learnClient(server, session, ctx);
    if (!started) {
      started = true;
      hooks.started(session);
    }
  };

  server.setRequestHandler('tools/list', (_req, ctx): ListToolsResult => {
    begin(ctx);
    const { tools, revisions } = toolList(svc.state.snapshot());
    for (const [name, rev] of revisions) session.seen.set(name, rev);
    try {
      svc.journals.sessions.event(session.id, 'tools_listed', { revisions: Object.fromEntries(revisions), toolset: svc.state.snapshot().toolset });
    } catch {
      // listing tools has no effect; a journal failure is caught where it matters (intents)
    }
    return { tools };
  });

  server.setRequestHandler('tools/call', async (req: CallToolRequest, ctx): Promise<CallToolResult> => {
    begin(ctx);
    const meta = (ctx.mcpReq._meta ?? {}) as Record<string, unknown>;
    const token = progressTokenOf(meta);
    let n = 0;
    const running = handleCall(svc, session, {
      name: req.params.name,
      arguments: req.params.arguments,
      meta,
      signal: ctx.mcpReq.signal,
      progress: (message) => {
        if (token === undefined) return;
        n++;
        ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: n, message } }).catch(() => undefined);
      },
    });
    svc.inflight.add(running);
    const result = await running.finally(() => svc.inflight.delete(running));
    return server.projectCallToolResult(result, undefined);
  });
  return server;
}
