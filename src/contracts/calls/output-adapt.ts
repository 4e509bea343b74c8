/**
 * Output contracts across a revision link: can a result of the newer revision
 * be given to a consumer that planned against the older one? Either the new
 * output schema is contained in the old one (unchanged or additive), or the
 * newer revision declares an output adapter (`previous.output`) that provably
 * carries every new result into the old schema — the same containment proof
 * as the input adapter (schema-within.ts), run on the adapted new schema.
 * Otherwise the link is broken for old readers, and the daemon refuses, before
 * any effect, every old plan that would cross it (contract.ts).
 *
 * The adapter itself is declarative and deterministic (unwrap, renames,
 * mappings, defaults, wrap; top-level only): the same result always gives the
 * same value or the same field-level problem. It never overwrites a value and
 * never drops one silently: an unwrap that leaves fields out names them in its
 * step. One home for both the proof (release gate, call-time refusal) and the
 * transformation (result shaping), so the two cannot disagree.
 */
import { clipLabel } from '../../rules/clip.js';
import { harmlessOutputReason, outputAddReason, outputBreakReason, type ChangeReason } from '../change-vocabulary.js';
import { findProperty, withMappingsAndDefaults, type PropertyDef, type SchemaNode } from '../schema/schema-node.js';
import { within } from '../schema/schema-within.js';
import { isAdapter, type JsonObject, type OutputAdapter, type PreviousPolicy, type Revision } from '../types.js';

/** What a link does to old readers of results. */
export interface OutputLink {
  /** compatible: new results are valid old results; adapted: the declared adapter carries them; broken: neither. */
  readonly verdict: 'compatible' | 'adapted' | 'broken';
  /** What an unadapted new result breaks for old readers. */
  readonly breaks: readonly ChangeReason[];
  /** What new results say in addition (harmless for old readers). */
  readonly additions: readonly ChangeReason[];
  /** The declared output adapter, if any. */
  readonly adapter: OutputAdapter | undefined;
  /** Why the declared adapter does not carry every new result (empty when it does). */
  readonly gaps: readonly ChangeReason[];
}

/** The link between two consecutive revisions, as the runtime walks it. */
export interface OutputHop {
  readonly from: Revision;
  readonly to: Revision;
  readonly policy: PreviousPolicy | undefined;
}

export function outputAdapterOf(policy: PreviousPolicy | undefined): OutputAdapter | undefined {
  return isAdapter(policy) ? policy.output : undefined;
}

const gap = (text: string): ChangeReason => ({ code: 'output_adapter_gap', text: `output adapter does not cover: ${text}` });
const hasTopLevelSteps = (a: OutputAdapter): boolean => a.renames.length > 0 || a.mappings.length > 0 || a.defaults.length > 0;

/** What new results look like after the adapter, and what it cannot account for. */
export function adaptedOutputNode(newOut: SchemaNode, a: OutputAdapter): { node: SchemaNode; gaps: ChangeReason[] } {
  const gaps: ChangeReason[] = [];
  let node = newOut;
  if (a.unwrap !== undefined) {
    const u = a.unwrap;
    const inner = node.kind === 'object' ? findProperty(node, u) : undefined;
    if (node.kind !== 'object' || inner === undefined) return { node, gaps: [gap(`unwrap ${u}: the new result has no field ${u}`)] };
    if (inner.presence !== 'required') gaps.push(gap(`unwrap ${u}: ${u} may be absent`));
    const others = node.properties.filter((p) => p.name !== u).map((p) => p.name);
    if (others.length > 0) gaps.push(gap(`unwrap ${u} would leave out declared fields ${others.join(', ')}`));
    node = inner.node;
  }
  if (hasTopLevelSteps(a)) {
    if (node.kind !== 'object') return { node, gaps: [...gaps, gap('renames, mappings and defaults need an object result')] };
    let props: PropertyDef[] = [...node.properties];
    for (const [from, to] of a.renames) {
      if (findProperty({ ...node, properties: props }, to) !== undefined) gaps.push(gap(`rename ${from} → ${to}: the new result already declares ${to}`));
      props = props.map((p) => (p.name === from ? { ...p, name: to } : p));
    }
    props = withMappingsAndDefaults(props, a.mappings, a.defaults);
    node = { ...(node), properties: props };
  }
  if (a.wrap !== undefined) {
    node = { kind: 'object', additional: { kind: 'none' }, properties: [{ name: a.wrap, node, presence: 'required', default: undefined, description: undefined }] };
  }
  return { node, gaps };
}

export function describeOutputAdapter(a: OutputAdapter): ChangeReason {
  const parts = [
    ...(a.unwrap === undefined ? [] : [`unwrap ${a.unwrap}`]),
    ...a.renames.map(([x, y]) => `rename ${x} → ${y}`),
    ...a.mappings.map(([f, pairs]) => `map ${f} ${pairs.map(([x, y]) => `${JSON.stringify(x)}→${JSON.stringify(y)}`).join(', ')}`),
    ...a.defaults.map(([f, v]) => `default ${f} = ${JSON.stringify(v)}`),
    ...(a.wrap === undefined ? [] : [`wrap in ${a.wrap}`]),
  ];
  return { code: 'output_adapter', text: `output adapter: ${parts.length === 0 ? 'no transformation' : parts.join('; ')}` };
}

