/**
 * executeSsh: one catalog SSH command on a pinned host with a vault
 * credential, on a connection of its own.
 *
 *   check options and credential (nothing sent) → connect, TCP_NODELAY →
 *   host key must equal the pin → authenticate (connection.ts) → exec, caps,
 *   exit code / signal (channel.ts) → close.
 *
 * Invariants:
 * - Host key pinning, authentication and their errors are connection.ts's;
 *   the exec channel, output caps, the exec-sent boundary and the timeout
 *   (signal TERM, close, TARGET_TIMEOUT) are channel.ts's.
 * - The deadline covers the whole call, connecting included.
 * - Error messages and details never contain key material or passwords.
 * - One connection per call (SshPool shares them); it is always ended on the
 *   way out.
 */
import type { ResolvedSsh } from '../../contracts/calls/resolved.js';
import { sshAuth } from './auth.js';
import { CallStop, checkedCommand, checkedLimits, timeoutError } from './call.js';
import { runCommand } from './channel.js';
import { SshConnection } from './connection.js';
import type { SshCredential, SshExecOptions, SshResult } from './types.js';

export async function executeSsh(action: ResolvedSsh, credential: SshCredential | null, opts: SshExecOptions = {}): Promise<SshResult> {
  const limits = checkedLimits(opts);
  const command = checkedCommand(action.command);
  const auth = sshAuth(credential, action.credential);
  const where = { host: action.host, port: action.port };
  const stop = new CallStop(limits.timeoutMs, timeoutError(where, limits.timeoutMs));
  const conn = new SshConnection(action, auth, Math.min(limits.connectTimeoutMs, limits.timeoutMs));
  try {
    await stop.race(conn.ready, 'connect');
    return await runCommand(conn, command, limits, stop, opts.onExecSent).result;
  } finally {
    stop.dispose();
    void conn.end();
  }
}
