/**
 * Carries a call planned against one revision across to the next. The raw
 * arguments are first validated against the revision they were planned for
 * (with its defaults applied — that is what the call meant), then, by policy:
 * absent → handed on unchanged; adapt → renames, then constant value mappings,
 * then constant defaults, with the result validated against the new schema;
 * pin → stays on the old revision; reject → stops. Deterministic: the same
 * input always gives the same output or the same error, and nothing else is
 * consulted.
 */
import { validateArguments, type FieldIssue } from '../schema/validate.js';
import type { AdapterPolicy, JsonObject, JsonValue, PreviousPolicy, Revision } from '../types.js';

export type AdaptResult =
  /** Valid for `to`; `applied` lists what the adapter changed (empty when nothing). */
  | { readonly kind: 'adapted'; readonly args: JsonObject; readonly applied: readonly string[] }
  /** Policy pin: valid for `from`, which is the revision to run. */
  | { readonly kind: 'pinned'; readonly args: JsonObject }
  /** Policy reject: nothing runs. */
  | { readonly kind: 'rejected'; readonly revision: number }
  /** The call was not valid even for the revision it was planned against. */
  | { readonly kind: 'invalid_for_old'; readonly revision: number; readonly issues: readonly FieldIssue[] }
  /** The carried-over call does not satisfy the new revision. */
  | { readonly kind: 'invalid_for_new'; readonly revision: number; readonly issues: readonly FieldIssue[]; readonly carried: JsonObject };

function setOwn(obj: Record<string, JsonValue>, key: string, value: JsonValue): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Applies an adapt policy's steps to already-validated old arguments. */
function applyAdapter(policy: AdapterPolicy, args: JsonObject): { args: JsonObject; applied: string[] } {
  const out: Record<string, JsonValue> = {};
  for (const [k, v] of Object.entries(args)) setOwn(out, k, v);
  const applied: string[] = [];
  for (const [from, to] of policy.renames) {
    if (!Object.hasOwn(out, from)) continue;
    setOwn(out, to, out[from] as JsonValue);
    delete out[from];
    applied.push(`renamed ${from} → ${to}`);
  }
  for (const [field, pairs] of policy.mappings) {
    if (!Object.hasOwn(out, field)) continue;
    const value = out[field];
    const hit = pairs.find(([from]) => from === value);
    if (hit === undefined) continue;
    setOwn(out, field, hit[1]);
    applied.push(`mapped ${field} ${JSON.stringify(hit[0])} → ${JSON.stringify(hit[1])}`);
  }
  for (const [field, value] of policy.defaults) {
    if (Object.hasOwn(out, field)) continue;
    setOwn(out, field, structuredClone(value));
    applied.push(`defaulted ${field} = ${JSON.stringify(value)}`);
  }
  return { args: out, applied };
}

/** Validates `args` (already valid for `from`) against `to` after applying `policy`. */
export function carryForward(from: Revision, to: Revision, policy: PreviousPolicy | undefined, args: JsonObject): AdaptResult {
  switch (policy?.policy) {
    case 'pin':
      return { kind: 'pinned', args };
    case 'reject':
      return { kind: 'rejected', revision: from.revision };
    case undefined:
    case 'adapt':
    case 'migrate': {
      const step = policy === undefined ? { args, applied: [] } : applyAdapter(policy, args);
      const v = validateArguments(to.input, step.args);
      return v.ok
        ? { kind: 'adapted', args: v.value, applied: step.applied }
        : { kind: 'invalid_for_new', revision: to.revision, issues: v.issues, carried: step.args };
    }
  }
}

/**
 * One step: raw arguments planned against `fromRevision`, carried to `toRevision`
 * under `policy` (the `previous` of `toRevision`; undefined = hand on unchanged).
 */
export function adaptArguments(fromRevision: Revision, toRevision: Revision, policy: PreviousPolicy | undefined, rawArgs: unknown): AdaptResult {
  const old = validateArguments(fromRevision.input, rawArgs);
  if (!old.ok) return { kind: 'invalid_for_old', revision: fromRevision.revision, issues: old.issues };
  return carryForward(fromRevision, toRevision, policy, old.value);
}
