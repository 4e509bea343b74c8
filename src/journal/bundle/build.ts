/**
 * Building an audit bundle (format.ts) from the read-only journals and the
 * checkpoint file: for each selected call, its entries (first entry and
 * outcome) and the run of entries from each up to the first signed
 * checkpoint at or after it. Calls with no checkpoint after their first entry
 * (journaled since the last one) are left out and reported; so is an outcome
 * past the last checkpoint (the call is then bundled without it).
 *
 * Invariant: the bundle holds only what the verifier checks — the rows
 * exactly as chained, checkpoints exactly as signed, catalog texts only with
 * a signed digest — so `verifyBundle` accepts what this builds.
 */
import { CONTENT_COLUMNS } from '../activity-schema.js';
import type { EntryRow } from '../chain.js';
import type { StoredCheckpoint } from '../checkpoint/record.js';
import type { Journals } from '../index.js';
import type { CallView } from '../types.js';
import { BUNDLE_FORMAT, BundleRowSchema, catalogPrefixOf, type Bundle, type BundleRow } from './format.js';

export interface BuildInput {
  readonly journals: Journals;
  /** The selected calls (e.g. `listCalls(filter)`), in the order to list them. */
  readonly calls: readonly CallView[];
  /** The checkpoint lines the walk accepted (checkpoint/record.ts walkTrust), in file order. */
  readonly checkpoints: readonly StoredCheckpoint[];
  /** The accepted catalog text of a digest, when the home still holds it. */
  readonly catalogText: (digest: string) => string | undefined;
}

export interface BuildResult {
  readonly bundle: Bundle;
  /** Calls left out: no checkpoint covers their first entry yet. */
  readonly uncovered: readonly string[];
  /** Bundled calls whose outcome is past the last checkpoint. */
  readonly outcomesLeftOut: number;
}

function rowOf(r: EntryRow): BundleRow {
  const o: Record<string, unknown> = {};
  for (const c of CONTENT_COLUMNS) o[c] = r[c];
  return BundleRowSchema.parse(o);
}

export function buildBundle(input: BuildInput): BuildResult {
  const journalId = input.journals.facts().activity.journal_id ?? '';
  const mine = input.checkpoints.filter((c) => c.record.journal_id === journalId);
  // Segment ends: checkpoints by the activity head they signed (one per head; the newest line wins).
  const byHead = new Map<number, StoredCheckpoint>();
  for (const c of mine) byHead.set(c.record.activity.seq, c);
  const ends = [...byHead.keys()].sort((a, b) => a - b);
  const base = input.journals.facts().activity.base.seq;
  const cover = (seq: number): number | undefined => {
    let lo = 0;
    let hi = ends.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (ends[mid]! < seq) lo = mid + 1;
      else hi = mid;
    }
    return ends[lo];
  };

  // For each segment end: the lowest seq it must start from.
  const starts = new Map<number, number>();
  const uncovered: string[] = [];
  const selected: CallView[] = [];
  let outcomesLeftOut = 0;
  for (const v of input.calls) {
    const seqs = input.journals.activityEntrySeqs(v.call.call_id).filter((s) => s > base);
    const head = seqs[0];
    const end = head === undefined ? undefined : cover(head);
    if (head === undefined || end === undefined) {
      uncovered.push(v.call.call_id);
      continue;
    }
    selected.push(v);
    for (const s of seqs) {
      const e = cover(s);
      if (e === undefined) {
        outcomesLeftOut++;
        continue;
      }
      starts.set(e, Math.min(starts.get(e) ?? s, s));
    }
  }

  const prefixes = new Set<string>();
  for (const v of selected) {
    const p = catalogPrefixOf(v.call.handler_revision);
    if (p !== null) prefixes.add(p);
  }
  const segEnds = [...starts.keys()].sort((a, b) => a - b);
  const used = segEnds.map((e) => byHead.get(e)!);
  // A signed full digest for each catalog prefix: from a segment checkpoint, else the first checkpoint that names it.
  const naming = [...prefixes].flatMap((p) => (used.some((c) => c.record.catalog_digest.startsWith(p)) ? [] : mine.filter((c) => c.record.catalog_digest.startsWith(p)).slice(0, 1)));
  // The key changes that lead to the keys, then those checkpoints, in file order.
  const keep = (c: StoredCheckpoint): boolean => used.includes(c) || naming.includes(c) || c.record.reason === 'key_change';
  const checkpoints = mine.filter(keep);
  const segments: Bundle['segments'] = segEnds.map((end) => {
    const from = starts.get(end)!;
    const rows: BundleRow[] = [];
    let prev = '';
    input.journals.activityEntries(from - 1, (r) => {
      if (r.seq > end) return false;
      if (rows.length === 0) prev = r.prev_hash;
      rows.push(rowOf(r));
      return r.seq < end;
    });
    return { checkpoint: checkpoints.indexOf(byHead.get(end)!), prev_hash: prev, rows };
  });

  const signed = [...new Set(checkpoints.map((c) => c.record.catalog_digest))];
  const catalogs = [...prefixes].sort().map((prefix) => {
    const digest = signed.find((d) => d.startsWith(prefix)) ?? null;
    const text = digest === null ? undefined : input.catalogText(digest);
    return { prefix, digest, text: text ?? null };
  });
  return {
    bundle: { format: BUNDLE_FORMAT, journal_id: journalId, calls: selected.map((v) => v.call.call_id), segments, checkpoints, catalogs },
    uncovered,
    outcomesLeftOut,
  };
}