function computeLink(from: Revision, to: Revision): OutputLink {
  const adapter = outputAdapterOf(to.previous);
  if (from.output === undefined) {
    const additions = to.output === undefined ? [] : [{ code: 'output_schema_added', text: 'an output schema was declared' }];
    return { verdict: 'compatible', breaks: [], additions, adapter, gaps: [] };
  }
  if (to.output === undefined) {
    return { verdict: 'broken', breaks: [{ code: 'output_schema_removed', text: 'the output schema was removed' }], additions: [], adapter, gaps: [] };
  }
  const diffs = within(to.output.node, from.output.node);
  const harmless = diffs.map(harmlessOutputReason);
  const breaks = diffs.filter((_, i) => harmless[i] === undefined).map(outputBreakReason);
  const additions = [
    ...harmless.filter((r) => r !== undefined),
    ...within(from.output.node, to.output.node).filter((d) => d.code !== 'enum_value').map(outputAddReason),
  ];
  if (adapter === undefined) return { verdict: breaks.length === 0 ? 'compatible' : 'broken', breaks, additions, adapter, gaps: [] };
  const adapted = adaptedOutputNode(to.output.node, adapter);
  const gaps = [
    ...adapted.gaps,
    ...within(adapted.node, from.output.node).filter((d) => harmlessOutputReason(d) === undefined).map((d) => gap(outputBreakReason(d).text)),
  ];
  return { verdict: gaps.length === 0 ? 'adapted' : 'broken', breaks, additions, adapter, gaps };
}

const memo = new WeakMap<Revision, WeakMap<Revision, OutputLink>>();

/** The output side of the link from → to (memoized: revisions are immutable). */
export function outputLink(from: Revision, to: Revision): OutputLink {
  let byFrom = memo.get(to);
  if (byFrom === undefined) memo.set(to, (byFrom = new WeakMap()));
  let link = byFrom.get(from);
  if (link === undefined) byFrom.set(from, (link = computeLink(from, to)));
  return link;
}

// ---- the transformation, applied to one result ----

export type OutputStep =
  | { readonly ok: true; readonly value: unknown; readonly applied: readonly string[] }
  | { readonly ok: false; readonly field: string; readonly problem: string; readonly applied: readonly string[] };

const isPlainObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

function copyOf(v: JsonObject): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) setOwn(out, k, x);
  return out;
}

const MAX_NAMED = 10;
/** Field names of a result, as a short list (they come from the target: clipped, and at most ten named). */
const namesOf = (keys: readonly string[]): string =>
  keys.slice(0, MAX_NAMED).map((k) => clipLabel(k, 64)).join(', ') + (keys.length > MAX_NAMED ? ` and ${keys.length - MAX_NAMED} more` : '');

/** Applies one output adapter to one result (a value of the newer revision). */
export function applyOutputAdapter(a: OutputAdapter, result: unknown): OutputStep {
  const applied: string[] = [];
  /** Fields are named as they are in the result the adapter received (inside what it unwrapped). */
  let at = '';
  const fail = (field: string, problem: string): OutputStep => ({ ok: false, field: at === '' ? field : field === '(result)' ? at : `${at}.${field}`, problem, applied });
  let value: unknown = result;
  if (a.unwrap !== undefined) {
    const u = a.unwrap;
    if (!isPlainObject(value)) return fail('(result)', `must be an object with field ${u} to unwrap`);
    if (!Object.hasOwn(value, u)) return fail(u, 'is required (to unwrap)');
    const left = Object.keys(value).filter((k) => k !== u);
    applied.push(`unwrapped ${u}${left.length === 0 ? '' : ` (left out: ${namesOf(left)})`}`);
    value = value[u];
    at = u;
  }
  if (hasTopLevelSteps(a)) {
    if (!isPlainObject(value)) return fail('(result)', 'must be an object');
    const out = copyOf(value);
    for (const [from, to] of a.renames) {
      if (!Object.hasOwn(out, from)) continue;
      if (Object.hasOwn(out, to)) return fail(to, `is already in the result; renaming ${from} → ${to} would replace it`);
      setOwn(out, to, out[from]);
      delete out[from];
      applied.push(`renamed ${from} → ${to}`);
    }
    for (const [field, pairs] of a.mappings) {
      if (!Object.hasOwn(out, field)) continue;
      const hit = pairs.find(([from]) => from === out[field]);
      if (hit === undefined) continue;
      setOwn(out, field, hit[1]);
      applied.push(`mapped ${field} ${JSON.stringify(hit[0])} → ${JSON.stringify(hit[1])}`);
    }
    for (const [field, v] of a.defaults) {
      if (Object.hasOwn(out, field)) continue;
      setOwn(out, field, structuredClone(v));
      applied.push(`defaulted ${field} = ${JSON.stringify(v)}`);
    }
    value = out;
  }
  if (a.wrap !== undefined) {
    const wrapped: Record<string, unknown> = {};
    setOwn(wrapped, a.wrap, value);
    value = wrapped;
    applied.push(`wrapped in ${a.wrap}`);
  }
  return { ok: true, value, applied };
}

/**
 * Carries a result of the last hop's `to` back to the first hop's `from`,
 * applying each hop's output adapter newest first. Hops without one pass the
 * value on unchanged (their output is compatible, or the call was refused
 * before its effect). Steps are prefixed with their link: `r2→r1: renamed …`.
 */
export function carryResultBack(hops: readonly OutputHop[], result: unknown): OutputStep {
  let value = result;
  const applied: string[] = [];
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i] as OutputHop;
    const a = outputAdapterOf(hop.policy);
    if (a === undefined) continue;
    const step = applyOutputAdapter(a, value);
    const label = `r${hop.to.revision}→r${hop.from.revision}`;
    applied.push(...step.applied.map((s) => `${label}: ${s}`));
    if (!step.ok) return { ok: false, field: step.field, problem: `${step.problem} (output adapter ${label})`, applied };
    value = step.value;
  }
  return { ok: true, value, applied };
}
