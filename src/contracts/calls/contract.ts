/**
 * Which contract a call runs under. A session planned against the revision it
 * was last shown; when that is not the current one, the chain of `previous`
 * policies between them decides: hand on unchanged, adapt, pin to an older
 * revision, or reject before any effect. Unknown and retired revisions are
 * rejected with the facts an agent needs (current revision, replacement tool),
 * and so is a route that crosses a declared semantic change or a link whose
 * results old readers cannot read (output-adapt.ts) — whatever the release
 * gate said when the catalog was accepted.
 * `prepareCall` then validates and carries the raw arguments along that chain,
 * producing the normalized arguments of exactly one revision.
 */
import { carryForward } from './adapt.js';
import { outputLink } from './output-adapt.js';
import { validateArguments, type FieldIssue } from '../schema/validate.js';
import type { JsonObject, PreviousPolicy, Revision, Tool } from '../types.js';

export interface Link {
  readonly from: Revision;
  readonly to: Revision;
  readonly policy: PreviousPolicy | undefined;
}

export const RejectReasons = {
  unknown_revision: 'the tool has no such revision',
  revision_retired: 'that revision of the tool is retired',
  tool_retired: 'the tool is retired',
  policy_reject: 'calls planned against that revision are rejected; refresh the tool list',
  semantic_change: 'a later revision declares a change of meaning, so plans made against that revision are not served; refresh the tool list',
  output_incompatible: 'results of the revision that would run cannot be given in the shape that revision declared (no output adapter covers them); refresh the tool list',
} as const;
export type RejectReason = keyof typeof RejectReasons;

export interface Rejection {
  readonly kind: 'reject';
  readonly reason: RejectReason;
  readonly tool: string;
  readonly seenRevision: number | undefined;
  readonly currentRevision: number;
  readonly replacement: string | undefined;
  readonly message: string;
}

export type ContractDecision =
  | { readonly kind: 'current'; readonly execute: Revision }
  /** Planned against `seen`; carried through `links` (none pin or reject) to the current revision. */
  | { readonly kind: 'bridge'; readonly seen: Revision; readonly execute: Revision; readonly links: readonly Link[]; readonly deprecated: string | undefined }
  /** Planned against `seen`; carried through `links` to `execute`, an older revision that stays in force. */
  | { readonly kind: 'pin'; readonly seen: Revision; readonly execute: Revision; readonly links: readonly Link[]; readonly deprecated: string | undefined }
  | Rejection;

function reject(tool: Tool, seen: number | undefined, reason: RejectReason, replacement?: string): Rejection {
  const repl = replacement === undefined ? '' : `; use ${replacement}`;
  const rev = seen === undefined ? '' : ` (revision ${seen})`;
  return {
    kind: 'reject',
    reason,
    tool: tool.name,
    seenRevision: seen,
    currentRevision: tool.current.revision,
    replacement,
    message: `${tool.name}${rev}: ${RejectReasons[reason]}${repl}; current revision is ${tool.current.revision}`,
  };
}

/** `seenRevision` undefined means the session saw the current revision (or states none). */
export function resolveContract(tool: Tool, seenRevision: number | undefined): ContractDecision {
  const current = tool.current;
  if (current.retired !== undefined) return reject(tool, seenRevision, 'tool_retired', current.retired.replacement);
  if (seenRevision === undefined || seenRevision === current.revision) return { kind: 'current', execute: current };
  const start = tool.revisions.findIndex((r) => r.revision === seenRevision);
  const seen = tool.revisions[start];
  if (seen === undefined) return reject(tool, seenRevision, 'unknown_revision');
  if (seen.retired !== undefined) return reject(tool, seenRevision, 'revision_retired', seen.retired.replacement ?? tool.name);
  const links: Link[] = [];
  for (let i = start + 1; i < tool.revisions.length; i++) {
    const from = tool.revisions[i - 1] as Revision;
    const to = tool.revisions[i] as Revision;
    const policy = to.previous;
    if (policy?.policy === 'reject') return reject(tool, seenRevision, 'policy_reject');
    // Computed from the links themselves, so a catalog accepted over a failing gate (--force) cannot make
    // the daemon serve an old plan under a changed meaning, or hand it results it cannot read.
    if (to.semanticChange !== undefined) return reject(tool, seenRevision, 'semantic_change');
    if (policy?.policy === 'pin') return { kind: 'pin', seen, execute: from, links, deprecated: seen.deprecated };
    if (outputLink(from, to).verdict === 'broken') return reject(tool, seenRevision, 'output_incompatible');
    links.push({ from, to, policy });
  }
  return { kind: 'bridge', seen, execute: current, links, deprecated: seen.deprecated };
}

export type PreparedCall =
  | {
      readonly kind: 'ready';
      readonly revision: Revision;
      readonly normalized: JsonObject;
      /** Human-readable adapter steps, for the journal and the approval card; empty when none. */
      readonly adapted: readonly string[];
    }
  | { readonly kind: 'invalid'; readonly revision: number; readonly stage: 'planned' | 'carried'; readonly issues: readonly FieldIssue[] }
  | Rejection;

/** Validates `raw` against the decision's revisions and carries it to the revision that will run. */
export function prepareCall(decision: ContractDecision, raw: unknown): PreparedCall {
  if (decision.kind === 'reject') return decision;
  const first = decision.kind === 'current' ? decision.execute : decision.seen;
  const v = validateArguments(first.input, raw);
  if (!v.ok) return { kind: 'invalid', revision: first.revision, stage: 'planned', issues: v.issues };
  if (decision.kind === 'current') return { kind: 'ready', revision: decision.execute, normalized: v.value, adapted: [] };
  let args = v.value;
  const adapted: string[] = [];
  for (const link of decision.links) {
    const step = carryForward(link.from, link.to, link.policy, args);
    switch (step.kind) {
      case 'adapted':
        args = step.args;
        adapted.push(...step.applied.map((s) => `r${link.from.revision}→r${link.to.revision}: ${s}`));
        break;
      case 'invalid_for_new':
        return { kind: 'invalid', revision: step.revision, stage: 'carried', issues: step.issues };
      case 'invalid_for_old':
      case 'pinned':
      case 'rejected':
        // carryForward is only called with adapt/undefined links; these cannot occur.
        return { kind: 'invalid', revision: link.to.revision, stage: 'carried', issues: [{ field: '(arguments)', problem: `unexpected ${step.kind}` }] };
    }
  }
  return { kind: 'ready', revision: decision.execute, normalized: args, adapted };
}
