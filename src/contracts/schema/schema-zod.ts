/**
 * Turns a `SchemaNode` into the two forms callers need: a zod validator and the
 * normalized JSON Schema advertised to agents. Both are derived from the same
 * node, so what the agent is told and what the executor enforces cannot drift.
 * Input objects are strict (unknown keys are errors, never stripped); every
 * input string must be well-formed Unicode so it can be sent byte-exact.
 */
import { z } from 'zod';
import { canonicalJson, isWellFormedText } from '../../rules/canonical.js';
import type { DocPath, IssueSink } from '../issues.js';
import { SchemaLimits, type SchemaNode } from './schema-node.js';
import type { JsonObject, JsonValue } from './json.js';

/** A JSON Schema input or output, in three forms that always agree. */
export interface CompiledSchema {
  /** The bounded intermediate form used for validation and comparison. */
  readonly node: SchemaNode;
  /** The normalized JSON Schema (explicit bounds, additionalProperties: false), as advertised over MCP. */
  readonly json: JsonObject;
  readonly zod: z.ZodType;
}

const RESERVED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

function jsonDepthAndSize(value: unknown, maxDepth: number): { depth: number; ok: boolean } {
  let worst = 0;
  const walk = (v: unknown, d: number): boolean => {
    worst = Math.max(worst, d);
    if (d > maxDepth) return false;
    if (Array.isArray(v)) return v.every((x) => walk(x, d + 1));
    if (typeof v === 'object' && v !== null) {
      return Object.entries(v).every(([k, x]) => !RESERVED_KEYS.has(k) && walk(x, d + 1));
    }
    return true;
  };
  const ok = walk(value, 0);
  return { depth: worst, ok };
}

function uniqueCheck(items: readonly unknown[]): boolean {
  const seen = new Set<string>();
  for (const it of items) {
    const key = canonicalJson(it);
    if (seen.has(key)) return false;
    seen.add(key);
  }
  return true;
}

function stringZod(node: Extract<SchemaNode, { kind: 'string' }>): z.ZodType {
  let s: z.ZodString | z.ZodStringFormat;
  switch (node.format) {
    case 'date':
      s = z.iso.date();
      break;
    case 'date-time':
      s = z.iso.datetime({ offset: true });
      break;
    case 'uuid':
      s = z.uuid();
      break;
    case 'email':
      s = z.email();
      break;
    case undefined:
      s = z.string();
  }
  if (node.minLength > 0) s = s.min(node.minLength);
  if (node.maxLength !== undefined) s = s.max(node.maxLength);
  if (node.pattern !== undefined) s = s.regex(new RegExp(node.pattern, 'u'));
  return s.refine(isWellFormedText, { message: 'must be well-formed Unicode text (no lone surrogates)' });
}

function numberZod(node: Extract<SchemaNode, { kind: 'integer' | 'number' }>): z.ZodType {
  let n = node.kind === 'integer' ? z.int() : z.number();
  if (node.minimum !== undefined) n = n.gte(node.minimum);
  if (node.maximum !== undefined) n = n.lte(node.maximum);
  if (node.exclusiveMinimum !== undefined) n = n.gt(node.exclusiveMinimum);
  if (node.exclusiveMaximum !== undefined) n = n.lt(node.exclusiveMaximum);
  if (node.multipleOf !== undefined) n = n.multipleOf(node.multipleOf);
  return n;
}

/** The validator for a node. Defaults of optional properties are applied by the parse. */
export function zodOf(node: SchemaNode): z.ZodType {
  switch (node.kind) {
    case 'string':
      return stringZod(node);
    case 'integer':
    case 'number':
      return numberZod(node);
    case 'boolean':
      return z.boolean();
    case 'null':
      return z.null();
    case 'enum': {
      const values = node.values;
      const shown = values.slice(0, 10).map((v) => JSON.stringify(v)).join(', ') + (values.length > 10 ? ', …' : '');
      return z.unknown().refine((v) => values.some((x) => x === v), { message: `must be one of ${shown}` });
    }
    case 'array': {
      let a = z.array(zodOf(node.items)).min(node.minItems);
      if (node.maxItems !== undefined) a = a.max(node.maxItems);
      return node.uniqueItems === 'required' ? a.refine(uniqueCheck, { message: 'items must be unique' }) : a;
    }
    case 'object': {
      const shape: Record<string, z.ZodType> = {};
      for (const p of node.properties) {
        const inner = zodOf(p.node);
        const dflt = p.default;
        shape[p.name] =
          p.presence === 'required' ? inner
            : dflt === undefined ? inner.optional()
              : inner.optional().transform((v: unknown) => (v === undefined ? (structuredClone(dflt) as unknown) : v));
      }
      const add = node.additional;
      switch (add.kind) {
        case 'none':
          return z.strictObject(shape);
        case 'open':
          return z.looseObject(shape);
        case 'map':
          return z
            .object(shape)
            .catchall(zodOf(add.node))
            .superRefine((obj, ctx) => {
              const extra = Object.keys(obj).filter((k) => !Object.hasOwn(shape, k));
              if (Object.keys(obj).length > add.maxProperties) ctx.addIssue({ code: 'custom', message: `at most ${add.maxProperties} keys are allowed` });
              for (const k of extra) {
                if (k.length > SchemaLimits.maxRecordKeyLength || RESERVED_KEYS.has(k) || !isWellFormedText(k)) {
                  ctx.addIssue({ code: 'custom', message: `key ${JSON.stringify(k.slice(0, 40))} is not allowed`, path: [k] });
                }
              }
            });
      }
      break;
    }
    case 'union': {
      const opts = node.options.map(zodOf);
      return opts.length === 1 ? (opts[0] as z.ZodType) : z.union(opts as [z.ZodType, z.ZodType, ...z.ZodType[]]);
    }
    case 'json':
      return z.unknown().superRefine((v, ctx) => {
        const { ok } = jsonDepthAndSize(v, node.maxDepth);
        if (!ok) {
          ctx.addIssue({ code: 'custom', message: `must be JSON nested at most ${node.maxDepth} levels, without reserved keys` });
          return;
        }
        let text: string;
        try {
          text = canonicalJson(v);
        } catch {
          ctx.addIssue({ code: 'custom', message: 'must be plain JSON' });
          return;
        }
        if (Buffer.byteLength(text) > node.maxBytes) ctx.addIssue({ code: 'custom', message: `must be at most ${node.maxBytes} bytes of JSON` });
      });
  }
}

