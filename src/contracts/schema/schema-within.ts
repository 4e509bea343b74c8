/**
 * Schema containment: why a value valid under `inner` might be refused by
 * `outer`. An empty answer means every inner-valid value is outer-valid
 * (provably, by structure); anything unprovable is reported, never assumed
 * (fail closed: a changed regex is "pattern changed" even if it happens to be
 * wider). Inputs compare old ⊆ new ("can old calls still pass?"); outputs
 * compare new ⊆ old ("can old consumers still read the result?"). Differences
 * come back as neutral codes with the inner and outer values; classify.ts
 * words them for the direction at hand.
 */
import type { ObjectNode, SchemaNode } from './schema-node.js';
import { zodOf } from './schema-zod.js';

export const DiffCodes = [
  'type', 'required', 'required_unknown', 'undeclared', 'extra_field', 'renamed', 'enum_value', 'enum_restricted', 'pattern', 'format',
  'max_length', 'min_length', 'range', 'multiple_of', 'max_items', 'min_items', 'unique_items', 'additional', 'max_properties',
  'leading_dash', 'json_limits',
] as const;
export type DiffCode = (typeof DiffCodes)[number];

export interface SchemaDiff {
  readonly code: DiffCode;
  /** Field path in the arguments or result: `region`, `tags[]`, `issue.id`. */
  readonly path: string;
  /** The inner (e.g. old input) side, as text. */
  readonly inner: string;
  /** The outer (e.g. new input) side, as text. */
  readonly outer: string;
}

const kindName = (n: SchemaNode): string => (n.kind === 'enum' ? `enum ${JSON.stringify(n.values)}` : n.kind);
const join = (path: string, name: string): string => (path === '' ? name : `${path}.${name}`);
const show = (v: unknown): string => (v === undefined ? 'none' : typeof v === 'string' ? v : JSON.stringify(v));

type Bound = { readonly v: number; readonly strict: boolean } | undefined;

function bound(inclusive: number | undefined, exclusive: number | undefined): Bound {
  if (exclusive !== undefined && (inclusive === undefined || exclusive >= inclusive)) return { v: exclusive, strict: true };
  return inclusive === undefined ? undefined : { v: inclusive, strict: false };
}

/** Every value above `inner` is also above `outer`. */
function boundWithin(inner: Bound, outer: Bound): boolean {
  if (outer === undefined) return true;
  if (inner === undefined) return false;
  return inner.v > outer.v || (inner.v === outer.v && (inner.strict || !outer.strict));
}

const neg = (x: number | undefined): number | undefined => (x === undefined ? undefined : -x);

function numberDiffs(i: Extract<SchemaNode, { kind: 'integer' | 'number' }>, o: Extract<SchemaNode, { kind: 'integer' | 'number' }>, path: string): SchemaDiff[] {
  const out: SchemaDiff[] = [];
  if (i.kind === 'number' && o.kind === 'integer') out.push({ code: 'type', path, inner: 'number', outer: 'integer' });
  const lo = boundWithin(bound(i.minimum, i.exclusiveMinimum), bound(o.minimum, o.exclusiveMinimum));
  const hi = boundWithin(bound(neg(i.maximum), neg(i.exclusiveMaximum)), bound(neg(o.maximum), neg(o.exclusiveMaximum)));
  if (!lo || !hi) {
    const range = (n: typeof i): string => `[${show(n.minimum ?? n.exclusiveMinimum)}, ${show(n.maximum ?? n.exclusiveMaximum)}]`;
    out.push({ code: 'range', path, inner: range(i), outer: range(o) });
  }
  if (o.multipleOf !== undefined && (i.multipleOf === undefined || !Number.isInteger(i.multipleOf / o.multipleOf))) {
    out.push({ code: 'multiple_of', path, inner: show(i.multipleOf), outer: show(o.multipleOf) });
  }
  if (i.leadingDash === 'allowed' && o.leadingDash === 'refused') out.push({ code: 'leading_dash', path, inner: 'allowed', outer: 'refused' });
  return out;
}

