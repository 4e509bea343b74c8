/**
 * probeHostKey: learns the fingerprint a host offers, for `postern ssh trust`
 * to show the operator before anything is pinned.
 *
 * Invariants: the handshake is always refused at host key verification, so
 * no credential is sent and nothing runs; the caller records the fingerprint
 * only after the operator confirms it.
 */
import { ssh2 } from '../../libraries.js';
import { PosternError } from '../../rules/errors.js';
import { sshFingerprint } from './host-key.js';

export async function probeHostKey(host: string, port: number, timeoutMs = 10_000): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const client = new (ssh2().Client)();
    let offered: string | null = null;
    let settled = false;
    const done = (): void => {
      if (settled) return;
      settled = true;
      client.end();
      if (offered !== null) resolve(offered);
      else {
        reject(
          new PosternError('TARGET_ERROR', `could not read the SSH host key of ${host}:${port}`, {
            details: { host, port, reason: 'no_host_key' },
            sideEffectStarted: false,
          }),
        );
      }
    };
    client.on('error', done);
    client.on('close', done);
    client.on('ready', done); // unreachable: the verifier always refuses
    client.connect({
      host,
      port,
      username: 'postern-probe',
      readyTimeout: timeoutMs,
      tryKeyboard: false,
      hostVerifier: (key: Buffer): boolean => {
        offered = sshFingerprint(key);
        return false;
      },
    });
  });
}
