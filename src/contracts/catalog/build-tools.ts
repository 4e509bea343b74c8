/**
 * Builds the catalog's tools: names valid for MCP and outside the reserved
 * `postern_` prefix, revisions strictly increasing, and each `previous` policy
 * checked against the revision it bridges from. An adapt policy is declarative
 * and checked statically: renamed fields exist on both sides, mapped and
 * default values are valid for the schemas they feed; so does its output
 * adapter, against the two output schemas. Replacements named by
 * `retired` must be tools of the same catalog.
 */
import { buildRevision } from './build-revision.js';
import { TOOL_NAME, ToolShape } from './catalog-shape.js';
import type { DocPath, IssueSink } from '../issues.js';
import { findProperty, type ObjectNode, type SchemaNode } from '../schema/schema-node.js';
import { zodOf } from '../schema/schema-zod.js';
import { checkShape, isRecord } from './shape-check.js';
import type { ApprovalMode, Effect, OutputAdapter, PresenceMode, Revision, Target, Tool } from '../types.js';
import { isAdapter } from '../types.js';

/** Names of Postern's built-in tools (`postern_call_status`); no catalog tool may use it. */
export const RESERVED_PREFIX = 'postern_';

function inputOf(r: Revision): ObjectNode | undefined {
  return r.input.node.kind === 'object' ? r.input.node : undefined;
}

function checkAdapter(prev: Revision, next: Revision, at: DocPath, sink: IssueSink): void {
  const policy = next.previous;
  if (!isAdapter(policy)) return;
  if (policy.output !== undefined) checkOutputAdapter(prev, next, policy.output, [...at, 'output'], sink);
  const oldIn = inputOf(prev);
  const newIn = inputOf(next);
  if (oldIn === undefined || newIn === undefined) return;
  const sourceOf = new Map<string, string>();
  for (const [from, to] of policy.renames) {
    const p = [...at, 'renames', from];
    if (findProperty(oldIn, from) === undefined) sink.add(p, `revision ${prev.revision} has no field "${from}" to rename`);
    if (findProperty(newIn, to) === undefined) sink.add(p, `revision ${next.revision} has no field "${to}"`);
    if (from === to) sink.add(p, 'renames a field to itself');
    if (sourceOf.has(to)) sink.add(p, `two fields are renamed to "${to}"`);
    sourceOf.set(to, from);
  }
  for (const [field, pairs] of policy.mappings) {
    const p = [...at, 'mappings', field];
    const target = findProperty(newIn, field);
    const source = findProperty(oldIn, sourceOf.get(field) ?? field);
    if (target === undefined || source === undefined) {
      sink.add(p, `needs field "${field}" in revision ${next.revision} and its source in revision ${prev.revision}`);
      continue;
    }
    const froms = new Set<string>();
    pairs.forEach(([from, to], i) => {
      if (!zodOf(source.node).safeParse(from).success) sink.add([...p, i, 'from'], `${JSON.stringify(from)} is not a valid value in revision ${prev.revision}`);
      if (!zodOf(target.node).safeParse(to).success) sink.add([...p, i, 'to'], `${JSON.stringify(to)} is not a valid value in revision ${next.revision}`);
      if (froms.has(JSON.stringify(from))) sink.add([...p, i, 'from'], 'is mapped twice');
      froms.add(JSON.stringify(from));
    });
  }
  for (const [field, value] of policy.defaults) {
    const p = [...at, 'defaults', field];
    const target = findProperty(newIn, field);
    if (target === undefined) sink.add(p, `revision ${next.revision} has no field "${field}"`);
    else if (!zodOf(target.node).safeParse(value).success) sink.add(p, `${JSON.stringify(value)} is not a valid value for "${field}" in revision ${next.revision}`);
  }
}

