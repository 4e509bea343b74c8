/**
 * The tool list an MCP session is shown: the catalog's current revisions
 * (inputs with `idempotency_key` added for tools with effects, the output
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
import { advertiseCatalog, deprecationsOf, needsIdempotencyKey, type Tool } from '../../contracts/index.js';
import { callStatusTool } from '../pipeline/call-status.js';
import { META_DEPRECATED_REVISIONS, META_REVISION, META_TOOLSET } from '../pipeline/context.js';
import { httpOutputSchema, sshOutputSchema } from '../pipeline/result.js';
import type { CatalogSnapshot } from '../state.js';

/** Whether a call of `tool` may wait for the operator, and so may run as an MCP task. */
export function runsAsTask(tool: Tool): boolean {
  return needsIdempotencyKey(tool) || tool.approval !== 'none';
}

export interface ToolList {
  readonly tools: readonly McpTool[];
  readonly revisions: ReadonlyMap<string, number>;
}

/**
 * Built once per catalog snapshot (and task offer), then shared by every session's
 * `tools/list`: a snapshot never changes, and the list is deeply frozen so that no
 * session can change what another is shown.
 */
const built = new WeakMap<CatalogSnapshot, { plain?: ToolList; tasks?: ToolList }>();

export function toolList(snapshot: CatalogSnapshot, opts: { tasks: boolean } = { tasks: false }): ToolList {
  let entry = built.get(snapshot);
  if (entry === undefined) {
    entry = {};
    built.set(snapshot, entry);
  }
  const which = opts.tasks ? 'tasks' : 'plain';
  return (entry[which] ??= deepFreeze(buildToolList(snapshot, opts.tasks)));
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

function buildToolList(snapshot: CatalogSnapshot, tasks: boolean): ToolList {
  const revisions = new Map<string, number>();
  const tools: McpTool[] = advertiseCatalog(snapshot.catalog).map((t) => {
    revisions.set(t.name, t.revision);
    const tool = snapshot.catalog.tools.get(t.name);
    const isHttp = tool?.current.action.kind !== 'ssh';
    const deprecated = tool === undefined ? [] : deprecationsOf(tool);
    return {
      name: t.name,
      description: t.description,
      inputSchema: t.inputSchema as McpTool['inputSchema'],
      outputSchema: isHttp ? httpOutputSchema(t.outputSchema) : sshOutputSchema(t.outputSchema),
      annotations: { ...t.annotations },
      ...(tasks && tool !== undefined && runsAsTask(tool) ? { execution: { taskSupport: 'optional' as const } } : {}),
      _meta: { [META_REVISION]: t.revision, [META_TOOLSET]: snapshot.toolset, ...(deprecated.length === 0 ? {} : { [META_DEPRECATED_REVISIONS]: deprecated }) },
    };
  });
  tools.push({ ...callStatusTool, inputSchema: callStatusTool.inputSchema as unknown as McpTool['inputSchema'], annotations: { ...callStatusTool.annotations }, _meta: { [META_TOOLSET]: snapshot.toolset } });
  return { tools, revisions };
}
