/**
 * What the wire says about deprecated revisions: the one home of the notice
 * that `tools/list` carries per tool and a result carries for a consumer on a
 * deprecated revision.
 *
 * Invariants: only revisions still served are announced (a retired revision is
 * refused, not deprecated); the notice is a pure function of the catalog — the
 * date is information ("deprecated at DATE"), never compared with a clock — so
 * a listing built once per catalog snapshot stays valid however long it is
 * cached; the replacement is the tool named by `deprecated: { replacement }`,
 * else, for a revision that is not the current one, the current revision.
 */
import type { Revision, Tool } from '../types.js';

export type DeprecationReplacement = { readonly revision: number } | { readonly tool: string } | null;

export interface DeprecationNotice {
  readonly revision: number;
  /** `YYYY-MM-DD`, as the catalog declares it: the date announced as the end of the revision. */
  readonly deprecated: string;
  readonly current_revision: number;
  readonly replacement: DeprecationReplacement;
}

function noticeFor(tool: Tool, r: Revision): DeprecationNotice | undefined {
  if (r.deprecated === undefined || r.retired !== undefined) return undefined;
  const replacement: DeprecationReplacement =
    r.deprecationReplacement !== undefined ? { tool: r.deprecationReplacement } : r === tool.current ? null : { revision: tool.current.revision };
  return { revision: r.revision, deprecated: r.deprecated, current_revision: tool.current.revision, replacement };
}

/** Every deprecated revision of `tool` that is still served, oldest first. */
export function deprecationsOf(tool: Tool): DeprecationNotice[] {
  if (tool.current.retired !== undefined) return [];
  return tool.revisions.map((r) => noticeFor(tool, r)).filter((n): n is DeprecationNotice => n !== undefined);
}

/** The notice for a consumer on `revision` of `tool`, when that revision is deprecated and still served. */
export function deprecationOf(tool: Tool, revision: number): DeprecationNotice | undefined {
  if (tool.current.retired !== undefined) return undefined;
  const r = tool.revisions.find((x) => x.revision === revision);
  return r === undefined ? undefined : noticeFor(tool, r);
}
