/**
 * Execution identity: what a call says about who planned it, recorded with
 * the call and echoed in its result. From the request's `_meta` under our
 * prefix (declared by the client, not authenticated; clipped), falling back
 * to what the session declared:
 * - `dev.postern/run_id`: the run this call belongs to (per call);
 * - `dev.postern/agent_release`: the agent's release (instructions, model, tools);
 * - `dev.postern/toolset`: the toolset version the call was planned against
 *   (else the toolset of the session's last listing).
 * Every result carries, in `_meta`, the toolset in use and the revision that
 * ran (null when none did); a result for a call planned against a deprecated
 * revision still served also carries its notice (contracts/changes/deprecation.ts).
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { clipLabel } from '../../rules/clip.js';
import type { DeprecationNotice } from '../../contracts/index.js';
import { META_AGENT_RELEASE, META_DEPRECATION, META_REVISION, META_RUN_ID, META_TOOLSET, type SessionInfo } from './context.js';

export interface CallIdentity {
  readonly runId: string | null;
  readonly agentRelease: string | null;
  readonly toolset: string | null;
}

function label(v: unknown, max: number): string | null {
  return typeof v === 'string' && v.length > 0 ? clipLabel(v, max) : null;
}

export function callIdentity(session: SessionInfo, meta: Readonly<Record<string, unknown>>): CallIdentity {
  return {
    runId: label(meta[META_RUN_ID], 128) ?? session.runId,
    agentRelease: label(meta[META_AGENT_RELEASE], 128) ?? session.agentRelease,
    toolset: label(meta[META_TOOLSET], 64) ?? session.listedToolset,
  };
}

/** The result with the toolset in use, the revision that ran and (when planned against a deprecated revision) its notice in `_meta`. */
export function echoIdentity(result: CallToolResult, toolset: string, revision: number | null, deprecation?: DeprecationNotice): CallToolResult {
  return {
    ...result,
    _meta: { ...(result._meta ?? {}), [META_TOOLSET]: toolset, [META_REVISION]: revision, ...(deprecation === undefined ? {} : { [META_DEPRECATION]: deprecation }) },
  };
}
