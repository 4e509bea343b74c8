/**
 * Builders shared by the SSH tests: a resolved action for any SSH endpoint
 * (its `command` built exactly as the resolver builds it) and vault-shaped
 * credentials.
 */
import type { ResolvedSsh } from '../../src/contracts/index.js';
import { shellQuote } from '../../src/contracts/index.js';
import type { SshCredential } from '../../src/executors/ssh/index.js';

export interface SshEndpoint {
  readonly host: string;
  readonly port: number;
  readonly user: string;
}

export function sshAction(at: SshEndpoint, argv: readonly string[], pin: string | null): ResolvedSsh {
  return {
    kind: 'ssh',
    tool: 'test_tool',
    revision: 1,
    target: 'test',
    credential: 'deploy-key',
    host: at.host,
    port: at.port,
    user: at.user,
    hostKey: pin === null ? { state: 'untrusted' } : { state: 'pinned', fingerprint: pin },
    argv,
    command: argv.map(shellQuote).join(' '),
  };
}

export function sshKeyCredential(privateKey: string): SshCredential {
  return { meta: { name: 'deploy-key', kind: 'ssh_key', fields: {} }, secret: { private_key: new TextEncoder().encode(privateKey) } };
}

export function sshPasswordCredential(password: string): SshCredential {
  return { meta: { name: 'deploy-pw', kind: 'ssh_password', fields: {} }, secret: { password: new TextEncoder().encode(password) } };
}
