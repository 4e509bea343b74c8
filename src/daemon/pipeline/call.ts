/**
 * One `tools/call`, start to finish: the call's trail (its journal record),
 * the stages (stages/index.ts, in the order of DESIGN §6), and the answer
 * echoing the call's identity, the toolset in use and any deprecation of the
 * revision it was planned against. Never throws.
 */
import { randomUUID } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { deprecationOf } from '../../contracts/index.js';
import { Trail } from './trail.js';
import { runStages } from './stages/index.js';
import { callIdentity, echoIdentity } from './identity.js';
import type { CallRequest, Services, SessionInfo } from './context.js';

export async function handleCall(svc: Services, session: SessionInfo, req: CallRequest): Promise<CallToolResult> {
  const snapshot = svc.state.snapshot();
  const trail = new Trail(svc, session, req.name, snapshot.handlerRevision, randomUUID());
  trail.identity(callIdentity(session, req.meta));
  const result = await runStages({ svc, session, req, trail, snapshot, releases: [] });
  const inUse = svc.state.snapshot();
  const tool = inUse.catalog.tools.get(req.name);
  const deprecation = tool === undefined || trail.revisionSeen === null ? undefined : deprecationOf(tool, trail.revisionSeen);
  const answer = echoIdentity(result, inUse.toolset, trail.revisionExecuted, deprecation);
  trail.ended();
  return answer;
}
