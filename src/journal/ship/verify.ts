/**
 * `postern audit verify --from postgres://…` for one shipped home: its two
 * chains walked (chain.ts) and judged against the last signed checkpoint it
 * shipped (checkpoint/inspect.ts), on the copy remote.ts makes — the same
 * code and the same findings as a local `audit verify`, plus what only a
 * database can get wrong: rows that could not be copied or sit under another
 * seq, checkpoint lines that vouch for nothing, a home record whose key the
 * checkpoints do not lead to, and less than a shipping receipt says the
 * database held (ship/receipts.ts).
 *
 * Invariants:
 * - absence is never "none yet" where the database shows there was more: no
 *   signed checkpoint with entries shipped, or with a key in the home's
 *   record, is a finding;
 * - every checkpoint line counts: one that is not a checkpoint, does not
 *   verify or is signed by a key the home's walk does not reach is a finding
 *   (a line shipped as `malformed`, the home's own torn line, only a note);
 * - the verdict names the key it trusted, pinned or not, so a person can
 *   compare it with `postern audit key` on the home.
 *
 * An accepted gap (ship/gaps.ts) whose record is signed by the home's
 * checkpoint key is skipped by the chain walk (the entries after it link to
 * the base it names) and reported as such; one that is not is a finding.
 *
 * A database keeps history a home may since have pruned: the copy may start
 * before the checkpoint's base. That is no finding when the copy holds the
 * checkpoint's base entry with its hash (the checkpoint is then judged as if
 * the copy started there); anything else is the checkpoint's base_mismatch.
 * A chain pruned before its first shipment starts at its shipped base; the
 * claims that prune kept are not shipped, so their digest is judged only as
 * the signed checkpoints name it.
 */
import type { JournalFacts, JournalFileFacts, JournalName } from '../index.js';
import type { ChainBase, ChainHead, ChainReport } from '../types.js';
import { keyFingerprint, namesKey } from '../checkpoint/signature.js';
import { GAP_PROBLEMS, judgeGap, type GapVerdict } from './gaps.js';
import { describeCheckpointInspection, judgeCheckpointLines, type CheckpointInspection } from '../checkpoint/inspect.js';
import { checkpointIsSigned, lastCheckpoint, walkTrust, type StoredCheckpoint, type TrustWalk } from '../checkpoint/record.js';
import { judgeReceipts } from './receipts.js';
import type { RemoteHome, RowFinding, ShippedHome } from './remote.js';

/** The key the home's checkpoints were judged under, and where it came from. */
interface RemoteTrust {
  /** The root key (hex), or null when no checkpoint line verifies. */
  readonly key: string | null;
  /** Every key the walk reached from it (key changes), root first. */
  readonly keys: readonly string[];
  /** Named by the verifier (`--key`), rather than taken from the first shipped checkpoint. */
  readonly pinned: boolean;
}

export interface RemoteVerdict {
  readonly ok: boolean;
  readonly sessions: ChainReport;
  readonly activity: ChainReport;
  readonly rows: readonly RowFinding[];
  /** Every accepted gap the database holds for this home: those without a problem are skipped by the walk. */
  readonly gaps: readonly GapVerdict[];
  readonly checkpoint: { readonly ok: boolean; readonly line: string; readonly inspection: CheckpointInspection };
  readonly trust: RemoteTrust;
  /** What is wrong with the checkpoint lines, the home's record or against the receipts: one line each. */
  readonly findings: readonly string[];
}

/**
 * The root the walk starts from. Pinned to a key (`--key`) that the first line's key leads to through key
 * changes (the key `postern audit key` prints after a passphrase change), the walk starts at that first
 * key, so the lines signed before the change are trusted too; a key it does not lead to is the root itself.
 */
function rootFor(lines: RemoteHome['checkpoints'], key: string | undefined): string | undefined {
  if (key === undefined) return undefined;
  const fromFirst = walkTrust(lines);
  return fromFirst.keys.some((k) => namesKey(key, k)) ? fromFirst.keys[0] : key;
}

/** `key`: the fingerprint or public key this home's checkpoints must be signed by. */
export function verifyRemoteHome(r: RemoteHome, key?: string): RemoteVerdict {
  const root = rootFor(r.checkpoints, key);
  const opts = root === undefined ? {} : { root };
  const walk = walkTrust(r.checkpoints, root);
  const judgedGaps = r.gaps.map((g) => judgeGap(g, r.home.home_id, walk.keys));
  const skips = (journal: JournalName): Map<number, ChainHead> => new Map(judgedGaps.flatMap((g) => (g.record !== undefined && g.journal === journal ? [[g.record.after, g.record.base] as const] : [])));
  const sessions = r.journals.sessions.verify(skips('sessions'));
  const activity = r.journals.activity.verify(skips('activity'));
  const last = lastCheckpoint(walk.accepted, r.home.home_id);
  const facts = r.journals.facts();
  const f = { sessions: asShipped(withGaps(facts.sessions, skips('sessions')), r.bases.sessions), activity: asShipped(withGaps(facts.activity, skips('activity')), r.bases.activity) };
  const judged: JournalFacts = last === undefined ? f : { sessions: startingAt(f.sessions, last.record.bases.sessions), activity: startingAt(f.activity, last.record.bases.activity) };
  const inspection = judgeCheckpointLines(r.checkpoints, judged, { kind: 'missing', journal: 'activity' }, opts);
  const shipped = entriesShipped(facts);
  const d = describeShipped(inspection, key !== undefined, shipped);
  const gaps = judgedGaps.map(({ record: _record, ...g }) => g);
  const heads = { sessions: headWithGaps(facts.sessions, skips('sessions')), activity: headWithGaps(facts.activity, skips('activity')) };
  const findings = [...lineFindings(r, walk), ...recordFindings(r.home, walk, r.checkpoints.length), ...judgeReceipts(r.receipts, { lineTexts: r.lineTexts, heads })];
  const ok = sessions.ok && activity.ok && r.rows.length === 0 && gaps.every((g) => g.problem === null) && d.ok && findings.length === 0;
  const trust = { key: walk.keys[0] ?? null, keys: walk.keys, pinned: key !== undefined };
  return { ok, sessions, activity, rows: r.rows, gaps, checkpoint: { ...d, inspection }, trust, findings };
}

