/**
 * Keeping a minted value in the vault, from the daemon: an access token, a
 * GitHub App installation token or the App's JWT is a secret for as long as
 * the issuer accepts it, which may outlive this daemon. The redactor learns
 * it first; then the daemon saves it among the vault's remembered values
 * (FORMAT.md §4) with the data key it holds, under the writer lock, with when
 * it expires; then it adopts the generation it wrote. A daemon started later
 * builds its redactor from those values, so a target that echoes a token
 * minted before a restart still gets it redacted.
 *
 * Invariants: the value is kept before it is used (the caller waits); a save
 * that fails is CREDENTIAL_UNAVAILABLE, so the value is never sent (a target
 * cannot echo what it never saw) and the call can be tried again; no value is
 * returned or logged.
 */
import { isPosternError, PosternError } from '../../rules/errors.js';
import { withVaultWriter, type UnlockedVault, type VaultOptions } from '../../vault/index.js';
import { MINTED_PART } from '../../vault/credentials.js';

interface RememberMintedParts {
  readonly vaultPath: string;
  readonly vault: VaultOptions;
  readonly state: { vault(): UnlockedVault; learnMinted(name: string, token: Uint8Array): void };
  /** Adopts the generation just written (vault-follow.ts). */
  readonly follower: { refresh(): Promise<void> };
  readonly log: (line: string) => void;
}

/** Saves one minted value of credential `name` among the remembered values, until `validUntil` (null: the retention). */
export async function keepMintedValue(vaultPath: string, held: UnlockedVault, name: string, value: Uint8Array, validUntil: Date | null, opts: VaultOptions): Promise<void> {
  const meta = held.get(name)?.meta;
  if (meta === undefined) throw new PosternError('CREDENTIAL_MISSING', `the credential "${name}" is not in the vault`);
  await withVaultWriter(
    vaultPath,
    { held },
    (v) => v.remember({ name, kind: meta.kind, fields: { ...meta.fields }, secret: { [MINTED_PART]: value }, source: 'minted', until: validUntil }),
    opts,
  );
}

/** The daemon's `learn` for minted values: the redactor, then the vault, then the new generation adopted. */
export function rememberMinted(p: RememberMintedParts): (name: string, value: Uint8Array, validUntil: Date | null) => Promise<void> {
  return async (name, value, validUntil) => {
    p.state.learnMinted(name, value);
    try {
      await keepMintedValue(p.vaultPath, p.state.vault(), name, value, validUntil, p.vault);
    } catch (e) {
      const code = isPosternError(e) ? e.code : 'error';
      p.log(`credential ${name}: a minted token could not be kept in the vault (${code}); it was not used`);
      throw new PosternError('CREDENTIAL_UNAVAILABLE', `credential ${name}: the minted token could not be kept in the vault for redaction (${code}); nothing was sent with it, try again`, {
        details: { credential: name },
        sideEffectStarted: false,
      });
    }
    await p.follower.refresh();
  };
}
