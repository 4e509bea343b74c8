/**
 * Builds one revision: its input schema (compiled, bounded; generated for broad
 * HTTP tools), optional output schema, action template, and the declared
 * lifecycle fields. The `previous` policy is only shaped here; it is checked
 * against the neighbouring revision by build-tools.ts.
 */
import { buildAction, type ActionKey } from './build-action.js';
import { PreviousShape, RevisionShape, type OutputAdapterInput } from './catalog-shape.js';
import type { DocPath, IssueSink } from '../issues.js';
import { SchemaLimits, type ObjectNode, type SchemaNode } from '../schema/schema-node.js';
import { parseSchema } from '../schema/schema-parse.js';
import { checkDefaults, compileSchema } from '../schema/schema-zod.js';
import { checkShape, isRecord } from './shape-check.js';
import type { HttpMethod, JsonPrimitive, JsonValue, OutputAdapter, PreviousPolicy, Revision, Target } from '../types.js';

const ACTION_KEYS: readonly ActionKey[] = ['http', 'http_request', 'ssh'];

/** The input Postern gives a broad HTTP tool: method, path, optional query map and JSON body. */
function broadInputNode(methods: readonly HttpMethod[]): ObjectNode {
  const str = (maxLength: number, pattern?: string): SchemaNode => ({ kind: 'string', minLength: 1, maxLength, pattern, format: undefined, leadingDash: 'refused' });
  return {
    kind: 'object',
    additional: { kind: 'none' },
    properties: [
      { name: 'method', presence: 'required', default: undefined, description: 'HTTP method', node: { kind: 'enum', values: [...methods] } },
      { name: 'path', presence: 'required', default: undefined, description: 'Request path, percent-encoded; must match one of the allowed patterns', node: str(2048, '^/') },
      {
        name: 'query',
        presence: 'optional',
        default: undefined,
        description: 'Query parameters',
        node: { kind: 'object', properties: [], additional: { kind: 'map', node: { ...str(2048), minLength: 0 } as SchemaNode, maxProperties: 32 } },
      },
      { name: 'body', presence: 'optional', default: undefined, description: 'JSON request body', node: { kind: 'json', maxDepth: SchemaLimits.jsonMaxDepth, maxBytes: SchemaLimits.jsonMaxBytes } },
    ],
  };
}

function shapePolicy(raw: unknown, at: DocPath, sink: IssueSink): PreviousPolicy | undefined {
  const p = checkShape(PreviousShape, raw, at, sink);
  if (p === undefined) return undefined;
  if (p.policy !== 'adapt' && p.policy !== 'migrate') return { policy: p.policy };
  if (!('renames' in p || 'mappings' in p || 'defaults' in p || 'output' in p)) return { policy: p.policy, renames: [], mappings: [], defaults: [], output: undefined };
  return {
    policy: p.policy,
    renames: Object.entries(p.renames ?? {}),
    mappings: mappingsOf(p.mappings),
    defaults: defaultsOf(p.defaults),
    output: p.output === undefined ? undefined : outputAdapterOf(p.output),
  };
}

type RawMappings = Record<string, { from?: unknown; to?: unknown }[]> | undefined;
const mappingsOf = (m: RawMappings) => Object.entries(m ?? {}).map(([field, pairs]) => [field, pairs.map((x) => [x.from as JsonPrimitive, x.to as JsonPrimitive] as const)] as const);
const defaultsOf = (d: Record<string, unknown> | undefined) => Object.entries(d ?? {}).map(([k, v]) => [k, v as JsonValue] as const);

function outputAdapterOf(o: OutputAdapterInput): OutputAdapter {
  return { unwrap: o.unwrap, renames: Object.entries(o.renames ?? {}), mappings: mappingsOf(o.mappings), defaults: defaultsOf(o.defaults), wrap: o.wrap };
}

export function buildRevision(tool: string, raw: unknown, at: DocPath, sink: IssueSink, targets: ReadonlyMap<string, Target>): Revision | undefined {
  const before = sink.count;
  const r = checkShape(RevisionShape, raw, at, sink);
  if (r === undefined) return undefined;
  const keys = ACTION_KEYS.filter((k) => r[k] !== undefined);
  if (keys.length !== 1) {
    sink.add(at, `needs exactly one action: http, http_request or ssh${keys.length > 1 ? ` (found ${keys.join(', ')})` : ''}`);
    return undefined;
  }
  const key = keys[0] as ActionKey;
  let inputNode: SchemaNode | undefined;
  if (key === 'http_request') {
    if (r.input !== undefined) sink.add([...at, 'input'], 'a broad http_request tool has a fixed input (method, path, query, body); remove input');
    const methods = isRecord(r.http_request) ? r.http_request['methods'] : undefined;
    inputNode = broadInputNode(Array.isArray(methods) ? (methods as HttpMethod[]) : []);
  } else {
    inputNode = parseSchema(r.input ?? { type: 'object' }, [...at, 'input'], sink, 'input');
    if (inputNode !== undefined) checkDefaults(inputNode, [...at, 'input'], sink);
  }
  const outputNode = r.output === undefined ? undefined : parseSchema(r.output, [...at, 'output'], sink, 'output');
  const action = inputNode?.kind === 'object' ? buildAction(key, r[key], [...at, key], inputNode, sink, targets) : undefined;
  const previous = r.previous === undefined ? undefined : shapePolicy(r.previous, [...at, 'previous'], sink);
  if (sink.count > before || inputNode === undefined || action === undefined) return undefined;
  return {
    tool,
    revision: r.revision,
    input: compileSchema(inputNode),
    output: outputNode === undefined ? undefined : compileSchema(outputNode),
    action,
    previous,
    deprecated: typeof r.deprecated === 'object' ? r.deprecated.date : r.deprecated,
    deprecationReplacement: typeof r.deprecated === 'object' ? r.deprecated.replacement : undefined,
    retired: r.retired === undefined ? undefined : { replacement: r.retired.replacement },
    semanticChange: r.semantic_change,
    canary: r.canary === undefined ? undefined : { sessionsPercent: r.canary.sessions_percent },
  };
}