/** How many entries the copy holds, both journals. */
function entriesShipped(f: JournalFacts): number {
  return f.sessions.head.seq - f.sessions.base.seq + (f.activity.head.seq - f.activity.base.seq);
}

/**
 * The checkpoint's line. No signed checkpoint is "none yet" only while the database holds no entry of the
 * home: the shipper ships a checkpoint in the very pass that ships the entries it covers, and a home's
 * daemon signs one at every start, so entries that nothing signed vouches for are checkpoints removed (or a
 * first shipment caught half-way, which the next run no longer sees).
 */
function describeShipped(i: CheckpointInspection, pinned: boolean, shipped: number): { ok: boolean; line: string } {
  if (i.kind === 'none' && !pinned && shipped > 0) {
    return { ok: false, line: `no signed checkpoint, but the database holds ${shipped} entries of this home: its checkpoints were removed (or its first shipment is still under way: verify again once it is done)` };
  }
  return describeCheckpointInspection(i, pinned);
}

/** The highest seq the database holds of a journal, counting a gap accepted at its end (its base is where shipping went on). */
function headWithGaps(f: JournalFileFacts, skips: ReadonlyMap<number, ChainHead>): number {
  return Math.max(f.head.seq, ...[...skips.values()].map((b) => b.seq));
}

/** Checkpoint lines that vouch for nothing: each is tampering, except a line the home itself shipped as torn. */
function lineFindings(r: RemoteHome, walk: TrustWalk): string[] {
  const accepted = new Set<StoredCheckpoint>(walk.accepted);
  const edited: number[] = [];
  const unsigned: number[] = [];
  const foreign: number[] = [];
  r.checkpoints.forEach((c, i) => {
    if (c === 'malformed') {
      if (r.lineTexts[i] !== 'malformed') edited.push(i + 1);
    } else if (!accepted.has(c)) (checkpointIsSigned(c) ? foreign : unsigned).push(i + 1);
  });
  const at = (lines: number[]): string => `${lines.length === 1 ? 'line' : 'lines'} ${lines.slice(0, 10).join(', ')}${lines.length > 10 ? ', …' : ''}`;
  return [
    ...(edited.length > 0 ? [`checkpoints: ${at(edited)} ${edited.length === 1 ? 'is' : 'are'} not a checkpoint: edited in the database`] : []),
    ...(unsigned.length > 0 ? [`checkpoints: ${at(unsigned)} ${unsigned.length === 1 ? 'does' : 'do'} not verify against ${unsigned.length === 1 ? 'its' : 'their'} signature: edited in the database`] : []),
    ...(foreign.length > 0 ? [`checkpoints: ${at(foreign)} signed by a key the home's checkpoints do not lead to: written by someone else`] : []),
  ];
}

/** The home's record against its checkpoints: the key it recorded at its first shipment must be one they are trusted under. */
function recordFindings(home: ShippedHome, walk: TrustWalk, lines: number): string[] {
  const recorded = home.public_key;
  if (recorded === null || walk.keys.includes(recorded)) return [];
  if (lines === 0) return [`checkpoints: the home's record names the key ${keyFingerprint(recorded)}, it shipped checkpoints signed by it, and the database holds none: they were removed`];
  return [`checkpoints: the home's record names the key ${keyFingerprint(recorded)}, which the checkpoints trusted here (${walk.keys.map(keyFingerprint).join(', ')}) do not lead to: checkpoints replaced, or the record edited`];
}

/**
 * The copy's facts with the base the database says the chain started at, claims digest included: the copy
 * holds no claims of pruned entries (remote.ts), so the digest the checkpoints judge is the shipped one.
 */
function asShipped(f: JournalFileFacts, shipped: ChainBase | undefined): JournalFileFacts {
  if (shipped === undefined || shipped.seq !== f.base.seq || shipped.hash !== f.base.hash || shipped.seq === 0) return f;
  return { ...f, base: shipped };
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

const SHIPPED_ROW_PROBLEMS: Readonly<Record<RowFinding['problem'], string>> = {
  unreadable: 'the stored row is not an entry of this journal (edited)',
  misplaced: 'the stored row is the entry of another seq (reordered)',
};

export function describeRow(f: RowFinding): string {
  return `${f.journal} journal: row at seq ${f.seq}: ${SHIPPED_ROW_PROBLEMS[f.problem]}`;
}

