/**
 * Building an audit bundle (format.ts) from the read-only journals and the
 * checkpoint file: for each selected call, its entries (first entry and
 * outcome) and the run of entries from each up to the first signed
 * checkpoint at or after it; the same for the sessions journal's entries of
 * the sessions those calls ran in, against the checkpoints' sessions heads. Calls with no checkpoint after their first entry
 * (journaled since the last one) are left out and reported; so is an outcome
 * past the last checkpoint (the call is then bundled without it).
 *
 * Invariant: the bundle holds only what the verifier checks — the rows
 * exactly as chained, checkpoints exactly as signed, catalog texts only with
 * a signed digest — so `verifyBundle` accepts what this builds.
 */
import { CONTENT_COLUMNS } from '../activity-schema.js';
import { SESSIONS_CONTENT_COLUMNS } from '../sessions.js';
import type { EntryRow } from '../chain.js';
import type { StoredCheckpoint } from '../checkpoint/record.js';
import type { Journals } from '../index.js';
import type { CallView } from '../types.js';
import { BUNDLE_FORMAT, BundleRowSchema, BundleSessionRowSchema, catalogPrefixOf, type Bundle, type BundleRow, type BundleSegment, type BundleSessionRow } from './format.js';

interface BuildInput {
  readonly journals: Journals;
  /** The selected calls (e.g. `listCalls(filter)`), in the order to list them. */
  readonly calls: readonly CallView[];
  /** The checkpoint lines the walk accepted (checkpoint/record.ts walkTrust), in file order. */
  readonly checkpoints: readonly StoredCheckpoint[];
  /** The accepted catalog text of a digest, when the home still holds it. */
  readonly catalogText: (digest: string) => string | undefined;
}

interface BuildResult {
  readonly bundle: Bundle;
  /** Calls left out: no checkpoint covers their first entry yet. */
  readonly uncovered: readonly string[];
  /** Bundled calls whose outcome is past the last checkpoint. */
  readonly outcomesLeftOut: number;
  /** Sessions entries of the bundled sessions journaled after the last checkpoint. */
  readonly sessionEntriesLeftOut: number;
}

function pick(r: EntryRow, columns: readonly string[]): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const c of columns) o[c] = r[c];
  return o;
}
const activityRow = (r: EntryRow): BundleRow => BundleRowSchema.parse(pick(r, CONTENT_COLUMNS));
const sessionRow = (r: EntryRow): BundleSessionRow => BundleSessionRowSchema.parse(pick(r, SESSIONS_CONTENT_COLUMNS));

/** Entries between two runs below which they are bundled as one (see ChainCover.runs). */
const MERGE_GAP = 256;

/**
 * One chain's side: which checkpoint head covers a seq (the first signed head
 * at or after it), and, once the entries to prove are known, the runs from the
 * lowest such entry up to each covering head.
 */
class ChainCover {
  private readonly byHead = new Map<number, StoredCheckpoint>();
  private readonly ends: number[];
  private readonly starts = new Map<number, number>();

  constructor(
    checkpoints: readonly StoredCheckpoint[],
    headOf: (c: StoredCheckpoint) => number,
    private readonly base: number,
  ) {
    for (const c of checkpoints) this.byHead.set(headOf(c), c); // the newest line of a head wins
    this.ends = [...this.byHead.keys()].sort((a, b) => a - b);
  }

