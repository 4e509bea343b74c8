/**
 * One MCP session: a low-level SDK `Server` per agent connection, serving
 * `tools/list` from the current catalog snapshot (and remembering which
 * revision of each tool this session was shown) and `tools/call` through the
 * call pipeline. Tool failures are `isError` results; protocol errors
 * (unknown method, malformed params) stay JSON-RPC errors, handled by the SDK.
 *
 * A session that starts from a listing the shim declared (a reconnect) is
 * sent `notifications/tools/list_changed` at its first request when the tools
 * differ from that listing. `tools/list` results say they may not be cached
 * (2026-07-28: `ttlMs: 0`, `cacheScope: private`): a listing is only good
 * until the operator accepts another catalog.
 */
import { Server, type CallToolRequest, type CallToolResult, type ListToolsResult, type ServerContext } from '@modelcontextprotocol/server';
import { handleCall } from '../pipeline/call.js';
import type { Services, SessionInfo } from '../pipeline/context.js';
import { META_AGENT_RELEASE, META_RUN_ID, progressTokenOf } from '../pipeline/context.js';
import type { CatalogSnapshot } from '../state.js';
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
  const release = ctx.mcpReq._meta?.[META_AGENT_RELEASE];
  if (typeof release === 'string' && release.length > 0 && session.agentRelease === null) session.agentRelease = clipLabel(release, 128);
}

/** True when the tools of `snapshot` differ from a listing declared at connect (tool set, revisions or toolset). */
function differsFrom(declared: ReadonlyMap<string, number>, declaredToolset: string | null, snapshot: CatalogSnapshot): boolean {
  if (declaredToolset !== null && declaredToolset !== snapshot.toolset) return true;
  const { revisions } = toolList(snapshot);
  if (revisions.size !== declared.size) return true;
  for (const [name, rev] of revisions) if (declared.get(name) !== rev) return true;
  return false;
}

export function createSessionServer(svc: Services, session: SessionInfo, hooks: SessionHooks): Server {
  const server = new Server(
    { name: 'postern', version: VERSION },
    {
      capabilities: { tools: { listChanged: true } },
      // A listing holds until the next accepted catalog: never fresh for longer than the response (2026-07-28 caching).
      cacheHints: { 'tools/list': { ttlMs: 0, cacheScope: 'private' } },
      instructions: 'Postern runs approved HTTP and SSH actions with credentials you never see. Tools with effects need an idempotency_key; after a timeout, use postern_call_status instead of repeating a call.',
    },
  );
  let started = false;
  // What the shim declared it relayed before this connection (empty for a new client).
  const declared = new Map(session.seen);
  const declaredToolset = session.listedToolset;
  const restored = declared.size > 0 || declaredToolset !== null;
  const begin = (ctx: ServerContext): void => {
    learnClient(server, session, ctx);
    if (!started) {
      started = true;
      hooks.started(session);
      if (restored && differsFrom(declared, declaredToolset, svc.state.snapshot())) {
        // The client planned against tools that changed while it was away: tell it to list them again.
        void server.sendToolListChanged().catch(() => undefined);
        try {
          svc.journals.sessions.event(session.id, 'list_changed_sent', { reason: 'reconnected with an older listing', declared: Object.fromEntries(declared), toolset: declaredToolset });
        } catch {
          // the notification is a courtesy; the calls themselves are decided by the declared revisions
        }
      }
    }
  };

  server.setRequestHandler('tools/list', (_req, ctx): ListToolsResult => {
    begin(ctx);
    const snapshot = svc.state.snapshot();
    const { tools, revisions } = toolList(snapshot);
    for (const [name, rev] of revisions) session.seen.set(name, rev);
    session.listedToolset = snapshot.toolset;
    try {
      svc.journals.sessions.event(session.id, 'tools_listed', { revisions: Object.fromEntries(revisions), toolset: snapshot.toolset });
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
