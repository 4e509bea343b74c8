/**
 * The bounded JSON Schema subset Postern accepts, as a small tagged tree.
 * Inputs come from agents, so every input schema is closed and bounded: objects
 * never accept unknown properties (additionalProperties is forced to false, or
 * is an explicit bounded map), strings and arrays always have a maximum, and
 * nesting depth is limited. Features whose effect cannot be bounded or compared
 * ($ref, allOf, oneOf, not, if/then/else, patternProperties, tuples…) are
 * refused with the path of the keyword. Output schemas use the same tree but
 * stay open: unknown result keys are allowed and bounds are not invented.
 */
import type { JsonPrimitive, JsonValue } from './json.js';

export const SchemaLimits = {
  defaultMaxLength: 4096,
  maxMaxLength: 1_048_576,
  defaultMaxItems: 100,
  maxMaxItems: 10_000,
  defaultMaxProperties: 64,
  maxMaxProperties: 1000,
  maxDepth: 8,
  maxDeclaredProperties: 128,
  maxEnumValues: 1000,
  maxPatternLength: 1000,
  maxRecordKeyLength: 128,
  /** Broad HTTP bodies: free-form JSON. */
  jsonMaxDepth: 16,
  jsonMaxBytes: 262_144,
} as const;

export const StringFormats = ['date', 'date-time', 'uuid', 'email'] as const;
export type StringFormat = (typeof StringFormats)[number];

/** Whether an argv/path value produced from this node may start with "-" (x-postern-allow-dash). */
type LeadingDash = 'allowed' | 'refused';

interface StringNode {
  readonly kind: 'string';
  readonly minLength: number;
  /** Always set for inputs; may be absent for outputs. */
  readonly maxLength: number | undefined;
  readonly pattern: string | undefined;
  readonly format: StringFormat | undefined;
  readonly leadingDash: LeadingDash;
}

interface NumberNode {
  readonly kind: 'integer' | 'number';
  readonly minimum: number | undefined;
  readonly maximum: number | undefined;
  readonly exclusiveMinimum: number | undefined;
  readonly exclusiveMaximum: number | undefined;
  readonly multipleOf: number | undefined;
  readonly leadingDash: LeadingDash;
}

interface EnumNode {
  readonly kind: 'enum';
  readonly values: readonly JsonPrimitive[];
}

interface ArrayNode {
  readonly kind: 'array';
  readonly items: SchemaNode;
  readonly minItems: number;
  readonly maxItems: number | undefined;
  readonly uniqueItems: 'required' | 'not_required';
}

export interface PropertyDef {
  readonly name: string;
  readonly node: SchemaNode;
  readonly presence: 'required' | 'optional';
  /** Filled in when the property is absent (only on optional properties). */
  readonly default: JsonValue | undefined;
  /** Shown to the agent; not part of the contract. */
  readonly description: string | undefined;
}

/** Keys beyond the declared properties: none (closed), a bounded map of one value schema, or anything (outputs only). */
export type Additional =
  | { readonly kind: 'none' }
  | { readonly kind: 'map'; readonly node: SchemaNode; readonly maxProperties: number }
  | { readonly kind: 'open' };

export interface ObjectNode {
  readonly kind: 'object';
  readonly properties: readonly PropertyDef[];
  readonly additional: Additional;
}

interface UnionNode {
  readonly kind: 'union';
  readonly options: readonly SchemaNode[];
}

/** Free-form JSON, bounded by depth and size. Produced by Postern for broad tools; not writable in a catalog. */
interface JsonNode {
  readonly kind: 'json';
  readonly maxDepth: number;
  readonly maxBytes: number;
}

export type SchemaNode =
  | StringNode
  | NumberNode
  | { readonly kind: 'boolean' }
  | { readonly kind: 'null' }
  | EnumNode
  | ArrayNode
  | ObjectNode
  | UnionNode
  | JsonNode;

/** Scalars that can be written into a path segment, header, query value or argv entry. */
export function isScalarNode(node: SchemaNode): boolean {
  switch (node.kind) {
    case 'string':
    case 'integer':
    case 'number':
    case 'boolean':
      return true;
    case 'enum':
      return node.values.every((v) => v !== null);
    case 'union':
      return node.options.every(isScalarNode);
    case 'null':
    case 'array':
    case 'object':
    case 'json':
      return false;
  }
}

export function findProperty(node: ObjectNode, name: string): PropertyDef | undefined {
  return node.properties.find((p) => p.name === name);
}

/** Whether a value from this node may start with "-" when placed first in an argv entry. */
export function dashPolicyOf(node: SchemaNode): LeadingDash {
  switch (node.kind) {
    case 'string':
    case 'integer':
    case 'number':
      return node.leadingDash;
    case 'enum':
      return 'allowed'; // the operator listed every value
    case 'union':
      return node.options.every((o) => dashPolicyOf(o) === 'allowed') ? 'allowed' : 'refused';
    case 'array':
      return dashPolicyOf(node.items);
    case 'boolean':
    case 'null':
    case 'object':
    case 'json':
      return 'refused';
  }
}

/** A schema that accepts exactly one JSON value. */
export function constNode(v: JsonValue): SchemaNode {
  if (Array.isArray(v)) {
    const items: SchemaNode = v.length === 0 ? { kind: 'enum', values: [null] } : { kind: 'union', options: v.map(constNode) };
    return { kind: 'array', items, minItems: v.length, maxItems: v.length, uniqueItems: 'not_required' };
  }
  if (typeof v === 'object' && v !== null) {
    return {
      kind: 'object',
      additional: { kind: 'none' },
      properties: Object.entries(v).map(([name, x]) => ({ name, node: constNode(x), presence: 'required', default: undefined, description: undefined })),
    };
  }
  return { kind: 'enum', values: [v] };
}

const orConst = (node: SchemaNode, v: JsonValue): SchemaNode => ({ kind: 'union', options: [node, constNode(v)] });

/**
 * What an adapter's `mappings` and `defaults` make of a property list (the
 * input adapter and the output adapter apply them the same way): a mapped
 * field may also hold each mapped-to value (an enum keeps only the values it
 * ends up with); a defaulted field is required afterwards and may hold the
 * default.
 */
export function withMappingsAndDefaults(
  props: readonly PropertyDef[],
  mappings: readonly (readonly [string, readonly (readonly [JsonPrimitive, JsonPrimitive])[]])[],
  defaults: readonly (readonly [string, JsonValue])[],
): PropertyDef[] {
  let out = [...props];
  for (const [field, pairs] of mappings) {
    out = out.map((p) => {
      if (p.name !== field) return p;
      if (p.node.kind === 'enum') {
        const values = p.node.values.map((v) => pairs.find(([f]) => f === v)?.[1] ?? v);
        return { ...p, node: { kind: 'enum', values: [...new Set(values)] } };
      }
      return { ...p, node: pairs.reduce<SchemaNode>((n, [, to]) => orConst(n, to), p.node) };
    });
  }
  for (const [field, value] of defaults) {
    const existing = out.find((p) => p.name === field);
    out = existing === undefined
      ? [...out, { name: field, node: constNode(value), presence: 'required', default: undefined, description: undefined }]
      : out.map((p) => (p.name === field ? { ...p, presence: 'required', node: p.presence === 'required' ? p.node : orConst(p.node, value) } : p));
  }
  return out;
}
