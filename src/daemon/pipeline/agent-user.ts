/**
 * The OS user a session acts as (docs/agent-users.md): the peer the kernel
 * named on the shared agent socket, or the operator's own user for the
 * private socket, the HTTP listener and the operator's own uid.
 */
import { userInfo } from 'node:os';
import type { SessionInfo } from './context.js';

let operatorName: string | null | undefined;

/** The daemon's own user name (the operator's), or null when the system has none for its uid. */
export function operatorUser(): string | null {
  if (operatorName === undefined) {
    try {
      operatorName = userInfo().username;
    } catch {
      operatorName = null;
    }
  }
  return operatorName;
}

const myUid = (): number | undefined => (typeof process.getuid === 'function' ? process.getuid() : undefined);

/** Is `uid` the operator's (the daemon's) own? */
export const isOperatorUid = (uid: number): boolean => uid === myUid();

/** The user name a session's calls are checked against (a catalog's `agent_users`). */
export function agentUserOf(session: SessionInfo): string | null {
  const peer = session.peer;
  if (peer === undefined || isOperatorUid(peer.uid)) return operatorUser();
  return peer.user;
}
