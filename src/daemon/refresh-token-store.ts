/**
 * Writing a rotated OAuth refresh token back to the vault, from the daemon.
 * The daemon holds the unlocked vault, so it re-seals with the data key it
 * holds (no passphrase), under the vault's writer lock, and the save is
 * atomic (temp file + rename, like every vault write). The vault follower
 * then adopts the new generation as it adopts a CLI's.
 *
 * Invariants: the stored refresh token is replaced only if it is still the
 * one the daemon sent (an operator's rotate meanwhile wins); the other
 * secret parts and the fields stay as they are; no value is returned or
 * logged.
 */
import { withVaultWriter, type UnlockedVault, type VaultOptions } from '../vault/index.js';

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
      if (cur === undefined || cur.meta.kind !== 'oauth_refresh_token' || stored === undefined || !Buffer.from(stored).equals(Buffer.from(sent))) return 'changed_meanwhile';
      v.rotate(name, { ...cur.secret, refresh_token: next }, { ...cur.meta.fields });
      return 'saved';
    },
    opts,
  );
}
