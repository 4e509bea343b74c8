/**
 * Writing a rotated OAuth refresh token back to the vault, from the daemon.
 * The daemon holds the unlocked vault, so it re-seals with the data key it
 * holds (no passphrase), under the vault's writer lock, and the save is
 * atomic (temp file + rename, like every vault write). The vault follower
 * then adopts the new generation as it adopts a CLI's.
 *
 * Invariants: the stored refresh token is replaced only if it is still the
 * one the daemon sent (an operator's rotate meanwhile wins); the other
 * secret parts and the fields stay as they are; the token replaced is
 * remembered by the vault as retired (unlocked-vault.ts), and a rotated one
 * that loses to an operator's rotate is remembered as retired too, so a
 * daemon started later still redacts both; no value is returned or logged.
 */
import { withVaultWriter, type Credential, type UnlockedVault, type VaultOptions } from '../vault/index.js';
import { isPosternError } from '../rules/errors.js';

export type RefreshTokenWrite = 'saved' | 'changed_meanwhile';

export async function keepRotatedRefreshToken(
  vaultPath: string,
  held: UnlockedVault,
  name: string,
  sent: Uint8Array,
  next: Uint8Array,
  opts: VaultOptions,
): Promise<RefreshTokenWrite> {
  return withVaultWriter(
    vaultPath,
    { held },
    (v): RefreshTokenWrite => {
      const cur = v.get(name);
      const stored = cur?.secret['refresh_token'];
      if (cur === undefined || cur.meta.kind !== 'oauth_refresh_token' || stored === undefined || !Buffer.from(stored).equals(Buffer.from(sent))) {
        v.remember({ name, kind: 'oauth_refresh_token', fields: { ...(cur?.meta.kind === 'oauth_refresh_token' ? cur.meta.fields : held.get(name)?.meta.fields) }, secret: { refresh_token: next }, source: 'retired', until: null });
        return 'changed_meanwhile';
      }
      v.rotate(name, { ...cur.secret, refresh_token: next }, { ...cur.meta.fields });
      return 'saved';
    },
    opts,
  );
}

export interface RefreshTokenWriteBackParts {
  readonly vaultPath: string;
  readonly vault: VaultOptions;
  readonly state: { vault(): UnlockedVault; learnMinted(name: string, token: Uint8Array): void };
  readonly tokens: { expectOwnChange(name: string): void };
  /** Adopts the generation just written (vault-follow.ts). */
  readonly follower: { refresh(): Promise<void> };
  readonly log: (line: string) => void;
}

/**
 * The daemon's keeper of a rotated refresh token: learnt by the redactor
 * first (it is a secret from now on), then saved with the held vault key,
 * then the new generation adopted. A failed save is logged, never thrown.
 */
export function refreshTokenWriteBack(p: RefreshTokenWriteBackParts): (credential: Credential, next: Uint8Array) => Promise<void> {
  return async (cred, next) => {
    const name = cred.meta.name;
    p.state.learnMinted(name, next);
    const sent = cred.secret['refresh_token'];
    if (sent === undefined) return;
    p.tokens.expectOwnChange(name);
    try {
      const r = await keepRotatedRefreshToken(p.vaultPath, p.state.vault(), name, sent, next, p.vault);
      p.log(r === 'saved' ? `credential ${name}: the rotated refresh token was saved to the vault` : `credential ${name}: changed in the vault meanwhile; the rotated refresh token was not saved`);
      await p.follower.refresh();
    } catch (e) {
      p.log(`credential ${name}: the rotated refresh token could not be saved (${isPosternError(e) ? e.code : 'error'})`);
    }
  };
}
