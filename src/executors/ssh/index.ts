/**
 * The SSH executor: runs one catalog-defined command on a host whose key is
 * pinned, authenticating with a vault credential. executeSsh uses a connection
 * per call (execute.ts); SshPool shares connections between calls (pool.ts,
 * the daemon's path). Both build on connection.ts and channel.ts; probe.ts
 * serves `postern ssh trust`.
 */
export { executeSsh } from './execute.js';
export { SshPool } from './pool.js';
export { probeHostKey } from './probe.js';
export { checkHostKey, sshFingerprint } from './host-key.js';
export type { HostKeyVerdict } from './host-key.js';
export type { SshCredential, SshExecOptions, SshPoolExecOptions, SshPoolOptions, SshResult, SshRunner } from './types.js';
export {
  DEFAULT_MAX_OUTPUT_BYTES,
  DEFAULT_SSH_CHANNELS_PER_CONNECTION,
  DEFAULT_SSH_CONNECT_TIMEOUT_MS,
  DEFAULT_SSH_IDLE_MS,
  DEFAULT_SSH_TIMEOUT_MS,
} from './types.js';
