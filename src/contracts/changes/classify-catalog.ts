/**
 * Classifies the change from one whole catalog to another (or, with no old
 * catalog, the revision history inside one). Revision links that are new, or
 * whose `previous` policy changed, are classified by classify-revision.ts, with
 * the `from` side taken from the old catalog when it is there — that is what
 * live sessions planned against. Published revisions must not change: an
 * in-place edit, a rewritten history, a removal without retiring first, or an
 * effect raised without a new revision are reported as their own changes.
 * A new tool widens the agent's reach: it is reported as an addition that
 * widens authority, with what it reaches. With no old catalog (a first
 * acceptance, or one whose predecessor cannot be trusted) every target and
 * every tool is such an addition, so nothing is accepted unseen. A limit
 * raised or removed (the tool's own or its target's default) widens what the
 * agent may do; one added or lowered is metadata.
 */
import { contractFingerprint } from './action-diff.js';
import { canonicalJson } from '../../rules/canonical.js';
import { authorityOf, widensAuthority, type Authority } from '../authority/authority.js';
import type { Change, ChangeAspect, ChangeClass, ChangeReason } from '../change-vocabulary.js';
import { classifyRevisionChange } from './classify-revision.js';
import { gatewayChanges } from '../gateway/gateway-changes.js';
import { describeRule, ruleLoosening, ruleOutgrown, ruleRebinding } from '../authority/preapproval.js';
import { limitChanges, limitsOf } from '../catalog/limits.js';
import { Effects, type Catalog, type HostKey, type PreapprovalRule, type Revision, type Target, type Tool } from '../types.js';

const CATALOG = '(catalog)';

function change(tool: string, cls: ChangeClass, aspect: ChangeAspect, reasons: ChangeReason[], rev?: { from?: number; to?: number }): Change {
  return { tool, from: rev?.from, to: rev?.to, class: cls, aspect, policy: undefined, reasons };
}

const policyKey = (r: Revision | undefined): string => canonicalJson(r?.previous === undefined ? null : JSON.parse(JSON.stringify(r.previous)));

function fingerprintParts(a: Revision, b: Revision): string[] {
  const parts: string[] = [];
  const fa = JSON.parse(contractFingerprint(a)) as Record<string, unknown>;
  const fb = JSON.parse(contractFingerprint(b)) as Record<string, unknown>;
  for (const k of ['input', 'output', 'action', 'target', 'semantic_change']) {
    if (canonicalJson(fa[k] ?? null) !== canonicalJson(fb[k] ?? null)) parts.push(k);
  }
  return parts;
}

function toolLinks(oldTool: Tool | undefined, tool: Tool): Change[] {
  const out: Change[] = [];
  const oldRev = (n: number): Revision | undefined => oldTool?.revisions.find((r) => r.revision === n);
  for (let i = 1; i < tool.revisions.length; i++) {
    const to = tool.revisions[i] as Revision;
    const prevNew = tool.revisions[i - 1] as Revision;
    const published = oldRev(to.revision);
    if (published !== undefined && policyKey(published) === policyKey(to)) continue;
    const prevOld = oldRev(prevNew.revision);
    const fromTool = prevOld !== undefined && oldTool !== undefined ? oldTool : tool;
    out.push(...classifyRevisionChange(fromTool, prevOld ?? prevNew, tool, to));
    if (published !== undefined) {
      const was = published.previous?.policy ?? 'none';
      out.push(change(tool.name, 'metadata', 'tool', [{ code: 'policy_changed', text: `policy for revision ${prevNew.revision} calls changed ${was} → ${to.previous?.policy ?? 'none'}` }], { from: prevNew.revision, to: to.revision }));
    }
  }
  return out;
}

