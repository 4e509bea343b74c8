/**
 * `postern audit verify --from postgres://…` for one shipped home: its two
 * chains walked (chain.ts) and judged against the last signed checkpoint it
 * shipped (checkpoint/inspect.ts), on the copy remote.ts makes — the same
 * code and the same findings as a local `audit verify`, plus the rows that
 * could not be copied or sit under another seq.
 *
 * A database keeps history a home may since have pruned: the copy may start
 * before the checkpoint's base. That is no finding when the copy holds the
 * checkpoint's base entry with its hash (the checkpoint is then judged as if
 * the copy started there); anything else is the checkpoint's base_mismatch.
 */
import type { JournalFacts, JournalFileFacts } from '../index.js';
import type { ChainReport } from '../types.js';
import { describeCheckpointInspection, judgeCheckpointLines, type CheckpointInspection } from '../checkpoint/inspect.js';
import { lastCheckpoint, walkTrust } from '../checkpoint/record.js';
import type { RemoteHome, RowFinding } from './remote.js';

export interface RemoteVerdict {
  readonly ok: boolean;
  readonly sessions: ChainReport;
  readonly activity: ChainReport;
  readonly rows: readonly RowFinding[];
  readonly checkpoint: { readonly ok: boolean; readonly line: string; readonly inspection: CheckpointInspection };
}

/** `key`: the fingerprint or public key this home's checkpoints must be signed by. */
export function verifyRemoteHome(r: RemoteHome, key?: string): RemoteVerdict {
  const sessions = r.journals.sessions.verify();
  const activity = r.journals.activity.verify();
  const opts = key === undefined ? {} : { root: key };
  const walk = walkTrust(r.checkpoints, key);
  const last = lastCheckpoint(walk.accepted, r.home.home_id);
  const facts = r.journals.facts();
  const judged: JournalFacts = last === undefined ? facts : { sessions: startingAt(facts.sessions, last.record.bases.sessions), activity: startingAt(facts.activity, last.record.bases.activity) };
  const inspection = judgeCheckpointLines(r.checkpoints, judged, { kind: 'missing', journal: 'activity' }, opts);
  const d = describeCheckpointInspection(inspection, key !== undefined);
  const ok = sessions.ok && activity.ok && r.rows.length === 0 && d.ok;
  return { ok, sessions, activity, rows: r.rows, checkpoint: { ...d, inspection } };
}

/** The copy's facts with the checkpoint's base, when the copy holds that base entry (it kept what the home pruned). */
function startingAt(f: JournalFileFacts, base: JournalFileFacts['base']): JournalFileFacts {
  if (base.seq <= f.base.seq || f.hashAt(base.seq) !== base.hash) return f;
  return { ...f, base, hashAt: (seq) => f.hashAt(seq) };
}

export const SHIPPED_ROW_PROBLEMS: Readonly<Record<RowFinding['problem'], string>> = {
  unreadable: 'the stored row is not an entry of this journal (edited)',
  misplaced: 'the stored row is the entry of another seq (reordered)',
};

export function describeRow(f: RowFinding): string {
  return `${f.journal} journal: row at seq ${f.seq}: ${SHIPPED_ROW_PROBLEMS[f.problem]}`;
}