/** The object a step works on: the whole result, or the field named by unwrap (new side) / wrap (old side). */
function stepObject(node: SchemaNode | undefined, field: string | undefined): ObjectNode | undefined {
  if (node === undefined) return undefined;
  if (field === undefined) return node.kind === 'object' ? node : undefined;
  const inner = node.kind === 'object' ? findProperty(node, field) : undefined;
  return inner?.node.kind === 'object' ? inner.node : undefined;
}

/**
 * An output adapter names fields that exist: what it unwraps in the newer
 * result, what it renames from there and to in the older one, and mapped and
 * default values valid for the older schema. Whether it carries every result
 * is the release gate's proof (output-adapt.ts), not checked here.
 */
function checkOutputAdapter(prev: Revision, next: Revision, a: OutputAdapter, at: DocPath, sink: IssueSink): void {
  const oldOut = prev.output?.node;
  const newOut = next.output?.node;
  if (oldOut === undefined || newOut === undefined) {
    sink.add(at, `an output adapter needs an output schema on both revision ${prev.revision} and revision ${next.revision}`);
    return;
  }
  if (a.unwrap !== undefined && (newOut.kind !== 'object' || findProperty(newOut, a.unwrap) === undefined)) {
    sink.add([...at, 'unwrap'], `the output of revision ${next.revision} has no field "${a.unwrap}"`);
  }
  if (a.wrap !== undefined && (oldOut.kind !== 'object' || findProperty(oldOut, a.wrap) === undefined)) {
    sink.add([...at, 'wrap'], `the output of revision ${prev.revision} has no field "${a.wrap}"`);
  }
  if (a.renames.length + a.mappings.length + a.defaults.length === 0) return;
  const from = stepObject(newOut, a.unwrap);
  const to = stepObject(oldOut, a.wrap);
  if (from === undefined || to === undefined) {
    sink.add(at, 'renames, mappings and defaults need object results on both sides (after unwrap / before wrap)');
    return;
  }
  const seen = new Set<string>();
  for (const [x, y] of a.renames) {
    const p = [...at, 'renames', x];
    if (findProperty(from, x) === undefined) sink.add(p, `the output of revision ${next.revision} has no field "${x}" to rename`);
    if (findProperty(to, y) === undefined) sink.add(p, `the output of revision ${prev.revision} has no field "${y}"`);
    if (x !== y && findProperty(from, y) !== undefined) sink.add(p, `the output of revision ${next.revision} already has "${y}"; a rename never replaces a field`);
    if (x === y) sink.add(p, 'renames a field to itself');
    if (seen.has(y)) sink.add(p, `two fields are renamed to "${y}"`);
    seen.add(y);
  }
  for (const [field, pairs] of a.mappings) {
    const p = [...at, 'mappings', field];
    const target = findProperty(to, field);
    if (target === undefined) {
      sink.add(p, `the output of revision ${prev.revision} has no field "${field}"`);
      continue;
    }
    pairs.forEach(([, v], i) => {
      if (!zodOf(target.node).safeParse(v).success) sink.add([...p, i, 'to'], `${JSON.stringify(v)} is not a valid value in revision ${prev.revision}`);
    });
  }
  for (const [field, value] of a.defaults) {
    const p = [...at, 'defaults', field];
    const target = findProperty(to, field);
    if (target === undefined) sink.add(p, `the output of revision ${prev.revision} has no field "${field}"`);
    else if (!zodOf(target.node).safeParse(value).success) sink.add(p, `${JSON.stringify(value)} is not a valid value for "${field}" in revision ${prev.revision}`);
  }
}

