/**
 * Signed checkpoints, the pure half: what a checkpoint records, its schema,
 * which checkpoints a key vouches for, and the judgement of the journals
 * against the last one. No I/O here.
 *
 * A checkpoint is the anchor's record (journal id, both chain heads, counter,
 * vault generation, catalog digest, time) plus where each chain starts (its
 * base: seq 0 unless pruned, with the digest of the idempotency claims a
 * prune kept for removed entries) and the public key, signed with Ed25519.
 * Unlike the anchor's MAC it verifies without the vault: the public key's
 * fingerprint, noted elsewhere, is the only thing a verifier must trust.
 *
 * Trust: the root is the key the verifier names (`--key`), else the first
 * well-signed line's key (printed, for the person to compare). A line of
 * reason `key_change` signed by a trusted key adds its `next_public_key`
 * (a passphrase change makes a new key pair). Lines signed by any other key,
 * or that do not verify, vouch for nothing and are counted.
 */
import { z } from 'zod';
import type { JournalName } from '../database.js';
import { judgeAnchor, type FoundJournal, type JournalProblem } from '../anchor-record.js';
import type { ChainBase, ChainHead } from '../types.js';
import { keyFingerprint, namesKey, verifySignature } from './signature.js';

export const CHECKPOINT_FORMAT = 'postern.journal-checkpoint/1';

/** Why a checkpoint was written. */
const CHECKPOINT_REASONS = ['start', 'shutdown', 'catalog', 'periodic', 'prune', 'operator', 'key_change'] as const;
export type CheckpointReason = (typeof CHECKPOINT_REASONS)[number];


export interface CheckpointRecord {
  readonly format: typeof CHECKPOINT_FORMAT;
  readonly reason: CheckpointReason;
  readonly journal_id: string;
  /** The anchor counter of the same moment. */
  readonly counter: number;
  readonly activity: ChainHead;
  readonly sessions: ChainHead;
  readonly bases: { readonly activity: ChainBase; readonly sessions: ChainBase };
  readonly vault_generation: number;
  readonly catalog_digest: string;
  readonly at: string;
  /** Ed25519 public key (hex) that signed this line. */
  readonly public_key: string;
  /** `prune`: the cut-off the operator gave. */
  readonly pruned_before: string | null;
  /** `key_change`: the key that signs from now on. */
  readonly next_public_key: string | null;
}

export interface StoredCheckpoint {
  readonly record: CheckpointRecord;
  readonly signature: string;
}

const Hex64 = z.string().regex(/^[0-9a-f]{64}$/);
const Seq = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const Head = z.object({ seq: Seq, hash: Hex64 }).strict();
const Base = z.object({ seq: Seq, hash: Hex64, claims_digest: Hex64.nullable() }).strict();

const CheckpointRecordSchema = z
  .object({
    format: z.literal(CHECKPOINT_FORMAT),
    reason: z.enum(CHECKPOINT_REASONS),
    journal_id: z.string().min(1).max(128),
    counter: Seq,
    activity: Head,
    sessions: Head,
    bases: z.object({ activity: Base, sessions: Base }).strict(),
    vault_generation: Seq,
    catalog_digest: Hex64,
    at: z.string().max(64),
    public_key: Hex64,
    pruned_before: z.string().max(64).nullable(),
    next_public_key: Hex64.nullable(),
  })
  .strict();

export const StoredCheckpointSchema = z.object({ record: CheckpointRecordSchema, signature: z.string().regex(/^[0-9a-f]{128}$/) }).strict();

export function checkpointIsSigned(s: StoredCheckpoint): boolean {
  return verifySignature(s.record.public_key, s.record, s.signature);
}

export interface TrustWalk {
  /** Lines that verify under a trusted key, in file order. */
  readonly accepted: readonly StoredCheckpoint[];
  /** Every key reached (the root first), as public-key hex. */
  readonly keys: readonly string[];
  readonly malformed: number;
  readonly badSignature: number;
  readonly untrusted: number;
  /** The root key named by the verifier was never seen in a well-signed line. */
  readonly rootUnseen: boolean;
}

/** Which lines vouch for the journals, from a named root key (fingerprint or hex) or the first well-signed line's. */
export function walkTrust(lines: readonly (StoredCheckpoint | 'malformed')[], root?: string): TrustWalk {
  const keys: string[] = [];
  const accepted: StoredCheckpoint[] = [];
  let malformed = 0;
  let badSignature = 0;
  let untrusted = 0;
  let rootSeen = root === undefined;
  for (const line of lines) {
    if (line === 'malformed') {
      malformed++;
      continue;
    }
    if (!checkpointIsSigned(line)) {
      badSignature++;
      continue;
    }
    const pk = line.record.public_key;
    if (keys.length === 0 && (root === undefined || namesKey(root, pk))) {
      keys.push(pk);
      rootSeen = true;
    }
    if (!keys.includes(pk)) {
      untrusted++;
      continue;
    }
    accepted.push(line);
    const next = line.record.next_public_key;
    if (line.record.reason === 'key_change' && next !== null && !keys.includes(next)) keys.push(next);
  }
  return { accepted, keys, malformed, badSignature, untrusted, rootUnseen: !rootSeen };
}

