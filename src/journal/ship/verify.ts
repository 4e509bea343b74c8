/**
 * `postern audit verify --from postgres://…` for one shipped home: its two
 * chains walked (chain.ts) and judged against the last signed checkpoint it
 * shipped (checkpoint/inspect.ts), on the copy remote.ts makes — the same
 * code and the same findings as a local `audit verify`, plus the rows that
 * could not be copied or sit under another seq.
 *
 * An accepted gap (ship/gaps.ts) whose record is signed by the home's
 * checkpoint key is skipped by the chain walk (the entries after it link to
 * the base it names) and reported as such; one that is not is a finding.
 *
 * A database keeps history a home may since have pruned: the copy may start
 * before the checkpoint's base. That is no finding when the copy holds the
 * checkpoint's base entry with its hash (the checkpoint is then judged as if
 * the copy started there); anything else is the checkpoint's base_mismatch.
 */
import type { JournalFacts, JournalFileFacts, JournalName } from '../index.js';
import type { ChainHead, ChainReport } from '../types.js';
import { keyFingerprint } from '../checkpoint/signature.js';
import { GAP_PROBLEMS, judgeGap, type GapVerdict } from './gaps.js';
import { describeCheckpointInspection, judgeCheckpointLines, type CheckpointInspection } from '../checkpoint/inspect.js';
import { lastCheckpoint, walkTrust } from '../checkpoint/record.js';
import type { RemoteHome, RowFinding } from './remote.js';

export interface RemoteVerdict {
  readonly ok: boolean;
  readonly sessions: ChainReport;
  readonly activity: ChainReport;
  readonly rows: readonly RowFinding[];
  /** Every accepted gap the database holds for this home: those without a problem are skipped by the walk. */
  readonly gaps: readonly GapVerdict[];
  readonly checkpoint: { readonly ok: boolean; readonly line: string; readonly inspection: CheckpointInspection };
}

/** `key`: the fingerprint or public key this home's checkpoints must be signed by. */
export function verifyRemoteHome(r: RemoteHome, key?: string): RemoteVerdict {
  const opts = key === undefined ? {} : { root: key };
  const walk = walkTrust(r.checkpoints, key);
  const judgedGaps = r.gaps.map((g) => judgeGap(g, r.home.home_id, walk.keys));
  const skips = (journal: JournalName): Map<number, ChainHead> => new Map(judgedGaps.flatMap((g) => (g.record !== undefined && g.journal === journal ? [[g.record.after, g.record.base] as const] : [])));
  const sessions = r.journals.sessions.verify(skips('sessions'));
  const activity = r.journals.activity.verify(skips('activity'));
  const last = lastCheckpoint(walk.accepted, r.home.home_id);
  const facts = r.journals.facts();
  const f = { sessions: withGaps(facts.sessions, skips('sessions')), activity: withGaps(facts.activity, skips('activity')) };
  const judged: JournalFacts = last === undefined ? f : { sessions: startingAt(f.sessions, last.record.bases.sessions), activity: startingAt(f.activity, last.record.bases.activity) };
  const inspection = judgeCheckpointLines(r.checkpoints, judged, { kind: 'missing', journal: 'activity' }, opts);
  const d = describeCheckpointInspection(inspection, key !== undefined);
  const gaps = judgedGaps.map(({ record: _record, ...g }) => g);
  const ok = sessions.ok && activity.ok && r.rows.length === 0 && gaps.every((g) => g.problem === null) && d.ok;
  return { ok, sessions, activity, rows: r.rows, gaps, checkpoint: { ...d, inspection } };
}

/** The copy's facts with the hashes of its accepted gaps' bases (entries the home pruned: the gap's record names them). */
function withGaps(f: JournalFileFacts, skips: ReadonlyMap<number, ChainHead>): JournalFileFacts {
  if (skips.size === 0) return f;
  const bases = new Map([...skips.values()].map((b) => [b.seq, b.hash]));
  return { ...f, hashAt: (seq) => f.hashAt(seq) ?? bases.get(seq) };
}

/** The copy's facts with the checkpoint's base, when the copy holds that base entry (it kept what the home pruned) or an accepted gap names it. */
function startingAt(f: JournalFileFacts, base: JournalFileFacts['base']): JournalFileFacts {
  if (base.seq <= f.base.seq || f.hashAt(base.seq) !== base.hash) return f;
  return { ...f, base, hashAt: (seq) => f.hashAt(seq) };
}

/** One line for an accepted gap: never silent, accepted or not. */
export function describeGap(g: GapVerdict): string {
  const range = `${g.journal} journal: entries ${g.from} to ${g.to}`;
  if (g.problem !== null) return `${range}: a gap record that does not count: ${GAP_PROBLEMS[g.problem]} (those entries are missing)`;
  return `${range}: ACCEPTED GAP: pruned on the home before they were shipped; accepted at ${g.accepted_at ?? '?'}, signed by ${keyFingerprint(g.signed_by ?? '')}`;
}

export const SHIPPED_ROW_PROBLEMS: Readonly<Record<RowFinding['problem'], string>> = {
  unreadable: 'the stored row is not an entry of this journal (edited)',
  misplaced: 'the stored row is the entry of another seq (reordered)',
};

export function describeRow(f: RowFinding): string {
  return `${f.journal} journal: row at seq ${f.seq}: ${SHIPPED_ROW_PROBLEMS[f.problem]}`;
}

