/**
 * The SSH executor: runs one catalog-defined command on a host whose key is
 * pinned, authenticating with a vault credential. See execute.ts for the flow
 * and its invariants; probe.ts serves `postern ssh trust`.
 */
export { executeSsh } from './execute.js';
export { probeHostKey } from './probe.js';
export { checkHostKey, sshFingerprint } from './host-key.js';
export type { HostKeyVerdict } from './host-key.js';
export type { SshCredential, SshExecOptions, SshResult } from './types.js';
export { DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_SSH_CONNECT_TIMEOUT_MS, DEFAULT_SSH_TIMEOUT_MS } from './types.js';
