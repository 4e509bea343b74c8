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
import { withVaultWriter, type Credential, type UnlockedVault, type VaultOptions } from '../../vault/index.js';
import { isPosternError } from '../../rules/errors.js';
import { holdPendingSecret, releasePendingSecret } from '../../home/pending-secrets.js';
import type { HomePaths } from '../../home/paths.js';
import { fileEventScope } from '../../vault/file-events.js';

/** The name of the write-back's file events, for the test kill scope (file-events.ts). */
export const REFRESH_TOKEN_WRITE_BACK = 'refresh-token-write-back';

type RefreshTokenWrite = 'saved' | 'changed_meanwhile';

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

interface RefreshTokenWriteBackParts {
  readonly vaultPath: string;
  /** Where the received token is held until the vault has it (src/home/pending-secrets.ts). */
  readonly paths: HomePaths;
  readonly vault: VaultOptions;
  readonly state: { vault(): UnlockedVault; learnMinted(name: string, token: Uint8Array): void };
  readonly tokens: { expectOwnChange(name: string): void };
  /** Adopts the generation just written (vault-follow.ts). */
  readonly follower: { refresh(): Promise<void> };
  readonly log: (line: string) => void;
}

/**
 * The daemon's keeper of a rotated refresh token: held durably first, one
 * sealed line appended to the pending file the next start folds into the
 * vault (the issuer refuses the old token from now on, so a kill at any file
 * event after the answer must not lose the new one: pending-secrets.ts);
 * then learnt by the redactor (it is a secret from now on), saved with the
 * held vault key, dropped from the pending file, and the new generation
 * adopted. A failed save is logged, never thrown, and stays pending.
 */
export function refreshTokenWriteBack(p: RefreshTokenWriteBackParts): (credential: Credential, next: Uint8Array) => Promise<void> {
  return (cred, next) => fileEventScope(REFRESH_TOKEN_WRITE_BACK, () => writeBack(p, cred, next));
}

async function writeBack(p: RefreshTokenWriteBackParts, cred: Credential, next: Uint8Array): Promise<void> {
  const name = cred.meta.name;
  const sent = cred.secret['refresh_token'];
  const entry = sent === undefined ? undefined : { name, part: 'refresh_token', sent: Uint8Array.from(sent), next: Uint8Array.from(next) };
  let key: Uint8Array | undefined;
  try {
    if (entry !== undefined) {
      key = Uint8Array.from(p.state.vault().deriveKey('pending-secret'));
      await holdPendingSecret(p.paths, key, entry);
    }
  } catch (e) {
    p.log(`credential ${name}: the rotated refresh token could not be held for the next start (${isPosternError(e) ? e.code : 'error'})`);
  }
  p.state.learnMinted(name, next);
  if (sent === undefined || entry === undefined) return;
  p.tokens.expectOwnChange(name);
  try {
    const r = await keepRotatedRefreshToken(p.vaultPath, p.state.vault(), name, sent, next, p.vault);
    p.log(r === 'saved' ? `credential ${name}: the rotated refresh token was saved to the vault` : `credential ${name}: changed in the vault meanwhile; the rotated refresh token was not saved`);
    if (key !== undefined) await releasePendingSecret(p.paths, key, entry);
    await p.follower.refresh();
  } catch (e) {
    p.log(`credential ${name}: the rotated refresh token could not be saved (${isPosternError(e) ? e.code : 'error'}); it is kept for the next start`);
  } finally {
    key?.fill(0);
    entry.sent.fill(0);
    entry.next.fill(0);
  }
}