function publishedChanges(oldTool: Tool, tool: Tool): Change[] {
  const out: Change[] = [];
  const name = tool.name;
  const lastOld = oldTool.current.revision;
  for (const r of tool.revisions) {
    const before = oldTool.revisions.find((o) => o.revision === r.revision);
    const rev = { from: r.revision, to: r.revision };
    if (before === undefined) {
      if (r.revision < lastOld) out.push(change(name, 'breaking', 'tool', [{ code: 'history_rewritten', text: `revision ${r.revision} was inserted before the published revision ${lastOld}` }], rev));
      continue;
    }
    const parts = fingerprintParts(before, r);
    if (parts.length > 0) out.push(change(name, 'breaking', 'tool', [{ code: 'revision_edited_in_place', text: `revision ${r.revision} changed in place (${parts.join(', ')})` }], rev));
    const w = widensAuthority({ ...authorityOf(oldTool, before), effect: tool.effect }, authorityOf(tool, r));
    if (w.widens) out.push(change(name, 'authority_widening', 'authority', w.reasons.map((text) => ({ code: 'widened_in_place', text: `revision ${r.revision}: ${text}` })), rev));
    if (before.retired === undefined && r.retired !== undefined) {
      const repl = r.retired.replacement === undefined ? '' : ` (replacement: ${r.retired.replacement})`;
      const code = r === tool.current ? 'tool_retired' : 'revision_retired';
      out.push(change(name, 'removal', 'tool', [{ code, text: `${code === 'tool_retired' ? 'tool' : `revision ${r.revision}`} retired${repl}` }], rev));
    }
    if (before.canary?.sessionsPercent !== r.canary?.sessionsPercent) {
      const pct = (c: typeof r.canary): string => (c === undefined ? 'none' : `${c.sessionsPercent}% of sessions`);
      out.push(change(name, 'metadata', 'tool', [{ code: 'canary', text: `revision ${r.revision} canary: ${pct(before.canary)} → ${pct(r.canary)}` }], rev));
    }
    if (before.deprecationReplacement !== r.deprecationReplacement) out.push(change(name, 'metadata', 'tool', [{ code: 'deprecation', text: `revision ${r.revision} replacement announced: ${before.deprecationReplacement ?? 'none'} → ${r.deprecationReplacement ?? 'none'}` }], rev));
    if (before.deprecated !== r.deprecated) out.push(change(name, 'metadata', 'tool', [{ code: 'deprecation', text: `revision ${r.revision} deprecated: ${before.deprecated ?? 'no'} → ${r.deprecated ?? 'no'}` }], rev));
  }
  for (const o of oldTool.revisions) {
    if (tool.revisions.some((r) => r.revision === o.revision)) continue;
    const code = o.retired !== undefined ? 'retired_revision_removed' : 'revision_removed';
    out.push(change(name, 'removal', 'tool', [{ code, text: `revision ${o.revision} removed${o.retired !== undefined ? ' (it was retired)' : ' without being retired first'}` }], { from: o.revision }));
  }
  return out;
}

function toolLevel(oldTool: Tool, tool: Tool, hasNewLink: boolean): Change[] {
  const out: Change[] = [];
  const name = tool.name;
  const rank = (e: string): number => Effects.indexOf(e as (typeof Effects)[number]);
  if (rank(tool.effect) > rank(oldTool.effect) && !hasNewLink) {
    out.push(change(name, 'authority_widening', 'tool', [{ code: 'effect_raised_in_place', text: `effect ${oldTool.effect} → ${tool.effect} without a new revision` }]));
  } else if (tool.effect !== oldTool.effect) {
    out.push(change(name, 'metadata', 'tool', [{ code: 'effect_changed', text: `effect ${oldTool.effect} → ${tool.effect}` }]));
  }
  if (tool.approval !== oldTool.approval) {
    const order = ['none', 'session', 'per-call'];
    const looser = order.indexOf(tool.approval) < order.indexOf(oldTool.approval);
    out.push(change(name, 'metadata', 'tool', [{ code: looser ? 'approval_loosened' : 'approval_tightened', text: `approval ${oldTool.approval} → ${tool.approval}${looser ? ' (less oversight)' : ''}` }]));
  }
  if (tool.presence !== oldTool.presence) {
    const dropped = tool.presence === 'none';
    out.push(change(name, 'metadata', 'tool', [{ code: dropped ? 'approval_loosened' : 'approval_tightened', text: `presence on the approval page ${oldTool.presence} → ${tool.presence}${dropped ? ' (less oversight)' : ''}` }]));
  }
  if (tool.description !== oldTool.description) out.push(change(name, 'metadata', 'tool', [{ code: 'description_changed', text: 'description changed' }]));
  // Raising or removing a limit lets the agent do more: a widening (shown, not gated); adding or lowering one narrows.
  const limits = limitChanges(limitsOf(oldTool), limitsOf(tool));
  if (limits.widened.length > 0) out.push(change(name, 'authority_widening', 'tool', limits.widened.map((text) => ({ code: 'limit_raised', text }))));
  if (limits.tightened.length > 0) out.push(change(name, 'metadata', 'tool', limits.tightened.map((text) => ({ code: 'limit_tightened', text }))));
  return out;
}

