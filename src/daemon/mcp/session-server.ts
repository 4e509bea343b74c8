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
 *
 * MCP tasks (2025-11-25): a session whose client negotiated 2025-11-25 and
 * declared `capabilities.tasks` is offered them — the `tasks` capability in
 * its initialize result, `execution.taskSupport: "optional"` on the tools
 * that may wait for the operator (./tools.ts), and the `tasks/*` methods
 * (./task-methods.ts). A `tools/call` with a `task` param is then answered at
 * once with a CreateTaskResult while the call runs through the same
 * pipeline, as a task of the session's store (./task-store.ts); a
 * `tasks/cancel` aborts it as a client's cancellation would. A task's start
 * and end are journaled as session events (`task_started`, `task_ended`;
 * its call is journaled like any other), and its end is sent as
 * `notifications/tasks/status`. Any other session — another era, or a
 * client that declared no task support — sees none of this, and a `task`
 * param it sends anyway is ignored (the call runs as a plain request:
 * progress, then APPROVAL_PENDING), as the spec requires of a server that
 * did not offer tasks. The 2026-07-28 era is not offered
 * tasks: there they left the core for an extension, and SDK 2.4's codec for
 * that era strips `capabilities.tasks` and `execution.taskSupport`.
 */
import {
  Server,
  type CallToolRequest,
  type CallToolResult,
  type CreateTaskResult,
  type JSONRPCRequest,
  type ListToolsResult,
  type Result,
  type ServerCapabilities,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { handleCall } from '../pipeline/call.js';
import type { Services, SessionInfo } from '../pipeline/context.js';
import { META_AGENT_RELEASE, META_RUN_ID, progressTokenOf } from '../pipeline/context.js';
import type { CatalogSnapshot } from '../services/state.js';
import { VERSION } from '../../version.js';
import { runsAsTask, toolList } from './tools.js';
import { clipLabel } from '../../rules/clip.js';
import { PosternError } from '../../rules/errors.js';
import { registerTaskMethods, taskProtocolError } from './task-methods.js';
import type { TaskRun, TaskStore, TaskView } from './task-store.js';

export interface SessionHooks {
  /** Called once, at the session's first request, when client facts are known. */
  started(session: SessionInfo): void;
}

const CLIENT_INFO_KEY = 'io.modelcontextprotocol/clientInfo';
/** The one protocol era whose core has tasks. */
const TASKS_PROTOCOL = '2025-11-25';
const TASKS_CAPABILITY = { list: {}, cancel: {}, requests: { tools: { call: {} } } } as const;

/** The `task` param of a task-augmented request (`{ttl?}`), when there is one. */
function taskParamsOf(params: unknown): { ttl?: number } | undefined {
  if (typeof params !== 'object' || params === null) return undefined;
  const task = (params as Record<string, unknown>)['task'];
  if (typeof task !== 'object' || task === null || Array.isArray(task)) return undefined;
  const ttl = (task as Record<string, unknown>)['ttl'];
  return typeof ttl === 'number' && Number.isFinite(ttl) && ttl >= 0 ? { ttl } : {};
}

/**
 * The SDK's low-level Server, plus what tasks need from it: the capability
 * advertised per session, and task-augmented `tools/call` answered with a
 * CreateTaskResult — which the SDK's `tools/call` result check (a
 * CallToolResult, or an error) would refuse, so such a request goes to the
 * registered handler past that check (`_wrapHandler`, the SDK's documented
 * hook for role-specific wrapping). Everything else keeps the SDK's path.
 */
class SessionServer extends Server {
  /** Whether this session is offered tasks: protocol 2025-11-25 and a client that declared `capabilities.tasks`. */
  tasksOffered(): boolean {
    // The initialize-scoped accessors are the right ones here: tasks exist only in the 2025 (initialize) era.
    return this.getNegotiatedProtocolVersion() === TASKS_PROTOCOL && this.getClientCapabilities()?.tasks !== undefined;
  }

  override getCapabilities(): ServerCapabilities {
    const base = super.getCapabilities();
    return this.tasksOffered() ? { ...base, tasks: TASKS_CAPABILITY } : base;
  }

  protected override _wrapHandler(method: string, handler: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>): (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result> {
    const wrapped = super._wrapHandler(method, handler);
    if (method !== 'tools/call') return wrapped;
    return (request, ctx) => (this.isTaskCall(request.params) ? handler(request, ctx) : wrapped(request, ctx));
  }

  /** A `tools/call` to be run as a task: it asks for one and this session was offered tasks. */
  isTaskCall(params: unknown): boolean {
    return taskParamsOf(params) !== undefined && this.tasksOffered();
  }
}
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
function differsFrom(declared: ReadonlyMap<string, number>, declaredToolset: string | null, snapshot: CatalogSnapshot, sessionId: string): boolean {
  if (declaredToolset !== null && declaredToolset !== snapshot.toolset) return true;
  const { revisions } = toolList(snapshot, { session: sessionId });
  if (revisions.size !== declared.size) return true;
  for (const [name, rev] of revisions) if (declared.get(name) !== rev) return true;
  return false;
}

/** Tells every live session its tool list changed; returns how many were told (a failed send is that session's trouble alone). */
export async function broadcastListChanged(servers: Iterable<Server>): Promise<number> {
  const all = [...servers];
  await Promise.all(all.map((s) => s.sendToolListChanged().catch(() => undefined)));
  return all.length;
}

export function createSessionServer(svc: Services, session: SessionInfo, hooks: SessionHooks, tasks: TaskStore): Server {
  const server = new SessionServer(
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
    const before = { run_id: session.runId, agent_release: session.agentRelease };
    learnClient(server, session, ctx);
    if (started && (session.runId !== before.run_id || session.agentRelease !== before.agent_release)) {
      // Declared after the session row was written (the ordinary flow lists before it calls): the row reads this entry.
      // Every call journals the identity it declared itself; the session row is the summary.
      svc.sessionsJournal.event(session.id, 'session_identified', { run_id: session.runId, agent_release: session.agentRelease });
    }
    if (!started) {
      started = true;
      hooks.started(session);
      if (restored && differsFrom(declared, declaredToolset, svc.state.snapshot(), session.id)) {
        // The client planned against tools that changed while it was away: tell it to list them again.
        void server.sendToolListChanged().catch(() => undefined);
        // The notification is a courtesy; the calls themselves are decided by the declared revisions.
        svc.sessionsJournal.event(session.id, 'list_changed_sent', { reason: 'reconnected with an older listing', declared: Object.fromEntries(declared), toolset: declaredToolset });
      }
    }
  };
  const project = (result: CallToolResult): CallToolResult => server.projectCallToolResult(result, undefined);
  // The call itself is journaled where it matters (intent, outcome); a task's bookkeeping cannot stop it.
  const journal = (type: 'task_started' | 'task_ended', data: Record<string, unknown>): void => svc.sessionsJournal.event(session.id, type, data);

  server.setRequestHandler('tools/list', (_req, ctx): ListToolsResult => {
    begin(ctx);
    const snapshot = svc.state.snapshot();
    const { tools, revisions } = toolList(snapshot, { tasks: server.tasksOffered(), session: session.id });
    for (const [name, rev] of revisions) session.seen.set(name, rev);
    session.listedToolset = snapshot.toolset;
    // Listing tools has no effect; a journal failure is refused where it matters (intents).
    svc.sessionsJournal.event(session.id, 'tools_listed', { revisions: Object.fromEntries(revisions), toolset: snapshot.toolset });
    return { tools: [...tools] };
  });

  /** Runs one call through the pipeline, counted in flight until it ends (so shutdown lets it finish). */
  const run = (req: CallToolRequest, ctx: ServerContext, how: { signal: AbortSignal; task?: TaskRun }): Promise<CallToolResult> => {
    const meta = (ctx.mcpReq._meta ?? {}) as Record<string, unknown>;
    const token = progressTokenOf(meta);
    let n = 0;
    const running = handleCall(svc, session, {
      name: req.params.name,
      arguments: req.params.arguments,
      meta,
      signal: how.signal,
      // A task's progress token stays valid for the task's lifetime (MCP 2025-11-25).
      progress: (message) => {
        if (token === undefined) return;
        n++;
        ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: n, message } }).catch(() => undefined);
      },
      ...(how.task === undefined ? {} : { asTask: true, status: how.task.status }),
    });
    svc.inflight.add(running);
    return running.finally(() => svc.inflight.delete(running));
  };

  /** A task-augmented call: refused here if its tool cannot run as a task, else started and answered at once. */
  const startTask = (req: CallToolRequest, ctx: ServerContext): CreateTaskResult => {
    const tool = svc.state.snapshot().catalog.tools.get(req.params.name);
    try {
      if (tool === undefined || !runsAsTask(tool)) {
        throw new PosternError('TASK_NOT_SUPPORTED', `the tool "${clipLabel(req.params.name, 64)}" does not run as a task (its tools/list entry has no execution.taskSupport); call it without "task"`);
      }
      // Its end is journaled, and told to the client (optional in the spec: clients still poll).
      const ended = (view: TaskView): void => {
        journal('task_ended', { task_id: view.taskId, status: view.status, status_message: view.statusMessage });
        if (server.transport !== undefined) server.notification({ method: 'notifications/tasks/status', params: { ...view } }).catch(() => undefined);
      };
      const task = tasks.start(taskParamsOf(req.params)?.ttl, (r) => run(req, ctx, { signal: r.signal, task: r }), ended);
      journal('task_started', { task_id: task.taskId, tool: clipLabel(req.params.name, 128), ttl_ms: task.ttl });
      return { task: { ...task } };
    } catch (e) {
      throw taskProtocolError(e);
    }
  };

  server.setRequestHandler('tools/call', async (req: CallToolRequest, ctx): Promise<CallToolResult> => {
    begin(ctx);
    // Past the SDK's result check (SessionServer._wrapHandler): a CreateTaskResult is this request's answer.
    if (server.isTaskCall(req.params)) return startTask(req, ctx) as unknown as CallToolResult;
    return project(await run(req, ctx, { signal: ctx.mcpReq.signal }));
  });

  registerTaskMethods(server, { offered: () => server.tasksOffered(), store: tasks, project });
  return server;
}
