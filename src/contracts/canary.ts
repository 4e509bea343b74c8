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
 * canary is shown its current revision to everyone.
 */
import { createHash } from 'node:crypto';
import type { Revision, Tool } from './types.js';

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
