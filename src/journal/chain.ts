/**
 * The hash chain shared by both journals: an append-only `entries` table in
 * which row n stores `prev_hash` (row n-1's hash, or 64 zeros for row 1) and
 * `hash = SHA-256(prev_hash ‖ canonical JSON of row n's content columns)`.
 *
 * Invariants:
 * - `append` must run inside a write transaction (BEGIN IMMEDIATE): it reads
 *   the head and inserts the next row under the same lock, so concurrent
 *   writers from other processes still produce one unbroken chain;
 * - the content covers every stored column except prev_hash/hash (including
 *   `seq` and the JSON body kept as text), so editing any byte, deleting a
 *   row or swapping rows breaks the chain at a reportable sequence number;
 * - reads are paged by seq, so verify and export need constant memory and
 *   never hold a statement open while caller code runs.
 *
 * Limits (documented, by design): the chain is keyless, so it proves that rows
 * were not changed *after* being chained by someone who did not rewrite every
 * later row; removing rows from the very end is only visible against a head
 * (seq, hash) recorded elsewhere — `verify` reports the head for that purpose.
 */
import type Database from 'better-sqlite3';
import type { ChainHead, ChainReport } from './types.js';
import { canonicalJson, sha256Hex } from './json.js';

export const GENESIS_HASH = '0'.repeat(64);
const PAGE = 1000;

export type Cell = string | number | null;
export type EntryRow = Record<string, Cell> & { readonly seq: number; readonly prev_hash: string; readonly hash: string };

export function entryHash(prevHash: string, content: Readonly<Record<string, Cell>>): string {
  return sha256Hex(prevHash + canonicalJson(content));
}

export class Chain {
  private readonly headStmt: Database.Statement<[], { seq: number; hash: string }>;
  private readonly insertStmt: Database.Statement<[Record<string, Cell>]>;
  private readonly pageStmt: Database.Statement<[number, number], EntryRow>;
  private readonly hashAtStmt: Database.Statement<[number], string>;

  /** `columns` are the content columns of `entries`, `seq` included. */
  constructor(
    private readonly db: Database.Database,
    private readonly columns: readonly string[],
  ) {
    this.headStmt = db.prepare('SELECT seq, hash FROM entries ORDER BY seq DESC LIMIT 1');
    const names = [...columns, 'prev_hash', 'hash'];
    this.insertStmt = db.prepare(`INSERT INTO entries (${names.join(', ')}) VALUES (${names.map((n) => `@${n}`).join(', ')})`);
    this.pageStmt = db.prepare('SELECT * FROM entries WHERE seq > ? ORDER BY seq LIMIT ?');
    this.hashAtStmt = db.prepare<[number], string>('SELECT hash FROM entries WHERE seq = ?').pluck();
  }

  /** The last entry's (seq, hash); seq 0 and the genesis hash for an empty chain. */
  head(): ChainHead {
    const h = this.headStmt.get();
    return h === undefined ? { seq: 0, hash: GENESIS_HASH } : { seq: h.seq, hash: h.hash };
  }

  /** The stored hash of entry `seq` (the genesis hash for 0), or undefined when there is no such entry. */
  hashAt(seq: number): string | undefined {
    if (seq === 0) return GENESIS_HASH;
    return this.hashAtStmt.get(seq);
  }

  /** Appends one entry and returns its seq. Call only inside a write transaction. */
  append(content: Readonly<Record<string, Cell>>): number {
    const head = this.headStmt.get();
    const seq = head === undefined ? 1 : head.seq + 1;
    const prev = head?.hash ?? GENESIS_HASH;
    const row = this.content({ ...content, seq });
    this.insertStmt.run({ ...row, prev_hash: prev, hash: entryHash(prev, row) });
    return seq;
  }

  /** Calls `fn` for each entry in seq order, a page at a time; `fn` returning false stops the walk. */
  forEach(fn: (row: EntryRow) => boolean | void, afterSeq = 0): void {
    let last = afterSeq;
    for (;;) {
      const rows = this.pageStmt.all(last, PAGE);
      for (const row of rows) if (fn(row) === false) return;
      const tail = rows.at(-1);
      if (tail === undefined || rows.length < PAGE) return;
      last = tail.seq;
    }
  }

  /** Walks the chain from seq 1 and reports the first row that fails a check. */
  verify(): ChainReport {
    let expected = 1;
    let prev = GENESIS_HASH;
    let bad: { seq: number; reason: 'hash_mismatch' | 'prev_hash_mismatch' | 'missing_entry' } | undefined;
    this.forEach((row) => {
      if (row.seq !== expected) bad = { seq: expected, reason: 'missing_entry' };
      else if (row.prev_hash !== prev) bad = { seq: row.seq, reason: 'prev_hash_mismatch' };
      else if (entryHash(prev, this.content(row)) !== row.hash) bad = { seq: row.seq, reason: 'hash_mismatch' };
      if (bad !== undefined) return false;
      expected = row.seq + 1;
      prev = row.hash;
      return true;
    });
    if (bad !== undefined) return { ok: false, entries_checked: expected - 1, first_bad_seq: bad.seq, reason: bad.reason };
    return { ok: true, entries: expected - 1, head: expected === 1 ? null : { seq: expected - 1, hash: prev } };
  }

  private content(row: Readonly<Record<string, Cell>>): Record<string, Cell> {
    const out: Record<string, Cell> = {};
    for (const c of this.columns) out[c] = row[c] ?? null;
    return out;
  }
}