function buildTool(name: string, raw: unknown, sink: IssueSink, targets: ReadonlyMap<string, Target>): Tool | undefined {
  const at = ['tools', name];
  if (!TOOL_NAME.test(name)) sink.add(at, 'tool names are 1-64 letters, digits, "_", "." or "-"');
  else if (name.toLowerCase().startsWith(RESERVED_PREFIX)) sink.add(at, `the prefix "${RESERVED_PREFIX}" is reserved for Postern's built-in tools`);
  const t = checkShape(ToolShape, raw, at, sink);
  const rawRevisions = t?.revisions ?? (isRecord(raw) && Array.isArray(raw['revisions']) ? (raw['revisions'] as unknown[]) : []);
  const revisions: Revision[] = [];
  let ok = t !== undefined;
  rawRevisions.forEach((rawRev, i) => {
    const rat = [...at, 'revisions', i];
    const r = buildRevision(name, rawRev, rat, sink, targets);
    if (r === undefined) {
      ok = false;
      return;
    }
    const prev = revisions[revisions.length - 1];
    if (prev === undefined) {
      if (i === 0 && r.previous !== undefined) sink.add([...rat, 'previous'], 'the first revision has no previous revision');
      if (i === 0 && r.semanticChange !== undefined) sink.add([...rat, 'semantic_change'], 'the first revision has no previous revision to differ from');
    } else if (r.revision <= prev.revision) {
      sink.add([...rat, 'revision'], `must be greater than the previous revision (${prev.revision})`);
    } else checkAdapter(prev, r, [...rat, 'previous'], sink);
    revisions.push(r);
  });
  const current = revisions[revisions.length - 1];
  revisions.forEach((r, i) => {
    if (r.canary === undefined) return;
    const cat = [...at, 'revisions', i, 'canary'];
    const prev = revisions[i - 1];
    if (r !== current) sink.add(cat, 'only the current revision can be a canary: remove canary from this revision (that promotes it) before adding the next one');
    else if (prev === undefined) sink.add(cat, 'a canary needs a previous revision to show the sessions outside it');
    else if (r.previous?.policy !== 'pin') sink.add(cat, 'a canary needs previous: pin, so that sessions outside it keep running the previous revision');
    else if (prev.retired !== undefined || r.retired !== undefined) sink.add(cat, 'a canary and the revision before it must both be served (not retired)');
  });
  if (!ok || t === undefined || current === undefined) return undefined;
  return { name, description: t.description, effect: t.effect, ...toolApproval(t.approval, t.effect), revisions, current, ...(t.limits === undefined ? {} : { limits: t.limits }), ...(t.agent_users === undefined ? {} : { agentUsers: t.agent_users }) };
}

/**
 * A tool's `approval:` — a mode, or `{ mode, presence? }` — resolved: presence on the approval
 * page is required when declared, and by default for a destructive tool that needs approval;
 * `presence: none` opts out.
 */
export function toolApproval(given: ApprovalMode | { mode: ApprovalMode; presence?: PresenceMode | undefined }, effect: Effect): { approval: ApprovalMode; presence: PresenceMode } {
  const approval = typeof given === 'string' ? given : given.mode;
  const declared = typeof given === 'string' ? undefined : given.presence;
  return { approval, presence: declared ?? (effect === 'destructive' && approval !== 'none' ? 'required' : 'none') };
}

export function buildTools(raw: Record<string, unknown>, sink: IssueSink, targets: ReadonlyMap<string, Target>): Map<string, Tool> {
  const tools = new Map<string, Tool>();
  for (const [name, value] of Object.entries(raw)) {
    const tool = buildTool(name, value, sink, targets);
    if (tool !== undefined) tools.set(name, tool);
  }
  for (const tool of tools.values()) {
    tool.revisions.forEach((r, i) => {
      const announced = r.deprecationReplacement;
      if (announced !== undefined && !tools.has(announced) && !Object.hasOwn(raw, announced)) {
        sink.add(['tools', tool.name, 'revisions', i, 'deprecated', 'replacement'], `names tool "${announced}", which is not in the catalog`);
      }
      const replacement = r.retired?.replacement;
      if (replacement === undefined) return;
      const at = ['tools', tool.name, 'revisions', i, 'retired', 'replacement'];
      if (!tools.has(replacement) && !Object.hasOwn(raw, replacement)) sink.add(at, `names tool "${replacement}", which is not in the catalog`);
      else if (replacement === tool.name && r === tool.current) sink.add(at, 'a retired tool cannot replace itself');
    });
  }
  return tools;
}