/** The newest accepted checkpoint of this journal id (highest counter; the later line on a tie). */
export function lastCheckpoint(accepted: readonly StoredCheckpoint[], journalId?: string): StoredCheckpoint | undefined {
  let best: StoredCheckpoint | undefined;
  for (const c of accepted) {
    if (journalId !== undefined && c.record.journal_id !== journalId) continue;
    if (best === undefined || c.record.counter >= best.record.counter) best = c;
  }
  return best;
}

/**
 * Counters that two accepted lines carry for different journals or heads.
 * Each anchor write takes a counter of its own, so a counter signed twice
 * means a daemon went on from an older anchor put back (a `key_change` line
 * repeats the last record's counter with the same heads, and is no finding).
 */
export function duplicateCounters(accepted: readonly StoredCheckpoint[]): number[] {
  const seen = new Map<number, CheckpointRecord>();
  const dups = new Set<number>();
  for (const { record } of accepted) {
    const first = seen.get(record.counter);
    if (first === undefined) seen.set(record.counter, record);
    else if (first.journal_id !== record.journal_id || first.activity.seq !== record.activity.seq || first.activity.hash !== record.activity.hash || first.sessions.seq !== record.sessions.seq || first.sessions.hash !== record.sessions.hash) dups.add(record.counter);
  }
  return [...dups].sort((a, b) => a - b);
}

/** The highest counter any well-formed line carries (0 when none): a new anchor write never takes one of these again. */
export function highestCounter(lines: readonly (StoredCheckpoint | 'malformed')[]): number {
  let max = 0;
  for (const l of lines) if (l !== 'malformed' && l.record.counter > max) max = l.record.counter;
  return max;
}

type CheckpointProblem =
  | JournalProblem
  /** The chain starts somewhere the checkpoint does not say (entries removed without a signed prune). */
  | { readonly kind: 'base_mismatch'; readonly journal: JournalName; readonly checkpoint_seq: number; readonly found_seq: number };

export type CheckpointVerdict =
  | {
      readonly kind: 'ok';
      readonly tail: { readonly activity: number; readonly sessions: number };
      /** Bases a signed prune set that the journal has not reached yet (its rows are still there, the signed hash at the cut): the next open finishes it. */
      readonly unfinishedPrune: Readonly<Partial<Record<JournalName, ChainBase>>> | null;
    }
  | { readonly kind: 'mismatch'; readonly problem: CheckpointProblem };

/** A journal file as found, with where its chain starts. */
interface FoundChain extends FoundJournal {
  readonly base: ChainBase;
}

/** Do the journals hold what the checkpoint signed: same id, not behind its heads, the same hash there, the same bases? */
export function judgeCheckpoint(c: CheckpointRecord, found: Readonly<Record<JournalName, FoundChain>>): CheckpointVerdict {
  const v = judgeAnchor({ journal_id: c.journal_id, activity: c.activity, sessions: c.sessions, vault_generation: c.vault_generation }, found, undefined);
  if (v.kind === 'journal_mismatch') return { kind: 'mismatch', problem: v.problem };
  let unfinished: Partial<Record<JournalName, ChainBase>> | null = null;
  for (const name of ['sessions', 'activity'] as const) {
    const want = c.bases[name];
    const got = found[name].base;
    if (want.seq === got.seq && want.hash === got.hash && want.claims_digest === got.claims_digest) continue;
    // A signed prune interrupted before its rows were removed: the rows are still there and chain to the signed base.
    if (c.reason === 'prune' && want.seq > got.seq && found[name].hashAt(want.seq) === want.hash) {
      unfinished = { ...(unfinished ?? {}), [name]: want };
      continue;
    }
    return { kind: 'mismatch', problem: { kind: 'base_mismatch', journal: name, checkpoint_seq: want.seq, found_seq: got.seq } };
  }
  return { kind: 'ok', tail: v.kind === 'ok' ? v.tail : { activity: 0, sessions: 0 }, unfinishedPrune: unfinished };
}

/** One line naming a checkpoint, for people. */
export function describeCheckpoint(c: CheckpointRecord): string {
  return `checkpoint #${c.counter} (${c.reason}, ${c.at}; activity seq ${c.activity.seq}, sessions seq ${c.sessions.seq}; key ${keyFingerprint(c.public_key)})`;
}
