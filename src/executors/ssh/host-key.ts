/**
 * Host key fingerprints and the pin check.
 *
 * Invariants:
 * - The fingerprint is OpenSSH's: `SHA256:` + unpadded base64 of the SHA-256
 *   of the public key blob, so operators can compare it with `ssh-keygen -l`.
 * - Only a pinned fingerprint equal to the offered one is accepted; there is
 *   no trust-on-first-use: `untrusted` always refuses.
 */
import { createHash } from 'node:crypto';
import type { HostKey } from '../../contracts/types.js';
import { PosternError } from '../../rules/errors.js';

export function sshFingerprint(keyBlob: Uint8Array): string {
  return `SHA256:${createHash('sha256').update(keyBlob).digest('base64').replace(/=+$/, '')}`;
}

export type HostKeyVerdict =
  | { readonly kind: 'ok'; readonly offered: string }
  | { readonly kind: 'unknown'; readonly offered: string }
  | { readonly kind: 'mismatch'; readonly offered: string; readonly pinned: string };

/** Padding is tolerated on the pinned side; everything else must match exactly. */
export function checkHostKey(pin: HostKey, offered: string): HostKeyVerdict {
  if (pin.state !== 'pinned') return { kind: 'unknown', offered };
  const pinned = pin.fingerprint.replace(/=+$/, '');
  return pinned === offered ? { kind: 'ok', offered } : { kind: 'mismatch', offered, pinned: pin.fingerprint };
}

/** The refusal for a verdict other than `ok`; nothing has run. */
export function hostKeyError(verdict: HostKeyVerdict, host: string, port: number): PosternError {
  if (verdict.kind === 'mismatch') {
    return new PosternError('HOST_KEY_MISMATCH', `the SSH host key of ${host}:${port} differs from the pinned one; nothing was run`, {
      details: { host, port, pinned_fingerprint: verdict.pinned, offered_fingerprint: verdict.offered },
      sideEffectStarted: false,
    });
  }
  return new PosternError('HOST_KEY_UNKNOWN', `the SSH host key of ${host}:${port} is not pinned; nothing was run`, {
    details: { host, port, offered_fingerprint: verdict.offered },
    sideEffectStarted: false,
  });
}
