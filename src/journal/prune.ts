/**
 * Retention: removing the oldest entries of a chain while it stays
 * verifiable (`postern audit prune`, docs/audit.md).
 *
 * A prune removes a *prefix* of each chain — every entry up to a cut seq —
 * and records the cut as the chain's base (meta `chain_base`: the seq and
 * hash of the last removed entry, and for the activity journal the digest of
 * the idempotency claims of removed intents). The first kept entry still
 * chains from it, so `verify` starts there; the signed checkpoint written
 * after the prune vouches for the base, so rows removed by anyone else (with
 * the base forged to match) are a `base_mismatch`.
 *
 * What is never removed (the cut stops before it):
 * - the last entry of a chain (the anchor's head must stay readable);
 * - an entry at or after the first one journaled at or after `before` (times
 *   may step back: the cut is the longest prefix entirely before it);
 * - an intent that has no outcome yet, or whose claim is in progress;
 * - an intent whose claim the caller says is still needed (`stillNeeded`:
 *   a completed key inside the idempotency retention window must keep its
 *   stored result to replay it; the caller applies that rule's one home).
 * Claims themselves are never deleted: a key never runs twice.
 */
import type Database from 'better-sqlite3';
import { PosternError } from '../rules/errors.js';
import { BASE_META_KEY, type Chain } from './chain.js';
import { prunedClaimsDigest } from './claims-check.js';
import type { JournalName } from './database.js';
import type { ChainBase } from './types.js';

/** A claim whose intent would be removed, as the retention rule needs to judge it. */
export interface ClaimForPrune {
  readonly state: 'in_progress' | 'completed' | 'outcome_unknown';
  /** When its outcome was journaled (completed claims). */
  readonly completed_at: string | null;
}

export interface ChainCut {
  /** Entries up to this seq are removed (the current base seq: nothing). */
  readonly cut: number;
  /** How many entries that removes. */
  readonly entries: number;
  /** Why the cut stops where it does. */
  readonly stoppedBy: 'date' | 'last_entry' | 'open_call' | 'retention';
  /** The intent seq that stopped the cut, for open_call and retention. */
  readonly heldAt: number | null;
}

export interface PrunePlan {
  readonly before: string;
  readonly sessions: ChainCut;
  readonly activity: ChainCut;
}

interface Part {
  readonly name: JournalName;
  readonly db: Database.Database;
  readonly chain: Chain;
}

function dateCut(p: Part, before: string): { cut: number; stoppedBy: ChainCut['stoppedBy'] } {
  const base = p.chain.base().seq;
  const head = p.chain.head().seq;
  const firstAfter = p.db.prepare<[string], number | null>('SELECT min(seq) FROM entries WHERE at >= ?').pluck().get(before) ?? null;
  const byDate = firstAfter === null ? head : firstAfter - 1;
  if (byDate >= head) return { cut: Math.max(base, head - 1), stoppedBy: 'last_entry' };
  return { cut: Math.max(base, byDate), stoppedBy: 'date' };
}

function count(p: Part, cut: number): number {
  return p.db.prepare<[number, number], number>('SELECT count(*) FROM entries WHERE seq > ? AND seq <= ?').pluck().get(p.chain.base().seq, cut) ?? 0;
}

/** The cuts for `before`, bounded by what must stay; nothing is changed. */
export function planPrune(sessions: Part, activity: Part, before: string, stillNeeded: (c: ClaimForPrune) => boolean): PrunePlan {
  const s = dateCut(sessions, before);
  let a: { cut: number; stoppedBy: ChainCut['stoppedBy']; heldAt: number | null } = { ...dateCut(activity, before), heldAt: null };
  const openIntent = activity.db
    .prepare<[number], number | null>(
      `SELECT min(i.seq) FROM entries i WHERE i.kind = 'intent' AND i.seq <= ? AND NOT EXISTS (SELECT 1 FROM entries o WHERE o.call_id = i.call_id AND o.kind = 'outcome')`,
    )
    .pluck()
    .get(a.cut);
  if (typeof openIntent === 'number') a = { cut: openIntent - 1, stoppedBy: 'open_call', heldAt: openIntent };
  const claims = activity.db
    .prepare<[number], { intent_seq: number; state: ClaimForPrune['state']; completed_at: string | null }>(
      `SELECT c.intent_seq AS intent_seq, c.state AS state, o.at AS completed_at FROM idempotency c LEFT JOIN entries o ON o.seq = c.outcome_seq
       WHERE c.intent_seq <= ? ORDER BY c.intent_seq`,
    )
    .iterate(a.cut);
  for (const c of claims) {
    if (c.state === 'in_progress' || stillNeeded({ state: c.state, completed_at: c.completed_at })) {
      a = { cut: c.intent_seq - 1, stoppedBy: c.state === 'in_progress' ? 'open_call' : 'retention', heldAt: c.intent_seq };
      break;
    }
  }
  const aBase = activity.chain.base().seq;
  const aCut = Math.max(aBase, a.cut);
  return {
    before,
    sessions: { cut: s.cut, entries: count(sessions, s.cut), stoppedBy: s.stoppedBy, heldAt: null },
    activity: { cut: aCut, entries: count(activity, aCut), stoppedBy: a.stoppedBy, heldAt: a.heldAt },
  };
}

/** The base a prune up to `cut` leaves (the current one when `cut` is not past it); nothing is changed. */
export function baseAfterPrune(p: Part, cut: number): ChainBase {
  const old = p.chain.base();
  if (cut <= old.seq) return old;
  if (cut >= p.chain.head().seq) throw new PosternError('INTERNAL', `${p.name} journal: a prune must keep the last entry`);
  const hash = p.chain.hashAt(cut);
  if (hash === undefined) throw new PosternError('INTERNAL', `${p.name} journal: no entry ${cut} to cut at`);
  return { seq: cut, hash, claims_digest: p.name === 'activity' ? prunedClaimsDigest(p.db, cut) : null };
}

/**
 * Removes entries up to `cut` and records the new base, in one write
 * transaction. Returns the base. `expect` (a base a signed prune named):
 * the transaction is refused unless the prune leaves exactly that base.
 */
export function pruneChain(p: Part, cut: number, check: () => void, expect?: ChainBase): ChainBase {
  return p.db
    .transaction((): ChainBase => {
      check();
      const old = p.chain.base();
      if (cut <= old.seq) return old;
      const want = baseAfterPrune(p, cut);
      if (expect !== undefined && (expect.seq !== want.seq || expect.hash !== want.hash || expect.claims_digest !== want.claims_digest)) {
        throw new PosternError('JOURNAL_ANCHOR_MISMATCH', `${p.name} journal: the signed prune names a base this journal does not have at seq ${cut}`, { details: { reason: 'base_mismatch', journal: p.name } });
      }
      const hash = want.hash;
      const trigger = p.db.prepare<[], string>(`SELECT sql FROM sqlite_schema WHERE type = 'trigger' AND name = 'entries_no_delete'`).pluck().get();
      if (trigger === undefined) throw new PosternError('INTERNAL', `${p.name} journal: the append-only trigger is missing`);
      p.db.exec('DROP TRIGGER entries_no_delete');
      p.db.prepare('DELETE FROM entries WHERE seq <= ?').run(cut);
      p.db.exec(trigger);
      const base: ChainBase = { seq: cut, hash, claims_digest: want.claims_digest };
      p.db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(BASE_META_KEY, JSON.stringify(base));
      return base;
    })
    .immediate();
}