function objectDiffs(i: ObjectNode, o: ObjectNode, path: string): SchemaDiff[] {
  const out: SchemaDiff[] = [];
  const innerOnly: string[] = [];
  const outerOnly: string[] = [];
  for (const op of o.properties) {
    const ip = i.properties.find((p) => p.name === op.name);
    const at = join(path, op.name);
    if (ip === undefined) {
      if (i.additional.kind === 'map') out.push(...within(i.additional.node, op.node, at));
      outerOnly.push(op.name);
      if (op.presence === 'required') out.push({ code: 'required_unknown', path: at, inner: 'absent', outer: 'required' });
      else if (i.additional.kind === 'open') out.push({ code: 'undeclared', path: at, inner: 'any', outer: kindName(op.node) });
      continue;
    }
    if (op.presence === 'required' && ip.presence !== 'required') out.push({ code: 'required', path: at, inner: 'optional', outer: 'required' });
    out.push(...within(ip.node, op.node, at));
  }
  for (const ip of i.properties) {
    if (o.properties.some((p) => p.name === ip.name)) continue;
    innerOnly.push(ip.name);
    const at = join(path, ip.name);
    if (o.additional.kind === 'none') out.push({ code: 'extra_field', path: at, inner: ip.presence, outer: 'absent' });
    if (o.additional.kind === 'map') out.push(...within(ip.node, o.additional.node, at));
  }
  // A field that disappeared on one side and appeared on the other with a compatible schema reads as a rename.
  for (const gone of innerOnly) {
    const ip = i.properties.find((p) => p.name === gone);
    const match = outerOnly.find((n) => {
      const op = o.properties.find((p) => p.name === n);
      return ip !== undefined && op !== undefined && within(ip.node, op.node, '').length === 0;
    });
    if (match === undefined) continue;
    outerOnly.splice(outerOnly.indexOf(match), 1);
    const drop = new Set([join(path, gone), join(path, match)]);
    for (let k = out.length - 1; k >= 0; k--) {
      const d = out[k] as SchemaDiff;
      if ((d.code === 'extra_field' || d.code === 'required_unknown' || d.code === 'undeclared') && drop.has(d.path)) out.splice(k, 1);
    }
    out.push({ code: 'renamed', path: join(path, gone), inner: gone, outer: match });
  }
  const ia = i.additional;
  const oa = o.additional;
  if (ia.kind === 'open' && oa.kind !== 'open') out.push({ code: 'additional', path: path || '(root)', inner: 'any extra keys', outer: oa.kind === 'none' ? 'no extra keys' : 'bounded extra keys' });
  if (ia.kind === 'map' && oa.kind === 'none') out.push({ code: 'additional', path: path || '(root)', inner: 'extra keys allowed', outer: 'no extra keys' });
  if (ia.kind === 'map' && oa.kind === 'map') {
    out.push(...within(ia.node, oa.node, join(path, '*')));
    if (oa.maxProperties < ia.maxProperties) out.push({ code: 'max_properties', path: path || '(root)', inner: String(ia.maxProperties), outer: String(oa.maxProperties) });
  }
  return out;
}

/** Reasons an inner-valid value may be refused by outer; empty when provably contained. */
export function within(inner: SchemaNode, outer: SchemaNode, path = ''): SchemaDiff[] {
  if (outer.kind === 'union') {
    if (inner.kind === 'union') return inner.options.flatMap((opt) => within(opt, outer, path));
    const fits = outer.options.map((opt) => within(inner, opt, path));
    if (fits.some((d) => d.length === 0)) return [];
    return fits.find((d, k) => outer.options[k]?.kind === inner.kind) ?? [{ code: 'type', path, inner: kindName(inner), outer: 'anyOf' }];
  }
  if (inner.kind === 'union') return inner.options.flatMap((opt) => within(opt, outer, path));
  if (inner.kind === 'enum') {
    if (outer.kind === 'enum') {
      return inner.values.filter((v) => !outer.values.includes(v)).map((v) => ({ code: 'enum_value' as const, path, inner: show(v), outer: show(outer.values) }));
    }
    const z = zodOf(outer);
    return inner.values.filter((v) => !z.safeParse(v).success).map((v) => ({ code: 'enum_value' as const, path, inner: show(v), outer: kindName(outer) }));
  }
  if (outer.kind === 'enum') return [{ code: 'enum_restricted', path, inner: kindName(inner), outer: show(outer.values) }];
  const numeric = (k: string): boolean => k === 'integer' || k === 'number';
  if (inner.kind !== outer.kind && !(numeric(inner.kind) && numeric(outer.kind))) {
    return [{ code: 'type', path, inner: kindName(inner), outer: kindName(outer) }];
  }
  switch (inner.kind) {
    case 'string': {
      const o = outer as typeof inner;
      const out: SchemaDiff[] = [];
      if (o.minLength > inner.minLength) out.push({ code: 'min_length', path, inner: String(inner.minLength), outer: String(o.minLength) });
      if (o.maxLength !== undefined && (inner.maxLength === undefined || inner.maxLength > o.maxLength)) out.push({ code: 'max_length', path, inner: show(inner.maxLength), outer: String(o.maxLength) });
      if (o.pattern !== undefined && o.pattern !== inner.pattern) out.push({ code: 'pattern', path, inner: show(inner.pattern), outer: o.pattern });
      if (o.format !== undefined && o.format !== inner.format) out.push({ code: 'format', path, inner: show(inner.format), outer: o.format });
      if (inner.leadingDash === 'allowed' && o.leadingDash === 'refused') out.push({ code: 'leading_dash', path, inner: 'allowed', outer: 'refused' });
      return out;
    }
    case 'integer':
    case 'number':
      return numberDiffs(inner, outer as typeof inner, path);
    case 'boolean':
    case 'null':
      return [];
    case 'array': {
      const o = outer as typeof inner;
      const out = within(inner.items, o.items, `${path}[]`);
      if (o.minItems > inner.minItems) out.push({ code: 'min_items', path, inner: String(inner.minItems), outer: String(o.minItems) });
      if (o.maxItems !== undefined && (inner.maxItems === undefined || inner.maxItems > o.maxItems)) out.push({ code: 'max_items', path, inner: show(inner.maxItems), outer: String(o.maxItems) });
      if (o.uniqueItems === 'required' && inner.uniqueItems !== 'required') out.push({ code: 'unique_items', path, inner: 'duplicates allowed', outer: 'unique' });
      return out;
    }
    case 'object':
      return objectDiffs(inner, outer as ObjectNode, path);
    case 'json': {
      const o = outer as typeof inner;
      return o.maxDepth < inner.maxDepth || o.maxBytes < inner.maxBytes ? [{ code: 'json_limits', path, inner: `${inner.maxDepth}/${inner.maxBytes}`, outer: `${o.maxDepth}/${o.maxBytes}` }] : [];
    }
  }
}