/** A changed target; an SSH target whose only change is its host key says exactly how the pin moved. */
function targetChange(name: string, o: Target, t: Target, view: (t: unknown) => string): ChangeReason {
  if (o.kind === 'ssh' && t.kind === 'ssh' && view({ ...o, hostKey: null }) === view({ ...t, hostKey: null })) {
    const pin = (k: HostKey): string => (k.state === 'pinned' ? k.fingerprint : 'none');
    if (o.hostKey.state !== 'pinned') return { code: 'host_key_pinned', text: `target ${name}: host key pinned to ${pin(t.hostKey)}` };
    if (t.hostKey.state !== 'pinned') return { code: 'host_key_unpinned', text: `target ${name}: host key pin ${pin(o.hostKey)} removed (its tools stop running)` };
    return { code: 'host_key_changed', text: `target ${name}: host key changed ${pin(o.hostKey)} → ${pin(t.hostKey)}` };
  }
  return { code: 'target_changed', text: `target ${name} changed` };
}

function targetChanges(old: Catalog, candidate: Catalog): Change[] {
  const reasons: ChangeReason[] = [];
  const view = (t: unknown): string => canonicalJson(JSON.parse(JSON.stringify(t)));
  for (const [name, t] of candidate.targets) {
    const o = old.targets.get(name);
    if (o === undefined) reasons.push({ code: 'target_added', text: `target ${name} added` });
    else if (view(o) !== view(t)) reasons.push(targetChange(name, o, t, view));
  }
  for (const name of old.targets.keys()) if (!candidate.targets.has(name)) reasons.push({ code: 'target_removed', text: `target ${name} removed` });
  return reasons.length === 0 ? [] : [change(CATALOG, 'metadata', 'catalog', reasons)];
}

const NOTHING: Authority = { effect: 'read', credentials: [], origins: [], methods: [], paths: [], requestMeaning: [], privateNetwork: 'refused', ssh: [], programs: [], commands: [] };

/** A tool that did not exist: everything its current revision reaches, in the words of widensAuthority. */
function toolAdded(tool: Tool): Change {
  const w = widensAuthority(NOTHING, authorityOf(tool, tool.current));
  // The effect is named on its own; "effect read → write" against nothing would mislead.
  const reasons = w.widens ? w.reasons.filter((r) => !r.startsWith('effect ')) : [];
  const reach = reasons.length > 0 ? reasons.join(', ') : 'nothing';
  const text = `new tool ${tool.name} (${tool.effect}, approval ${tool.approval}): ${reach}`;
  return change(tool.name, 'authority_widening', 'catalog', [{ code: 'tool_added', text }], { to: tool.current.revision });
}

function targetsAdded(candidate: Catalog): Change[] {
  const reasons = [...candidate.targets.entries()].map(([name, t]): ChangeReason => {
    const where = t.kind === 'http' ? t.origin : `ssh ${t.user}@${t.host}:${t.port}, host key ${t.hostKey.state === 'pinned' ? t.hostKey.fingerprint : 'untrusted'}`;
    return { code: 'target_added', text: `target ${name} added: ${where}, credential ${t.credential}` };
  });
  return reasons.length === 0 ? [] : [change(CATALOG, 'authority_widening', 'catalog', reasons)];
}

