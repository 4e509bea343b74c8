/**
 * Accepted gaps in a shipped journal (`postern audit ship --accept-gap`;
 * docs/teams.md): entries a home pruned before they were shipped. Shipping
 * stops at such a gap (SHIP_GAP) until the home's operator accepts it; the
 * acceptance is a record signed with the home's checkpoint key (its own
 * domain: no checkpoint can pass for one), kept in `postern_gaps`, and the
 * shipper then goes on from the chain's base.
 *
 * Invariants:
 * - an accepted gap is never silent: `audit verify --from` names every one,
 *   with its range, its time and its signer;
 * - the database cannot make one: a gap counts only when its record is
 *   signed by a key the home's shipped checkpoints are trusted under, and
 *   names this home, this journal and the seq it is stored under; any other
 *   is a finding and is not applied (the entries it would cover are missing);
 * - the record names the base the chain goes on from (seq and hash, as the
 *   signed prune checkpoint named it), so the walk links the entries after
 *   the gap to it.
 */
import type { ChainBase, ChainHead, JournalName } from '../index.js';
import { canonicalJson } from '../json.js';
import { verifySignature, type CheckpointSigner } from '../checkpoint/signature.js';

const GAP_FORMAT = 'postern.ship-gap/1';

export interface GapRecord {
  readonly format: typeof GAP_FORMAT;
  readonly home_id: string;
  readonly journal: JournalName;
  /** The highest seq the database held of this journal: the gap is `after + 1` … `base.seq`. */
  readonly after: number;
  /** The chain's base when the gap was accepted: shipping goes on with the entry after it. */
  readonly base: ChainHead;
  readonly accepted_at: string;
  /** The key that signed the record (the home's checkpoint key). */
  readonly public_key: string;
}

/** A row of postern_gaps: the record's canonical JSON and its signature. */
export interface StoredGap {
  readonly journal: string;
  readonly after_seq: number;
  readonly record: string;
  readonly signature: string;
}

/** The record accepting `after + 1 … base.seq` of `journal`, signed; returns the row to store. */
export function signGap(signer: CheckpointSigner, homeId: string, journal: JournalName, after: number, base: ChainBase, at: Date): StoredGap & { readonly parsed: GapRecord } {
  const parsed: GapRecord = { format: GAP_FORMAT, home_id: homeId, journal, after, base: { seq: base.seq, hash: base.hash }, accepted_at: at.toISOString(), public_key: signer.publicKey };
  return { journal, after_seq: after, record: canonicalJson(parsed), signature: signer.sign(parsed, 'ship_gap'), parsed };
}

/** What a stored gap record says, or undefined when it is not one (a finding for verify). */
export function readGap(text: string): GapRecord | undefined {
  try {
    const r = JSON.parse(text) as Partial<GapRecord> | null;
    const base = r?.base;
    if (r === null || r.format !== GAP_FORMAT || typeof r.home_id !== 'string' || (r.journal !== 'activity' && r.journal !== 'sessions')) return undefined;
    if (!Number.isSafeInteger(r.after) || typeof base !== 'object' || base === null || !Number.isSafeInteger(base.seq) || typeof base.hash !== 'string') return undefined;
    if (typeof r.accepted_at !== 'string' || typeof r.public_key !== 'string' || base.seq <= r.after!) return undefined;
    return r as GapRecord;
  } catch {
    return undefined;
  }
}

type GapProblem = 'unreadable' | 'misplaced' | 'unsigned';

/** An accepted gap as verify reports it: the entries it covers, and whether it counts. */
export interface GapVerdict {
  readonly journal: string;
  readonly from: number;
  readonly to: number;
  readonly accepted_at: string | null;
  readonly signed_by: string | null;
  /** Set when the gap does not count (then the entries it would cover are missing). */
  readonly problem: GapProblem | null;
}

/** Judges one stored gap of `homeId` against the keys its checkpoints are trusted under. */
export function judgeGap(g: StoredGap, homeId: string, trustedKeys: readonly string[]): GapVerdict & { readonly record?: GapRecord } {
  const r = readGap(g.record);
  const from = g.after_seq + 1;
  if (r === undefined) return { journal: g.journal, from, to: from, accepted_at: null, signed_by: null, problem: 'unreadable' };
  const seen = { journal: g.journal, from, to: r.base.seq, accepted_at: r.accepted_at, signed_by: r.public_key };
  if (r.home_id !== homeId || r.journal !== g.journal || r.after !== g.after_seq) return { ...seen, problem: 'misplaced' };
  // The record is checked as stored: its canonical JSON must be the text kept, and the signature over it.
  const signed = canonicalJson(r) === g.record && trustedKeys.includes(r.public_key) && verifySignature(r.public_key, r, g.signature, 'ship_gap');
  return signed ? { ...seen, problem: null, record: r } : { ...seen, problem: 'unsigned' };
}

export const GAP_PROBLEMS: Readonly<Record<GapProblem, string>> = {
  unreadable: 'the stored record is not a gap record (edited)',
  misplaced: 'the record names another home, journal or seq than the one it is stored under',
  unsigned: "the record is not signed by this home's checkpoint key",
};
