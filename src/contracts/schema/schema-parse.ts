/**
 * Reads a JSON Schema written in the catalog into the bounded `SchemaNode`
 * tree, reporting every unsupported or unbounded feature at its path. Unknown
 * keywords are refused (a typo such as `maxlength` would otherwise leave a
 * string unbounded). In input mode missing bounds get the documented defaults
 * and objects are closed; in output mode nothing is invented.
 */
import type { DocPath, IssueSink } from '../issues.js';
import {
  SchemaLimits,
  StringFormats,
  type Additional,
  type PropertyDef,
  type SchemaNode,
  type StringFormat,
} from './schema-node.js';
import type { JsonPrimitive, JsonValue } from './json.js';

type SchemaMode = 'input' | 'output';

const ANNOTATIONS = new Set(['title', 'description', 'examples', '$comment', '$schema', 'default']);
const TYPE_KEYWORDS: Readonly<Record<string, readonly string[]>> = {
  string: ['minLength', 'maxLength', 'pattern', 'format', 'x-postern-allow-dash'],
  integer: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'x-postern-allow-dash'],
  number: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'x-postern-allow-dash'],
  boolean: [],
  null: [],
  array: ['items', 'minItems', 'maxItems', 'uniqueItems'],
  object: ['properties', 'required', 'additionalProperties', 'maxProperties'],
};
const REFUSED: Readonly<Record<string, string>> = {
  $ref: 'references are not supported; write the schema inline',
  $defs: 'definitions are not supported; write the schema inline',
  definitions: 'definitions are not supported; write the schema inline',
  allOf: 'allOf cannot be bounded or compared; merge the schemas',
  oneOf: 'oneOf is not supported; use anyOf or enum',
  not: 'not is not supported',
  if: 'conditional schemas are not supported',
  then: 'conditional schemas are not supported',
  else: 'conditional schemas are not supported',
  patternProperties: 'patternProperties is not supported; declare the properties',
  propertyNames: 'propertyNames is not supported',
  dependentRequired: 'dependentRequired is not supported',
  dependentSchemas: 'dependentSchemas is not supported',
  dependencies: 'dependencies is not supported',
  unevaluatedProperties: 'unevaluatedProperties is not supported',
  unevaluatedItems: 'unevaluatedItems is not supported',
  prefixItems: 'tuples are not supported',
  additionalItems: 'tuples are not supported',
  contains: 'contains is not supported',
  minProperties: 'minProperties is not supported; use required',
};

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNonNegInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isPrimitive = (v: unknown): v is JsonPrimitive =>
  v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));

class Reader {
  constructor(
    private readonly sink: IssueSink,
    private readonly mode: SchemaMode,
  ) {}

  private bad(path: DocPath, message: string): undefined {
    this.sink.add(path, message);
    return undefined;
  }

  private bound(s: Obj, key: string, path: DocPath, dflt: number | undefined, max: number): number | undefined {
    const v = s[key];
    if (v === undefined) return this.mode === 'input' ? dflt : undefined;
    if (!isNonNegInt(v)) return this.bad([...path, key], 'must be a non-negative integer');
    if (v > max) return this.bad([...path, key], `must be at most ${max}`);
    return v;
  }

