/**
 * Every command that saves the vault (and the daemon, when an operator accepts
 * a catalog over the operator channel) goes through `writeVault`: the
 * writer lock, the save, and — when no daemon runs for the home — the journal
 * anchor told the new vault generation, so a copy of the vault older than this
 * save is refused at the next daemon start (VAULT_ROLLED_BACK) even though no
 * daemon saw the save. A running daemon records it itself when its vault
 * follower adopts the generation (src/daemon/vault-follow.ts).
 *
 * Invariants: the anchor is written only under the daemon lock (so never
 * beside a running keeper), only if it authenticates with the vault's
 * journal-anchor key (a forged anchor is not blessed; the daemon reports it),
 * and only forward (a generation at or below the anchored one changes
 * nothing). The key copy is zeroed on every path. A home without an anchor
 * yet (no daemon ever started) gets none: the first start creates it.
 */
import type { Clock } from '../clock/index.js';
import { takeDaemonLock } from './daemon-lock.js';
import type { HomePaths } from './paths.js';
import { anchorIsAuthentic, readAnchor, sealAnchor, writeAnchor } from '../journal/anchor/index.js';
import { isPosternError } from '../rules/errors.js';
import { withVaultWriter, type VaultOptions, type VaultSave, type VaultUnlock } from '../vault/index.js';
import type { UnlockedVault } from '../vault/unlocked-vault.js';

/** What a vault writer needs from its caller (the CLI's context, or the daemon). */
export interface WriterContext {
  readonly paths: HomePaths;
  readonly clock: Clock;
  /** The options of every vault operation (clock and key-derivation profile). */
  readonly vault: VaultOptions;
  out(line: string): void;
}

/** What the anchor did with a saved generation. */
export type AnchorFollow = 'recorded' | 'current' | 'daemon_running' | 'no_anchor' | 'not_authentic' | 'not_saved' | 'failed';

/** Records `generation` in the anchor if no daemon holds the home. */
export async function anchorVaultGeneration(paths: HomePaths, key: Uint8Array, generation: number, clock: Clock): Promise<AnchorFollow> {
  let lock: Awaited<ReturnType<typeof takeDaemonLock>>;
  try {
    lock = await takeDaemonLock(paths);
  } catch (e) {
    if (isPosternError(e, 'DAEMON_RUNNING')) return 'daemon_running';
    throw e;
  }
  try {
    const stored = readAnchor(paths.anchor, key);
    if (stored === undefined) return 'no_anchor';
    if (!anchorIsAuthentic(key, stored)) return 'not_authentic';
    if (stored.record.vault_generation >= generation) return 'current';
    const record = { ...stored.record, counter: stored.record.counter + 1, vault_generation: generation, at: clock.now().toISOString() };
    writeAnchor(paths.anchor, sealAnchor(key, record), true);
    return 'recorded';
  } finally {
    await lock.release();
  }
}

async function followQuietly(paths: HomePaths, key: Uint8Array, generation: number, clock: Clock): Promise<AnchorFollow> {
  try {
    return await anchorVaultGeneration(paths, key, generation, clock);
  } catch {
    return 'failed';
  }
}

/**
 * `withVaultWriter` for CLI commands. `afterSave` runs first (the command's
 * own files), then the anchor follows the saved generation. The vault is
 * saved whatever the anchor does; an anchor that could not follow is said
 * in one line (the daemon's next start compares the two and explains).
 */
export async function writeVault<T>(
  ctx: WriterContext,
  unlock: VaultUnlock,
  fn: (v: UnlockedVault) => T | Promise<T>,
  afterSave?: (result: T, saved: VaultSave) => Promise<void>,
): Promise<{ result: T; anchor: AnchorFollow }> {
  let key: Uint8Array | undefined;
  let anchor = 'not_saved' as AnchorFollow;
  let generation = 0;
  try {
    const result = await withVaultWriter(
      ctx.paths.vault,
      unlock,
      async (v) => {
        const r = await fn(v);
        key = Uint8Array.from(v.deriveKey('journal-anchor'));
        return r;
      },
      ctx.vault,
      async (r, saved) => {
        await afterSave?.(r, saved);
        if (saved === null || key === undefined) return;
        generation = saved.generation;
        anchor = await followQuietly(ctx.paths, key, saved.generation, ctx.clock);
      },
    );
    if (anchor === 'failed' || anchor === 'not_authentic') {
      ctx.out(`note: the journal anchor did not record vault generation ${generation} (${anchor === 'failed' ? 'it could not be written' : 'it does not authenticate'}): see \`postern anchor status\``);
    }
    return { result, anchor };
  } finally {
    key?.fill(0);
  }
}
