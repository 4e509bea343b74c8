/**
 * The shared agent socket (docs/agent-users.md): `<home>-agents/agent.sock`,
 * beside the 0700 home in a 0711 directory, mode 0666, opened only when the
 * operator has written an allow list (`postern agents allow`). Every
 * connection's peer is read from the kernel (peer-cred.ts) and admitted only
 * when it is the operator's own uid or a user (or a member of a group) on
 * the list, read and verified afresh for each connection, so a revocation
 * holds from the next connection on. The private socket in the home is
 * unchanged.
 *
 * Invariants: a missing, malformed or forged list admits only the operator
 * (a forged one is also logged as an alarm); a peer whose credentials cannot
 * be read is refused; a refused connection gets AGENT_USER_NOT_ALLOWED and
 * never reaches the SDK.
 */
import { access } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { isAllowed, judgeAgentUsers, readAgentUsers } from '../../home/agent-users.js';
import type { HomePaths } from '../../home/paths.js';
import { isPosternError } from '../../rules/errors.js';
import { startAgentSocket, type Admission, type AgentEndpoint, type AgentSessionHooks } from './agent-socket.js';
import { isOperatorUid, operatorUser } from '../pipeline/agent-user.js';
import { osUser, peerCredentials } from './peer-cred.js';
import type { Services } from '../pipeline/context.js';
import { prepareSharedDir } from '../lifecycle/socket-file.js';

interface SharedSocketDeps {
  readonly paths: HomePaths;
  readonly svc: Services;
  readonly hooks: AgentSessionHooks;
  /** The vault's catalog-mac key (the allow list's MAC key); read at each connection (the vault may be re-keyed). */
  readonly key: () => Uint8Array | null;
  readonly log: (line: string) => void;
}

/** The admission check of one connection on the shared socket. */
function admitPeer(d: Pick<SharedSocketDeps, 'paths' | 'key' | 'log'>): (socket: Socket) => Promise<Admission> {
  return async (socket) => {
    const cred = await peerCredentials(socket);
    if (cred === null) return { ok: false, message: 'AGENT_USER_NOT_ALLOWED: the daemon could not read who is connecting (SO_PEERCRED through perl); the connection is refused' };
    if (isOperatorUid(cred.uid)) return { ok: true, peer: { uid: cred.uid, user: operatorUser() } };
    const who = await osUser(cred.uid, cred.gid);
    const key = d.key();
    if (key === null) return { ok: false, message: 'AGENT_USER_NOT_ALLOWED: the vault is locked; only the operator is admitted until the daemon is restarted' };
    const verdict = judgeAgentUsers(key, await readAgentUsers(d.paths));
    if (verdict.kind === 'refused') d.log(`ALARM agent users: ${verdict.reason}; only the operator is admitted (run \`postern agents allow USER\` to write the list again)`);
    const name = who.name ?? `uid ${cred.uid}`;
    if (verdict.kind !== 'allowed' || !isAllowed(verdict.allowed, who.name, who.groups)) {
      return { ok: false, message: `AGENT_USER_NOT_ALLOWED: the OS user ${name} may not use this Postern agent socket; the operator allows it with \`postern agents allow ${who.name ?? 'USER'}\`` };
    }
    return { ok: true, peer: { uid: cred.uid, user: who.name } };
  };
}

/** Opens the shared socket when an allow list exists; null otherwise (or when it cannot be opened: said in the log). */
export async function startSharedAgentSocket(d: SharedSocketDeps): Promise<AgentEndpoint | null> {
  try {
    await access(d.paths.agentUsers);
  } catch {
    return null;
  }
  try {
    await prepareSharedDir(d.paths.sharedAgentDir);
    const endpoint = await startAgentSocket(d.paths.sharedAgentSocket, d.svc, d.hooks, { admit: admitPeer(d), shared: true });
    d.log(`shared agent socket ${d.paths.sharedAgentSocket} (allowed users: postern agents list)`);
    return endpoint;
  } catch (e) {
    d.log(`shared agent socket: ${isPosternError(e) ? e.message : 'could not be opened'}`);
    return null;
  }
}