/** The normalized JSON Schema of a node: every bound explicit, objects closed. */
function jsonSchemaOf(node: SchemaNode): JsonObject {
  switch (node.kind) {
    case 'string': {
      const out: Record<string, JsonValue> = { type: 'string' };
      if (node.minLength > 0) out['minLength'] = node.minLength;
      if (node.maxLength !== undefined) out['maxLength'] = node.maxLength;
      if (node.pattern !== undefined) out['pattern'] = node.pattern;
      if (node.format !== undefined) out['format'] = node.format;
      if (node.leadingDash === 'allowed') out['x-postern-allow-dash'] = true;
      return out;
    }
    case 'integer':
    case 'number': {
      const out: Record<string, JsonValue> = { type: node.kind };
      for (const k of ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'] as const) {
        const v = node[k];
        if (v !== undefined) out[k] = v;
      }
      if (node.leadingDash === 'allowed') out['x-postern-allow-dash'] = true;
      return out;
    }
    case 'boolean':
    case 'null':
      return { type: node.kind };
    case 'enum':
      return { enum: [...node.values] };
    case 'array': {
      const out: Record<string, JsonValue> = { type: 'array', items: jsonSchemaOf(node.items) };
      if (node.minItems > 0) out['minItems'] = node.minItems;
      if (node.maxItems !== undefined) out['maxItems'] = node.maxItems;
      if (node.uniqueItems === 'required') out['uniqueItems'] = true;
      return out;
    }
    case 'object': {
      const props: Record<string, JsonValue> = {};
      for (const p of node.properties) {
        const s: Record<string, JsonValue> = { ...jsonSchemaOf(p.node) };
        if (p.description !== undefined) s['description'] = p.description;
        if (p.default !== undefined) s['default'] = p.default;
        props[p.name] = s;
      }
      const out: Record<string, JsonValue> = { type: 'object', properties: props };
      const required = node.properties.filter((p) => p.presence === 'required').map((p) => p.name);
      if (required.length > 0) out['required'] = required;
      const add = node.additional;
      if (add.kind === 'none') out['additionalProperties'] = false;
      if (add.kind === 'map') {
        out['additionalProperties'] = jsonSchemaOf(add.node);
        out['maxProperties'] = add.maxProperties;
      }
      return out;
    }
    case 'union':
      return { anyOf: node.options.map(jsonSchemaOf) };
    case 'json':
      return { description: `any JSON value (at most ${node.maxDepth} levels, ${node.maxBytes} bytes)` };
  }
}

/** Checks every property default against its own schema, reporting at `…properties.<name>.default`. */
export function checkDefaults(node: SchemaNode, path: DocPath, sink: IssueSink): void {
  if (node.kind === 'array') checkDefaults(node.items, [...path, 'items'], sink);
  if (node.kind === 'union') node.options.forEach((o, i) => checkDefaults(o, [...path, 'anyOf', i], sink));
  if (node.kind !== 'object') return;
  for (const p of node.properties) {
    const at = [...path, 'properties', p.name];
    checkDefaults(p.node, at, sink);
    if (p.default !== undefined && !zodOf(p.node).safeParse(p.default).success) {
      sink.add([...at, 'default'], 'the default does not satisfy the property schema');
    }
  }
}

export function compileSchema(node: SchemaNode): CompiledSchema {
  return { node, json: jsonSchemaOf(node), zod: zodOf(node) };
}
