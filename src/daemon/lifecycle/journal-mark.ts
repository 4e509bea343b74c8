/**
 * The vault's record of the journal this home keeps (vault/FORMAT.md §4,
 * `journal`), from the daemon: at start, a journal the vault does not name
 * yet (a new home's first journal, or a vault written before the record
 * existed) is saved into it at once; after that every save of the daemon's
 * carries the heads the anchor file last made durable. With that record a
 * journal removed together with its anchor and checkpoints is refused at the
 * next start (JOURNAL_ANCHOR_MISMATCH), never taken for a new home.
 *
 * Invariants: the vault never records heads ahead of the anchor file (only
 * what a write made durable), so a crash cannot leave the vault leading the
 * anchor; a save that fails is logged and the daemon runs on (the anchor and
 * the checkpoints still guard the journal; the next save records it).
 */
import type { AnchorKeeper, RecordedJournal } from '../../journal/anchor/index.js';
import { checkpointMark } from '../../journal/checkpoint/vault-mark.js';
import { isPosternError } from '../../rules/errors.js';
import { withVaultWriter, type UnlockedVault, type VaultOptions } from '../../vault/index.js';

/** The journal and heads the anchor file vouches for now, and the checkpoint file as it is (checkpoint/vault-mark.ts). */
export function anchoredHeads(keeper: AnchorKeeper, checkpointsPath: string): () => RecordedJournal {
  return () => {
    const w = keeper.written;
    const key = keeper.checkpointKey;
    let checkpoints = null;
    try {
      checkpoints = key === null ? null : checkpointMark(checkpointsPath, key);
    } catch {
      // unreadable now: the vault keeps the mark it has
    }
    return { id: w.journal_id, activity: w.activity, sessions: w.sessions, checkpoints };
  };
}

/** Saves the journal into the vault when the vault does not name it yet, or has not recorded the checkpoints yet. */
export async function recordJournalInVault(vaultPath: string, held: UnlockedVault, heads: () => RecordedJournal, opts: VaultOptions, log: (line: string) => void): Promise<void> {
  const now = heads();
  const recorded = held.journal;
  if (recorded?.id === now.id && ((recorded.checkpoints ?? null) !== null || (now.checkpoints ?? null) === null)) return;
  try {
    await withVaultWriter(vaultPath, { held }, (v) => v.recordJournal(now), opts);
  } catch (e) {
    log(`the vault could not record journal ${now.id} (${isPosternError(e) ? e.code : 'error'}): the next save records it`);
  }
}
