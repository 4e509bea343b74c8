/**
 * Explicit stand-ins for the Services a daemon (or a test) has nothing to
 * offer for: naming "none" is a choice the wiring makes, never a member it
 * forgot (pipeline/context.ts has no optional member).
 */
import type { ActivityView } from '../../protocol/operator/index.js';
import type { Credential } from '../../vault/index.js';
import type { ShadowCandidate } from './context.js';

/** No pending catalog runs in shadow. */
export const noShadow = (): ShadowCandidate | null => null;

/** The vault is held in memory only: there is no file whose new generations to adopt. */
export const noVaultFile = (): { refresh(): Promise<void> } => ({ refresh: () => Promise.resolve() });

/** Nobody watches the calls as they advance (no operator channel). */
export const noActivityEvents = (_v: ActivityView): void => undefined;

/**
 * A vault held only in memory cannot keep a refresh token the server
 * rotated: the redactor learns it (it is a secret from now on), and the
 * token cache uses it for this daemon's life.
 */
export const memoryOnlyRefreshToken =
  (learn: (name: string, token: Uint8Array) => void) =>
  (credential: Credential, next: Uint8Array): Promise<void> => {
    learn(credential.meta.name, next);
    return Promise.resolve();
  };
