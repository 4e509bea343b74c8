/**
 * Canary for a local executor: which revision of a tool a session is shown.
 * A current revision that declares `canary: { sessions_percent: N }` (and
 * `previous: pin`, checked by the parser) is shown to about N% of sessions;
 * every other session is shown the previous revision, plans against it and —
 * through the pin policy — runs it. Sessions that listed before the
 * acceptance keep what they listed (pin), canary or not.
 *
 * Invariants: the cohort is a pure function of (tool, session id) — the same
 * session always gets the same answer for the same tool, across listings and
 * across catalogs with the same percentage, and raising the percentage only
 * adds sessions; no clock, no randomness at call time; a tool without a
 * canary is shown its current revision to everyone. The agent never selects
 * the revision it runs under: what it says it planned against (`_meta`, a
 * declared listing, a toolset) is a plan, checked against the revision the
 * session is shown (`sessionPlan`): a plan newer than that one — the canary
 * revision, for a session outside the cohort — was never served to the
 * session and is refused; an older one goes through the `previous` policies
 * like any old plan, which end at the pin below the canary.
 */
import { createHash } from 'node:crypto';
import type { Revision, Tool } from '../types.js';

/** The session's bucket for `tool`, 0–99. */
export function canaryBucket(tool: string, sessionId: string): number {
  return createHash('sha256').update(`${tool}\n${sessionId}`).digest().readUInt32BE(0) % 100;
}

export function inCanary(tool: Tool, sessionId: string): boolean {
  const c = tool.current.canary;
  return c === undefined || canaryBucket(tool.name, sessionId) < c.sessionsPercent;
}

/** The revision shown to sessions outside the tool's canary (the one before it); undefined when there is no canary. */
export function controlRevision(tool: Tool): Revision | undefined {
  return tool.current.canary === undefined ? undefined : tool.revisions[tool.revisions.length - 2];
}

/** The revision `sessionId` is shown for `tool`: the current one, or the one before a canary it is not part of. */
export function shownRevision(tool: Tool, sessionId: string): Revision {
  if (inCanary(tool, sessionId)) return tool.current;
  return controlRevision(tool) ?? tool.current;
}

/** What a session's call may be planned against: a revision (undefined: the current one), or none, when the plan names a revision the session is not served. */
export type SessionPlan = { readonly kind: 'plan'; readonly revision: number | undefined } | { readonly kind: 'not_served'; readonly shown: number };

/**
 * The plan of a call of `sessionId` that says it was planned against
 * `planned` (undefined: the tool list in use, which for this session shows
 * `shownRevision`). A revision after the shown one is `not_served`.
 */
export function sessionPlan(tool: Tool, sessionId: string, planned: number | undefined): SessionPlan {
  const shown = shownRevision(tool, sessionId);
  if (planned === undefined) return { kind: 'plan', revision: shown === tool.current ? undefined : shown.revision };
  if (tool.revisions.findIndex((r) => r.revision === planned) > tool.revisions.indexOf(shown)) return { kind: 'not_served', shown: shown.revision };
  return { kind: 'plan', revision: planned };
}