  private finite(s: Obj, key: string, path: DocPath): number | undefined {
    const v = s[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v)) return this.bad([...path, key], 'must be a number');
    return v;
  }

  private dash(s: Obj, path: DocPath): 'allowed' | 'refused' {
    const v = s['x-postern-allow-dash'];
    if (v === undefined || v === false) return 'refused';
    if (v === true) return 'allowed';
    this.bad([...path, 'x-postern-allow-dash'], 'must be true or false');
    return 'refused';
  }

  read(raw: unknown, path: DocPath, depth: number): SchemaNode | undefined {
    if (!isObj(raw)) return this.bad(path, 'must be a JSON Schema object');
    if (depth > SchemaLimits.maxDepth) return this.bad(path, `nesting is deeper than ${SchemaLimits.maxDepth} levels`);
    let refusedAny = false;
    for (const key of Object.keys(raw)) {
      const refused = REFUSED[key];
      if (refused !== undefined) this.sink.add([...path, key], refused);
      refusedAny ||= refused !== undefined;
    }
    return refusedAny ? undefined : this.readTyped(raw, path, depth);
  }

  private checkKeys(s: Obj, path: DocPath, allowed: readonly string[]): void {
    for (const key of Object.keys(s)) {
      if (ANNOTATIONS.has(key) || allowed.includes(key) || REFUSED[key] !== undefined) continue;
      const owner = Object.entries(TYPE_KEYWORDS).find(([, ks]) => ks.includes(key));
      this.sink.add([...path, key], owner === undefined ? 'unknown keyword' : `does not apply here (it is a ${owner[0]} keyword)`);
    }
  }

  private readTyped(s: Obj, path: DocPath, depth: number): SchemaNode | undefined {
    if (s['enum'] !== undefined || s['const'] !== undefined) return this.readEnum(s, path);
    if (s['anyOf'] !== undefined) {
      this.checkKeys(s, path, ['anyOf']);
      const opts = s['anyOf'];
      if (!Array.isArray(opts) || opts.length === 0) return this.bad([...path, 'anyOf'], 'must be a non-empty array of schemas');
      const nodes = opts.map((o, i) => this.read(o, [...path, 'anyOf', i], depth));
      return nodes.every((n) => n !== undefined) ? { kind: 'union', options: nodes } : undefined;
    }
    const type = s['type'];
    if (Array.isArray(type)) {
      if (type.length === 0 || !type.every((t) => typeof t === 'string')) return this.bad([...path, 'type'], 'must be a type name or a list of them');
      const all = new Set(type.flatMap((t) => TYPE_KEYWORDS[t] ?? []));
      this.checkKeys(s, path, ['type', ...all]);
      const nodes = type.map((t) => {
        const only = Object.fromEntries(Object.entries(s).filter(([k]) => k === 'type' || (TYPE_KEYWORDS[t] ?? []).includes(k)));
        return this.readOne(t, { ...only, type: t }, path, depth, 'checked');
      });
      return nodes.every((n) => n !== undefined) ? { kind: 'union', options: nodes } : undefined;
    }
    if (typeof type !== 'string') return this.bad(path, 'needs a "type" (or enum, const, anyOf)');
    return this.readOne(type, s, path, depth, 'unchecked');
  }

  private readOne(type: string, s: Obj, path: DocPath, depth: number, keys: 'checked' | 'unchecked'): SchemaNode | undefined {
    const allowed = TYPE_KEYWORDS[type];
    if (allowed === undefined) return this.bad([...path, 'type'], `unknown type "${type}"`);
    if (keys === 'unchecked') this.checkKeys(s, path, ['type', ...allowed]);
    switch (type) {
      case 'string':
        return this.readString(s, path);
      case 'integer':
      case 'number': {
        const multipleOf = this.finite(s, 'multipleOf', path);
        if (multipleOf !== undefined && multipleOf <= 0) this.bad([...path, 'multipleOf'], 'must be greater than 0');
        return {
          kind: type,
          minimum: this.finite(s, 'minimum', path),
          maximum: this.finite(s, 'maximum', path),
          exclusiveMinimum: this.finite(s, 'exclusiveMinimum', path),
          exclusiveMaximum: this.finite(s, 'exclusiveMaximum', path),
          multipleOf,
          leadingDash: this.dash(s, path),
        };
      }
      case 'boolean':
        return { kind: 'boolean' };
      case 'null':
        return { kind: 'null' };
      case 'array':
        return this.readArray(s, path, depth);
      default:
        return this.readObject(s, path, depth);
    }
  }

  private readString(s: Obj, path: DocPath): SchemaNode | undefined {
    const minLength = this.bound(s, 'minLength', path, 0, SchemaLimits.maxMaxLength) ?? 0;
    const maxLength = this.bound(s, 'maxLength', path, SchemaLimits.defaultMaxLength, SchemaLimits.maxMaxLength);
    if (maxLength !== undefined && minLength > maxLength) this.bad([...path, 'minLength'], 'is greater than maxLength');
    const pattern = s['pattern'];
    if (pattern !== undefined) {
      if (typeof pattern !== 'string' || pattern.length > SchemaLimits.maxPatternLength) {
        return this.bad([...path, 'pattern'], `must be a regular expression of at most ${SchemaLimits.maxPatternLength} characters`);
      }
      try {
        new RegExp(pattern, 'u');
      } catch {
        return this.bad([...path, 'pattern'], 'is not a valid regular expression');
      }
    }
    const format = s['format'];
    if (format !== undefined && !(StringFormats as readonly unknown[]).includes(format)) {
      return this.bad([...path, 'format'], `must be one of ${StringFormats.join(', ')}`);
    }
    return { kind: 'string', minLength, maxLength, pattern, format: format as StringFormat | undefined, leadingDash: this.dash(s, path) };
  }

  private readEnum(s: Obj, path: DocPath): SchemaNode | undefined {
    this.checkKeys(s, path, ['enum', 'const', 'type']);
    const values: unknown = s['const'] !== undefined ? [s['const']] : s['enum'];
    const where = [...path, s['const'] !== undefined ? 'const' : 'enum'];
    if (!Array.isArray(values) || values.length === 0) return this.bad(where, 'must be a non-empty list');
    if (values.length > SchemaLimits.maxEnumValues) return this.bad(where, `has more than ${SchemaLimits.maxEnumValues} values`);
    if (!values.every(isPrimitive)) return this.bad(where, 'values must be strings, numbers, booleans or null');
    if (new Set(values.map((v) => JSON.stringify(v))).size !== values.length) return this.bad(where, 'has duplicate values');
    const type = s['type'];
    if (type !== undefined) {
      const ok = (v: JsonPrimitive): boolean =>
        type === 'string' ? typeof v === 'string'
          : type === 'integer' ? Number.isSafeInteger(v)
            : type === 'number' ? typeof v === 'number'
              : type === 'boolean' ? typeof v === 'boolean' : false;
      if (!values.every(ok)) return this.bad([...path, 'type'], 'does not match every enum value');
    }
    return { kind: 'enum', values };
  }

  private readArray(s: Obj, path: DocPath, depth: number): SchemaNode | undefined {
    if (s['items'] === undefined) return this.bad(path, 'an array needs an "items" schema');
    if (Array.isArray(s['items'])) return this.bad([...path, 'items'], 'tuples are not supported; items must be one schema');
    const items = this.read(s['items'], [...path, 'items'], depth + 1);
    const minItems = this.bound(s, 'minItems', path, 0, SchemaLimits.maxMaxItems) ?? 0;
    const maxItems = this.bound(s, 'maxItems', path, SchemaLimits.defaultMaxItems, SchemaLimits.maxMaxItems);
    if (maxItems !== undefined && minItems > maxItems) this.bad([...path, 'minItems'], 'is greater than maxItems');
    const unique = s['uniqueItems'];
    if (unique !== undefined && typeof unique !== 'boolean') this.bad([...path, 'uniqueItems'], 'must be true or false');
    if (items === undefined) return undefined;
    return { kind: 'array', items, minItems, maxItems, uniqueItems: unique === true ? 'required' : 'not_required' };
  }

  private readObject(s: Obj, path: DocPath, depth: number): SchemaNode | undefined {
    const props = s['properties'] ?? {};
    if (!isObj(props)) return this.bad([...path, 'properties'], 'must be a map of schemas');
    const names = Object.keys(props);
    if (names.length > SchemaLimits.maxDeclaredProperties) {
      return this.bad([...path, 'properties'], `declares more than ${SchemaLimits.maxDeclaredProperties} properties`);
    }
    const required = s['required'] ?? [];
    if (!Array.isArray(required) || !required.every((r) => typeof r === 'string')) {
      return this.bad([...path, 'required'], 'must be a list of property names');
    }
    required.forEach((r, i) => {
      if (!Object.hasOwn(props, r)) this.sink.add([...path, 'required', i], `"${r}" is not a declared property`);
    });
    const out: PropertyDef[] = [];
    for (const name of names) {
      const p = [...path, 'properties', name];
      if (name === '__proto__' || name === 'constructor' || name === 'prototype') {
        this.sink.add(p, 'this property name is reserved');
        continue;
      }
      if (this.mode === 'input' && name === 'idempotency_key') {
        this.sink.add(p, 'idempotency_key is added by Postern to every non-read tool; do not declare it');
        continue;
      }
      const raw = props[name];
      const node = this.read(raw, p, depth + 1);
      const dflt = isObj(raw) ? (raw['default'] as JsonValue | undefined) : undefined;
      const presence = required.includes(name) ? 'required' : 'optional';
      if (dflt !== undefined && presence === 'required') this.sink.add([...p, 'default'], 'a required property cannot have a default; make it optional or drop the default');
      const description = isObj(raw) && typeof raw['description'] === 'string' ? raw['description'] : undefined;
      if (node !== undefined) out.push({ name, node, presence, default: dflt, description });
    }
    const additional = this.readAdditional(s, path, depth);
    if (additional === undefined) return undefined;
    return { kind: 'object', properties: out, additional };
  }

  private readAdditional(s: Obj, path: DocPath, depth: number): Additional | undefined {
    const ap = s['additionalProperties'];
    const max = this.bound(s, 'maxProperties', path, SchemaLimits.defaultMaxProperties, SchemaLimits.maxMaxProperties);
    if (ap === false) return { kind: 'none' };
    if (ap === undefined) return this.mode === 'input' ? { kind: 'none' } : { kind: 'open' };
    if (ap === true) {
      if (this.mode === 'output') return { kind: 'open' };
      return this.bad([...path, 'additionalProperties'], 'true is not allowed for inputs; use false or a bounded value schema');
    }
    const node = this.read(ap, [...path, 'additionalProperties'], depth + 1);
    if (node === undefined) return undefined;
    return { kind: 'map', node, maxProperties: max ?? SchemaLimits.defaultMaxProperties };
  }
}

/** Parses a tool's input (object at the top) or output schema; undefined when issues were added. */
export function parseSchema(raw: unknown, path: DocPath, sink: IssueSink, mode: SchemaMode): SchemaNode | undefined {
  const before = sink.count;
  const node = new Reader(sink, mode).read(raw, path, 1);
  if (node !== undefined && mode === 'input' && node.kind !== 'object') {
    sink.add([...path, 'type'], 'an input schema must be an object at the top');
    return undefined;
  }
  return sink.count === before ? node : undefined;
}
