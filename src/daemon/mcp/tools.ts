/**
 * The tool list an MCP session is shown: the catalog's current revisions
 * (inputs with `idempotency_key` added for tools with effects, the output
 * envelope, annotations from the effect class, and `_meta` under our own
 * prefix carrying the revision and toolset version), plus the built-in
 * `postern_call_status`.
 */
import type { Tool as McpTool } from '@modelcontextprotocol/server';
import { advertiseCatalog } from '../../contracts/index.js';
import { callStatusTool } from '../pipeline/call-status.js';
import { META_REVISION, META_TOOLSET } from '../pipeline/context.js';
import { httpOutputSchema, sshOutputSchema } from '../pipeline/result.js';
import type { CatalogSnapshot } from '../state.js';

export function toolList(snapshot: CatalogSnapshot): { tools: McpTool[]; revisions: Map<string, number> } {
  const revisions = new Map<string, number>();
  const tools: McpTool[] = advertiseCatalog(snapshot.catalog).map((t) => {
    revisions.set(t.name, t.revision);
    const isHttp = snapshot.catalog.tools.get(t.name)?.current.action.kind !== 'ssh';
    return {
      name: t.name,
      description: t.description,
      inputSchema: t.inputSchema as McpTool['inputSchema'],
      outputSchema: isHttp ? httpOutputSchema(t.outputSchema) : sshOutputSchema(t.outputSchema),
      annotations: { ...t.annotations },
      _meta: { [META_REVISION]: t.revision, [META_TOOLSET]: snapshot.toolset },
    };
  });
  tools.push({ ...callStatusTool, inputSchema: callStatusTool.inputSchema as unknown as McpTool['inputSchema'], annotations: { ...callStatusTool.annotations }, _meta: { [META_TOOLSET]: snapshot.toolset } });
  return { tools, revisions };
}