  /** The covering head of a seq, or undefined when it is pruned or past the last checkpoint. */
  cover(seq: number): number | undefined {
    if (seq <= this.base) return undefined;
    let lo = 0;
    let hi = this.ends.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.ends[mid]! < seq) lo = mid + 1;
      else hi = mid;
    }
    return this.ends[lo];
  }

  /** Marks a seq to prove; false when nothing covers it. */
  take(seq: number): boolean {
    const e = this.cover(seq);
    if (e === undefined) return false;
    this.starts.set(e, Math.min(this.starts.get(e) ?? seq, seq));
    return true;
  }

  /**
   * The runs, in order: [first seq, covering head]. A run that starts within
   * MERGE_GAP entries of the previous one's end is joined to it (one run to
   * the later head): a few more entries instead of one more checkpoint and
   * run — sparse entries, as a session's are, would otherwise each bring
   * their own.
   */
  private runs(): [number, number][] {
    const out: [number, number][] = [];
    for (const end of [...this.starts.keys()].sort((a, b) => a - b)) {
      const start = this.starts.get(end)!;
      const last = out.at(-1);
      if (last !== undefined && start - last[1] <= MERGE_GAP) last[1] = end;
      else out.push([start, end]);
    }
    return out;
  }

  /** The checkpoints the runs end at, in head order. */
  used(): StoredCheckpoint[] {
    return this.runs().map(([, end]) => this.byHead.get(end)!);
  }

  segments<R>(kept: readonly StoredCheckpoint[], read: (afterSeq: number, fn: (r: EntryRow) => boolean | void) => void, row: (r: EntryRow) => R): BundleSegment<R>[] {
    return this.runs().map(([start, end]) => {
      const rows: R[] = [];
      let prev = '';
      read(start - 1, (r) => {
        if (r.seq > end) return false;
        if (rows.length === 0) prev = r.prev_hash;
        rows.push(row(r));
        return r.seq < end;
      });
      return { checkpoint: kept.indexOf(this.byHead.get(end)!), prev_hash: prev, rows };
    });
  }
}

export function buildBundle(input: BuildInput): BuildResult {
  const j = input.journals;
  const facts = j.facts();
  const journalId = facts.activity.journal_id ?? '';
  const mine = input.checkpoints.filter((c) => c.record.journal_id === journalId);
  const activity = new ChainCover(mine, (c) => c.record.activity.seq, facts.activity.base.seq);
  const sessions = new ChainCover(mine, (c) => c.record.sessions.seq, facts.sessions.base.seq);

  const uncovered: string[] = [];
  const selected: CallView[] = [];
  let outcomesLeftOut = 0;
  for (const v of input.calls) {
    const seqs = j.activityEntrySeqs(v.call.call_id);
    const head = seqs[0];
    if (head === undefined || activity.cover(head) === undefined) {
      uncovered.push(v.call.call_id);
      continue;
    }
    selected.push(v);
    for (const s of seqs) if (!activity.take(s)) outcomesLeftOut++;
  }

  const sessionIds = [...new Set(selected.flatMap((v) => (v.call.session_id === null ? [] : [v.call.session_id])))].sort();
  let sessionEntriesLeftOut = 0;
  for (const id of sessionIds) for (const s of j.sessionEntrySeqs(id)) if (s > facts.sessions.base.seq && !sessions.take(s)) sessionEntriesLeftOut++;

  const prefixes = new Set<string>();
  for (const v of selected) {
    const p = catalogPrefixOf(v.call.handler_revision);
    if (p !== null) prefixes.add(p);
  }
  const used = [...activity.used(), ...sessions.used()];
  // A signed full digest for each catalog prefix: from a segment checkpoint, else the first checkpoint that names it.
  const naming = [...prefixes].flatMap((p) => (used.some((c) => c.record.catalog_digest.startsWith(p)) ? [] : mine.filter((c) => c.record.catalog_digest.startsWith(p)).slice(0, 1)));
  // The key changes that lead to the keys, then those checkpoints, in file order.
  const keep = (c: StoredCheckpoint): boolean => used.includes(c) || naming.includes(c) || c.record.reason === 'key_change';
  const checkpoints = mine.filter(keep);
  const segments = activity.segments(checkpoints, (a, fn) => j.activityEntries(a, fn), activityRow);
  const sessionSegments = sessions.segments(checkpoints, (a, fn) => j.sessionsEntries(a, fn), sessionRow);

  const signed = [...new Set(checkpoints.map((c) => c.record.catalog_digest))];
  const catalogs = [...prefixes].sort().map((prefix) => {
    const digest = signed.find((d) => d.startsWith(prefix)) ?? null;
    const text = digest === null ? undefined : input.catalogText(digest);
    return { prefix, digest, text: text ?? null };
  });
  return {
    bundle: {
      format: BUNDLE_FORMAT,
      journal_id: journalId,
      calls: selected.map((v) => v.call.call_id),
      segments,
      checkpoints,
      catalogs,
      sessions: { ids: sessionIds.filter((id) => sessionSegments.some((g) => g.rows.some((r) => r.session_id === id))), segments: sessionSegments },
    },
    uncovered,
    outcomesLeftOut,
    sessionEntriesLeftOut,
  };
}
