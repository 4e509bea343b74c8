/**
 * Every command that saves the vault (and the daemon, when an operator accepts
 * a catalog over the operator channel) goes through `writeVault`: the
 * writer lock, the save as one crash-atomic home change, and — when no daemon runs for the home — the journal
 * anchor told the new vault generation, so a copy of the vault older than this
 * save is refused at the next daemon start (VAULT_ROLLED_BACK) even though no
 * daemon saw the save. A running daemon records it itself when its vault
 * follower adopts the generation (src/daemon/lifecycle/vault-follow.ts).
 *
 * Invariants: the anchor is written only under the daemon lock (so never
 * beside a running keeper), only if it authenticates with the vault's
 * journal-anchor key (a forged anchor is not blessed; the daemon reports it),
 * and only forward (a generation at or below the anchored one changes
 * nothing). The key copy is zeroed on every path. A home without an anchor
 * yet (no daemon ever started) gets none: the first start creates it.
 *
 * Every save also records in the vault the journal the anchor names and the
 * heads it vouches for (vault/FORMAT.md §4, `journal`; `anchoredJournal`) —
 * or, for a change that writes a new anchor itself, the journal it names
 * (`journalMark`) —, so
 * a journal removed together with its anchor and checkpoints is refused, not
 * taken for a new home.
 */
import type { Clock } from '../clock/index.js';
import { takeDaemonLock } from './daemon-lock.js';
import type { HomePaths } from './paths.js';
import { anchorFileText, anchorIsAuthentic, readAnchor, sealAnchor, type RecordedJournal } from '../journal/anchor/index.js';
import { HomeChange } from './change-record.js';
import { checkpointMark } from '../journal/checkpoint/vault-mark.js';
import { publicKeyOf } from '../journal/checkpoint/signature.js';
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

/**
 * The journal an authentic anchor names, with the heads it vouches for: what
 * a save records in the vault. Undefined without an anchor, or when it does
 * not authenticate or cannot be read (the vault keeps what it recorded).
 */
export function anchoredJournal(anchorPath: string, key: Uint8Array): RecordedJournal | undefined {
  try {
    const stored = readAnchor(anchorPath, key);
    if (stored === undefined || !anchorIsAuthentic(key, stored)) return undefined;
    const r = stored.record;
    return { id: r.journal_id, activity: r.activity, sessions: r.sessions };
  } catch {
    return undefined;
  }
}

/** The anchored journal with the checkpoint file as it is now (journal/checkpoint/vault-mark.ts); unreadable: the vault keeps its mark. */
function withCheckpoints(named: RecordedJournal | undefined, path: string, v: UnlockedVault): RecordedJournal | undefined {
  if (named === undefined) return undefined;
  try {
    return { ...named, checkpoints: checkpointMark(path, publicKeyOf(v.deriveKey('journal-checkpoint'))) };
  } catch {
    return named;
  }
}

/** What the anchor did with a saved generation. */
type AnchorFollow = 'recorded' | 'current' | 'daemon_running' | 'no_anchor' | 'not_authentic' | 'not_saved' | 'failed';

/** The anchor's new file staged into `change`, and the daemon lock held until the change is committed. */
interface StagedFollow {
  readonly follow: AnchorFollow;
  release(): Promise<void>;
}

const NO_LOCK = (): Promise<void> => Promise.resolve();

/**
 * Stages `generation` into the anchor if no daemon holds the home: the daemon
 * lock is taken here and held until `release` (after the change's commit).
 */
async function stageAnchorGeneration(paths: HomePaths, key: Uint8Array, generation: number, clock: Clock, change: HomeChange): Promise<StagedFollow> {
  let lock: Awaited<ReturnType<typeof takeDaemonLock>>;
  try {
    lock = await takeDaemonLock(paths);
  } catch (e) {
    if (isPosternError(e, 'DAEMON_RUNNING')) return { follow: 'daemon_running', release: NO_LOCK };
    throw e;
  }
  const done = (follow: AnchorFollow): StagedFollow => ({ follow, release: () => lock.release() });
  try {
    const stored = readAnchor(paths.anchor, key);
    if (stored === undefined) return done('no_anchor');
    if (!anchorIsAuthentic(key, stored)) return done('not_authentic');
    if (stored.record.vault_generation >= generation) return done('current');
    const record = { ...stored.record, counter: stored.record.counter + 1, vault_generation: generation, at: clock.now().toISOString() };
    change.write(paths.anchor, anchorFileText(sealAnchor(key, record)));
    return done('recorded');
  } catch (e) {
    await lock.release();
    throw e;
  }
}

/** Records `generation` in the anchor if no daemon holds the home (a change of its own). */
export async function anchorVaultGeneration(paths: HomePaths, key: Uint8Array, generation: number, clock: Clock): Promise<AnchorFollow> {
  const change = new HomeChange(paths, 'anchor follow');
  const staged = await stageAnchorGeneration(paths, key, generation, clock, change);
  try {
    await change.commit();
    return staged.follow;
  } finally {
    await staged.release();
  }
}

async function stageQuietly(paths: HomePaths, key: Uint8Array, generation: number, clock: Clock, change: HomeChange): Promise<StagedFollow> {
  try {
    return await stageAnchorGeneration(paths, key, generation, clock, change);
  } catch {
    return { follow: 'failed', release: NO_LOCK };
  }
}

/**
 * `withVaultWriter` for CLI commands and the daemon's operator actions, as
 * one home change (change-record.ts): the sealed vault, the command's own
 * files (staged by `afterSave` into `change`) and the anchor's record of the
 * saved generation are committed together, so a kill at any point leaves all
 * of them before or all of them after. An anchor that cannot follow (a daemon
 * runs, or it does not authenticate) leaves the rest of the change as it is,
 * said in one line (the daemon's next start compares the two and explains).
 */
export async function writeVault<T>(
  ctx: WriterContext,
  unlock: VaultUnlock,
  fn: (v: UnlockedVault) => T | Promise<T>,
  afterSave?: (result: T, saved: VaultSave, change: HomeChange) => Promise<void>,
  command = 'vault save',
  opts: { readonly journalMark?: RecordedJournal } = {},
): Promise<{ result: T; anchor: AnchorFollow }> {
  let key: Uint8Array | undefined;
  let anchor = 'not_saved' as AnchorFollow;
  let generation = 0;
  const change = new HomeChange(ctx.paths, command);
  try {
    const result = await withVaultWriter(
      ctx.paths.vault,
      unlock,
      async (v) => {
        const r = await fn(v);
        key = Uint8Array.from(v.deriveKey('journal-anchor'));
        return r;
      },
      { ...ctx.vault, stage: change.vaultStage(), journalMark: (v) => opts.journalMark ?? withCheckpoints(anchoredJournal(ctx.paths.anchor, v.deriveKey('journal-anchor')), ctx.paths.checkpoints, v) },
      async (r, saved) => {
        await afterSave?.(r, saved, change);
        let staged: StagedFollow = { follow: 'not_saved', release: NO_LOCK };
        if (saved !== null && key !== undefined) {
          generation = saved.generation;
          staged = await stageQuietly(ctx.paths, key, saved.generation, ctx.clock, change);
        }
        try {
          await change.commit();
          anchor = staged.follow;
        } finally {
          await staged.release();
        }
      },
    );
    if (anchor === 'failed' || anchor === 'not_authentic') {
      ctx.out(`note: the journal anchor did not record vault generation ${generation} (${anchor === 'failed' ? 'it could not be read' : 'it does not authenticate'}): see \`postern anchor status\``);
    }
    return { result, anchor };
  } finally {
    key?.fill(0);
  }
}
