/**
 * The tool list an MCP session is shown: the catalog's current revisions —
 * or, for a tool under a canary the session is not part of, the revision
 * before it (contracts/calls/canary.ts) — (inputs with `idempotency_key` added for tools with effects, the output
 * envelope, annotations from the effect class, and `_meta` under our own
 * prefix carrying the revision, the toolset version and the deprecated
 * revisions still served — a pure function of the snapshot, so the cache
 * below stays valid), plus the built-in
 * `postern_call_status`. For a session that is offered MCP tasks
 * (./session-server.ts), every tool that may wait for the operator — it has
 * effects, or its approval is not `none` — says `execution.taskSupport:
 * "optional"`; the others (and `postern_call_status`) say nothing, which
 * means "forbidden".
 */
import type { Tool as McpTool } from '@modelcontextprotocol/server';
import { advertiseCatalog, advertiseTool, controlRevision, deprecationsOf, inCanary, needsIdempotencyKey, type Revision, type Tool } from '../../contracts/index.js';
import { callStatusTool } from '../pipeline/call-status.js';
import { META_DEPRECATED_REVISIONS, META_REVISION, META_TOOLSET } from '../pipeline/context.js';
import { httpOutputSchema, sshOutputSchema } from '../pipeline/stages/outcome/result.js';
import type { CatalogSnapshot } from '../services/state.js';

/** Whether a call of `tool` may wait for the operator, and so may run as an MCP task. */
export function runsAsTask(tool: Tool): boolean {
  return needsIdempotencyKey(tool) || tool.approval !== 'none';
}

interface ToolList {
  readonly tools: readonly McpTool[];
  readonly revisions: ReadonlyMap<string, number>;
}

/** A snapshot's listing, and for each tool under a canary the entry shown to sessions outside it. */
interface BuiltList extends ToolList {
  readonly control: ReadonlyMap<string, { readonly tool: Tool; readonly entry: McpTool; readonly revision: number }>;
}

/**
 * Built once per catalog snapshot (and task offer), then shared by every session's
 * `tools/list`: a snapshot never changes, and the list is deeply frozen so that no
 * session can change what another is shown. A session outside a tool's canary
 * (contracts/calls/canary.ts) gets the same frozen entries with that tool's control
 * entry in its place.
 */
const built = new WeakMap<CatalogSnapshot, { plain?: BuiltList; tasks?: BuiltList }>();

export function toolList(snapshot: CatalogSnapshot, opts: { tasks?: boolean; session?: string } = {}): ToolList {
  let entry = built.get(snapshot);
  if (entry === undefined) {
    entry = {};
    built.set(snapshot, entry);
  }
  const which = opts.tasks === true ? 'tasks' : 'plain';
  const list = (entry[which] ??= deepFreeze(buildToolList(snapshot, opts.tasks === true)));
  const session = opts.session;
  if (list.control.size === 0 || session === undefined) return list;
  const outside = [...list.control.entries()].filter(([, c]) => !inCanary(c.tool, session));
  if (outside.length === 0) return list;
  const swap = new Map(outside);
  const revisions = new Map(list.revisions);
  for (const [name, c] of swap) revisions.set(name, c.revision);
  return Object.freeze({ tools: Object.freeze(list.tools.map((t) => swap.get(t.name)?.entry ?? t)), revisions });
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

function entryFor(snapshot: CatalogSnapshot, tool: Tool, revision: Revision, tasks: boolean): McpTool {
  const t = advertiseTool(tool, revision);
  const deprecated = deprecationsOf(tool);
  const isHttp = revision.action.kind !== 'ssh';
  return {
    name: t.name,
    description: t.description,
    inputSchema: t.inputSchema as McpTool['inputSchema'],
    outputSchema: isHttp ? httpOutputSchema(t.outputSchema) : sshOutputSchema(t.outputSchema),
    annotations: { ...t.annotations },
    ...(tasks && runsAsTask(tool) ? { execution: { taskSupport: 'optional' as const } } : {}),
    _meta: { [META_REVISION]: t.revision, [META_TOOLSET]: snapshot.toolset, ...(deprecated.length === 0 ? {} : { [META_DEPRECATED_REVISIONS]: deprecated }) },
  };
}

function buildToolList(snapshot: CatalogSnapshot, tasks: boolean): BuiltList {
  const revisions = new Map<string, number>();
  const control = new Map<string, { tool: Tool; entry: McpTool; revision: number }>();
  const tools: McpTool[] = [];
  for (const t of advertiseCatalog(snapshot.catalog)) {
    const tool = snapshot.catalog.tools.get(t.name);
    if (tool === undefined) continue;
    revisions.set(t.name, t.revision);
    tools.push(entryFor(snapshot, tool, tool.current, tasks));
    const before = controlRevision(tool);
    if (before !== undefined) control.set(t.name, { tool, entry: entryFor(snapshot, tool, before, tasks), revision: before.revision });
  }
  tools.push({ ...callStatusTool, inputSchema: callStatusTool.inputSchema as unknown as McpTool['inputSchema'], annotations: { ...callStatusTool.annotations }, _meta: { [META_TOOLSET]: snapshot.toolset } });
  return { tools, revisions, control };
}
