/**
 * Classifies one revision link (from → to): what happens to calls and readers
 * planned against `from` once `to` is current. Each applicable class comes back
 * as its own Change with readable reasons. An adapt policy turns a breaking
 * input change into a bounded migration only when it is proved to cover every
 * old call: the old schema, passed through the adapter's renames, mappings and
 * defaults, must be contained in the new schema. The output side (what old
 * readers of results get) is judged by output-adapt.ts: unchanged or additive,
 * carried by a declared output adapter (a bounded migration of the output), or
 * breaking.
 */
import { diffActions } from './action-diff.js';
import { authorityOf, widensAuthority } from '../authority/authority.js';
import { inputAddReason, inputBreakReason, type Change, type ChangeAspect, type ChangeClass, type ChangeReason } from '../change-vocabulary.js';
import { constNode, withMappingsAndDefaults, type ObjectNode, type PropertyDef } from '../schema/schema-node.js';

export { constNode };
import { within } from '../schema/schema-within.js';
import { describeOutputAdapter, outputLink } from '../calls/output-adapt.js';
import type { AdapterPolicy, Revision, Tool } from '../types.js';
import { isAdapter } from '../types.js';

/** What old arguments look like after validation (defaults applied) and the adapter. */
function adaptedSchema(old: ObjectNode, policy: AdapterPolicy): ObjectNode {
  let props: PropertyDef[] = old.properties.map((p) => (p.default !== undefined ? { ...p, presence: 'required' } : p));
  for (const [from, to] of policy.renames) props = props.map((p) => (p.name === from ? { ...p, name: to } : p));
  return { ...old, properties: withMappingsAndDefaults(props, policy.mappings, policy.defaults) };
}

function describeAdapter(policy: AdapterPolicy): ChangeReason {
  const parts = [
    ...policy.renames.map(([a, b]) => `rename ${a} → ${b}`),
    ...policy.mappings.map(([f, pairs]) => `map ${f} ${pairs.map(([a, b]) => `${JSON.stringify(a)}→${JSON.stringify(b)}`).join(', ')}`),
    ...policy.defaults.map(([f, v]) => `default ${f} = ${JSON.stringify(v)}`),
  ];
  return { code: 'adapter', text: `adapter: ${parts.length === 0 ? 'no transformation' : parts.join('; ')}` };
}

export function classifyRevisionChange(fromTool: Tool, from: Revision, toTool: Tool, to: Revision): Change[] {
  const policy = to.previous?.policy ?? 'none';
  const out: Change[] = [];
  const add = (cls: ChangeClass, aspect: ChangeAspect, reasons: readonly ChangeReason[]): void => {
    if (reasons.length > 0) out.push({ tool: toTool.name, from: from.revision, to: to.revision, class: cls, aspect, policy, reasons });
  };
  if (to.semanticChange !== undefined) add('semantic_change', 'tool', [{ code: 'semantic_change_declared', text: to.semanticChange }]);

  const oldIn = from.input.node;
  const newIn = to.input.node;
  const breaks = within(oldIn, newIn).map(inputBreakReason);
  if (breaks.length > 0 && isAdapter(to.previous) && oldIn.kind === 'object') {
    const gaps = within(adaptedSchema(oldIn, to.previous), newIn).map(inputBreakReason);
    if (gaps.length === 0) add('bounded_migration', 'input', [...breaks, describeAdapter(to.previous)]);
    else add('breaking', 'input', [...breaks, describeAdapter(to.previous), ...gaps.map((g) => ({ code: 'adapter_gap', text: `adapter does not cover: ${g.text}` }))]);
  } else add('breaking', 'input', breaks);
  const additions: ChangeReason[] = within(newIn, oldIn).map(inputAddReason).filter((x) => x !== undefined);

  const outLink = outputLink(from, to);
  additions.push(...outLink.additions);
  if (outLink.adapter === undefined) add('breaking', 'output', outLink.breaks);
  else if (outLink.verdict === 'adapted') add(outLink.breaks.length > 0 ? 'bounded_migration' : 'metadata', 'output', [...outLink.breaks, describeOutputAdapter(outLink.adapter)]);
  else add('breaking', 'output', [...outLink.breaks, describeOutputAdapter(outLink.adapter), ...outLink.gaps]);
  add('additive', 'input', additions);

  const actions = diffActions(from, to);
  add('breaking', 'action', actions.removed.map((text) => ({ code: 'reach_removed', text })));
  add('behavior_change', 'action', actions.changed.map((text) => ({ code: 'action_changed', text })));

  const widening = widensAuthority(authorityOf(fromTool, from), authorityOf(toTool, to));
  if (widening.widens) add('authority_widening', 'authority', widening.reasons.map((text) => ({ code: 'authority_widened', text })));
  if (out.length === 0) add('metadata', 'tool', [{ code: 'no_contract_change', text: 'new revision with the same contract' }]);
  return out;
}