/**
 * Pre-approval rules: a new rule, or one that covers calls its old version
 * did not (ruleLoosening, fail closed) or is now accepted for a revision that
 * reaches further (ruleRebinding), widens what runs without a person —
 * reported as a widening, one change per rule; a removed or narrowed rule is
 * metadata. A rule whose tool's current revision reaches beyond what the
 * rule was accepted for is named too (`rule_not_extended`): unattended runs
 * do not pre-approve that revision until the rule is accepted for it.
 */
function ruleChanges(old: Catalog | undefined, candidate: Catalog): Change[] {
  const out: Change[] = [];
  for (const [name, r] of candidate.preapprovals) {
    out.push(...ruleNotExtended(candidate, name, r));
    const o = old?.preapprovals.get(name);
    if (o === undefined) {
      out.push(change(r.tool, 'authority_widening', 'catalog', [{ code: 'rule_added', text: `new pre-approval rule ${name}: ${describeRule(r)}` }]));
      continue;
    }
    const loosened = [...ruleLoosening(o, r), ...(old === undefined ? [] : ruleRebinding(old, o, candidate, r))];
    if (loosened.length > 0) out.push(change(r.tool, 'authority_widening', 'catalog', [{ code: 'rule_loosened', text: `pre-approval rule ${name} covers more: ${loosened.join('; ')}` }]));
    else if (describeRule(o) !== describeRule(r)) out.push(change(r.tool, 'metadata', 'catalog', [{ code: 'rule_narrowed', text: `pre-approval rule ${name} narrowed: ${describeRule(r)}` }]));
  }
  for (const [name, o] of old?.preapprovals ?? []) {
    if (!candidate.preapprovals.has(name)) out.push(change(o.tool, 'metadata', 'catalog', [{ code: 'rule_removed', text: `pre-approval rule ${name} removed` }]));
  }
  return out;
}

/** The rule's tool's current revision reaches beyond what the rule was accepted for: say so, by the rule's name. */
function ruleNotExtended(candidate: Catalog, name: string, r: PreapprovalRule): Change[] {
  const tool = candidate.tools.get(r.tool);
  if (tool === undefined || tool.current.revision === r.revision) return [];
  const w = ruleOutgrown(r, candidate, tool.current);
  if (!w.widens) return [];
  const text = `pre-approval rule ${name} was accepted for ${r.tool} r${r.revision}; r${tool.current.revision} reaches beyond it (${w.reasons.join(', ')}): unattended runs do not pre-approve its calls until the rule is accepted for it (revision: ${tool.current.revision} in the rule)`;
  return [change(r.tool, 'metadata', 'catalog', [{ code: 'rule_not_extended', text }], { from: r.revision, to: tool.current.revision })];
}

/**
 * All changes from `old` to `candidate`. With `old` undefined: every target
 * and tool as an addition, plus the candidate's own revision links.
 */
export function classifyCatalogChange(old: Catalog | undefined, candidate: Catalog): Change[] {
  const out: Change[] = [];
  out.push(...(old !== undefined ? targetChanges(old, candidate) : targetsAdded(candidate)));
  for (const tool of candidate.tools.values()) {
    const oldTool = old?.tools.get(tool.name);
    if (oldTool === undefined) out.push(toolAdded(tool));
    const links = toolLinks(oldTool, tool);
    out.push(...links);
    if (oldTool !== undefined) {
      out.push(...publishedChanges(oldTool, tool), ...toolLevel(oldTool, tool, links.some((c) => c.from !== undefined && c.to !== undefined && c.from !== c.to)));
    }
  }
  out.push(...ruleChanges(old, candidate));
  out.push(...gatewayChanges(old, candidate));
  for (const oldTool of old?.tools.values() ?? []) {
    if (candidate.tools.has(oldTool.name)) continue;
    const retired = oldTool.current.retired !== undefined;
    out.push(change(oldTool.name, 'removal', 'catalog', [{ code: retired ? 'retired_tool_removed' : 'tool_removed', text: retired ? 'retired tool removed' : 'tool removed without being retired first' }]));
  }
  return out;
}
