/**
 * The vault's record of the checkpoint file (vault/FORMAT.md §4,
 * `journal.checkpoints`): at each save, how many well-formed checkpoints the
 * file held and which was the last one signed by the vault's own key (the
 * SHA-256 of that whole line, record and signature). The file is append-only,
 * so a home whose file no longer holds that line, or holds fewer lines, lost
 * checkpoints: deleted, emptied or truncated back — and an older journal put
 * back with its anchor would then be judged against no checkpoint at all.
 * Such a home is refused (JOURNAL_ANCHOR_MISMATCH, `checkpoints_lost`) by the
 * daemon's start and every command that opens the journals, and reported by
 * `doctor --unlock` and `anchor status`.
 *
 * Invariants: the mark names only a line that verifies under the vault's
 * current checkpoint key (a line anyone could write is never the mark); the
 * check needs the recorded line itself, so no edited or re-signed line
 * stands in for it. No mark (a vault saved before the record existed, or
 * right after the operator started or restored a journal) checks nothing.
 */
import { PosternError } from '../../rules/errors.js';
import { canonicalJson, sha256Hex } from '../json.js';
import { readCheckpoints } from './file.js';
import { checkpointIsSigned, type StoredCheckpoint } from './record.js';

/** What the vault records of the checkpoint file. */
interface CheckpointMark {
  /** Well-formed lines in the file at the save. */
  readonly count: number;
  /** The counter of the last line signed by the vault's key. */
  readonly counter: number;
  /** SHA-256 of that line (record and signature). */
  readonly digest: string;
}

function digestOf(c: StoredCheckpoint): string {
  return sha256Hex(canonicalJson(c));
}

/** The mark of the file as it is now, for the vault's checkpoint key `publicKey`; null when no line is signed by it. */
export function checkpointMark(path: string, publicKey: string): CheckpointMark | null {
  const lines = readCheckpoints(path).filter((l): l is StoredCheckpoint => l !== 'malformed');
  for (let i = lines.length - 1; i >= 0; i--) {
    const c = lines[i]!;
    if (c.record.public_key === publicKey && checkpointIsSigned(c)) return { count: lines.length, counter: c.record.counter, digest: digestOf(c) };
  }
  return null;
}

/** One line for a person when the file does not hold what the vault recorded; null when it does (or nothing was recorded). */
export function checkpointsShortOfVault(path: string, mark: CheckpointMark | null | undefined): string | null {
  if (mark === null || mark === undefined) return null;
  const lines = readCheckpoints(path).filter((l): l is StoredCheckpoint => l !== 'malformed');
  const found = lines.some((c) => digestOf(c) === mark.digest && checkpointIsSigned(c));
  if (lines.length === 0) return `the checkpoint file is missing or empty, but the vault recorded ${mark.count} signed checkpoint(s) at its last save: it was deleted or emptied`;
  if (!found) return `the checkpoint file no longer holds checkpoint #${mark.counter}, the last one the vault recorded at a save: it was truncated or replaced`;
  if (lines.length < mark.count) return `the checkpoint file holds ${lines.length} checkpoint(s), fewer than the ${mark.count} the vault recorded at its last save: lines were removed`;
  return null;
}

/** The refusal of a home whose checkpoints are behind the vault's record. */
export function checkpointsLost(line: string): PosternError {
  return new PosternError(
    'JOURNAL_ANCHOR_MISMATCH',
    `${line}; an older journal put back with its anchor could not be told from this one, so a completed idempotency key could run again: put back journal.checkpoints.jsonl from a backup, or start a new journal with \`postern anchor new-journal\``,
    { details: { reason: 'checkpoints_lost' } },
  );
}
