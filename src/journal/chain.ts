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
 *   never hold a statement open while caller code runs;
 * - `write` reports the head its transaction appended (known from the append,
 *   not read back): a `savepoint` that fails takes its entries' head back with
 *   its rows, so the report is exact for group commits too.
 *
 * - a pruned chain (prune.ts) starts at its *base*: the (seq, hash) of the
 *   last removed row, kept in the `meta` table; the first kept row must chain
 *   from it, and an empty chain's head is its base (never seq 0 again). The
 *   signed checkpoints vouch for the base (checkpoint/record.ts).
 *
 * Limits (documented, by design): the chain is keyless, so it proves that rows
 * were not changed *after* being chained by someone who did not rewrite every
 * later row; removing rows from the very end is only visible against a head
 * (seq, hash) recorded elsewhere — `verify` reports the head for that purpose.
 */
import type Database from 'better-sqlite3';
import { PosternError } from '../rules/errors.js';
import type { ChainBase, ChainHead, ChainReport } from './types.js';
import { canonicalJson, sha256Hex } from './json.js';

export const GENESIS_HASH = '0'.repeat(64);
export const GENESIS_BASE: ChainBase = Object.freeze({ seq: 0, hash: GENESIS_HASH, claims_digest: null });
const PAGE = 1000;
/** The `meta` key of a pruned chain's base. */
export const BASE_META_KEY = 'chain_base';

export type Cell = string | number | null;
export type EntryRow = Record<string, Cell> & { readonly seq: number; readonly prev_hash: string; readonly hash: string };

/** Whether `e` is SQLite saying that the file's pages are damaged (not a lock, a full disk or a missing file). */
export function isDamage(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB');
}

/**
 * `inSnapshot`'s report (a verify in one read transaction); when the file turns out damaged, the
 * chain's walk again outside any transaction, statement by statement — SQLite fails the commit of
 * a transaction in which a read met a damaged page, so the report must come from reads of their
 * own. When even that walk reads everything (the damage is in an index), the damage is thrown.
 */
export function damageAware(inSnapshot: () => ChainReport, chain: Chain): ChainReport {
  try {
    return inSnapshot();
  } catch (e) {
    if (!isDamage(e)) throw e;
    const report = chain.verify();
    if (report.ok) throw e;
    return report;
  }
}

export function entryHash(prevHash: string, content: Readonly<Record<string, Cell>>): string {
  return sha256Hex(prevHash + canonicalJson(content));
}

export class Chain {
  private readonly headStmt: Database.Statement<[], { seq: number; hash: string }>;
  private readonly insertStmt: Database.Statement<[Record<string, Cell>]>;
  private readonly pageStmt: Database.Statement<[number, number], EntryRow>;
  private readonly hashAtStmt: Database.Statement<[number], string>;
  private readonly rowStmt: Database.Statement<[number], EntryRow>;
  /** One transaction function for every write and savepoint (better-sqlite3 nests it as a SAVEPOINT). */
  private readonly tx: Database.Transaction<(fn: () => unknown) => unknown>;
  /** The head appended by the current `write`; null while it has appended nothing. */
  private tip: ChainHead | null = null;

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
    this.rowStmt = db.prepare<[number], EntryRow>('SELECT * FROM entries WHERE seq = ?');
    this.tx = db.transaction((fn: () => unknown) => fn());
  }

  /**
   * Runs `fn` in one write transaction (BEGIN IMMEDIATE, committed when it
   * returns) and reports the head it appended: null when it appended nothing.
   * Not inside another transaction (it would become a savepoint of it, and the
   * report would miss the entries appended before it).
   */
  write<T>(fn: () => T): { readonly value: T; readonly appended: ChainHead | null } {
    if (this.db.inTransaction) throw new PosternError('INTERNAL', 'a journal write cannot run inside another transaction');
    this.tip = null;
    const value = this.tx.immediate(fn) as T;
    return { value, appended: this.tip };
  }

  /** Inside `write`: `fn` in its own savepoint; when it throws, its entries are rolled back (and no longer reported). */
  savepoint<T>(fn: () => T): T {
    const before = this.tip;
    try {
      return this.tx(fn) as T;
    } catch (e) {
      this.tip = before;
      throw e;
    }
  }

  /** Where the chain starts: the genesis, or the base a prune left (a file without `meta` has never been pruned). */
  base(): ChainBase {
    let text: unknown;
    try {
      text = this.db.prepare(`SELECT value FROM meta WHERE key = ?`).pluck().get(BASE_META_KEY);
    } catch {
      return GENESIS_BASE;
    }
    if (typeof text !== 'string') return GENESIS_BASE;
    try {
      const b = JSON.parse(text) as Partial<ChainBase>;
      if (typeof b.seq === 'number' && Number.isSafeInteger(b.seq) && b.seq > 0 && typeof b.hash === 'string' && /^[0-9a-f]{64}$/.test(b.hash)) {
        return { seq: b.seq, hash: b.hash, claims_digest: typeof b.claims_digest === 'string' ? b.claims_digest : null };
      }
    } catch {
      // falls through: an unreadable base breaks verification at the first kept row
    }
    return { seq: 0, hash: 'malformed', claims_digest: null };
  }

  /** The last entry's (seq, hash); for an empty chain its base (seq 0 and the genesis hash unless pruned). */
  head(): ChainHead {
    const h = this.headStmt.get();
    if (h !== undefined) return { seq: h.seq, hash: h.hash };
    const b = this.base();
    return { seq: b.seq, hash: b.hash };
  }

  /** The stored hash of entry `seq` (the genesis hash for 0, the base's at the base), or undefined when there is no such entry. */
  hashAt(seq: number): string | undefined {
    if (seq === 0) return GENESIS_HASH;
    const found = this.hashAtStmt.get(seq);
    if (found !== undefined) return found;
    const b = this.base();
    return b.seq === seq ? b.hash : undefined;
  }

  /** Appends one entry and returns its seq. Call only inside a write transaction. */
  append(content: Readonly<Record<string, Cell>>): number {
    const head = this.headStmt.get();
    const seq = head === undefined ? 1 : head.seq + 1;
    const prev = head?.hash ?? GENESIS_HASH;
    const row = this.content({ ...content, seq });
    const hash = entryHash(prev, row);
    this.insertStmt.run({ ...row, prev_hash: prev, hash });
    this.tip = { seq, hash };
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

  /**
   * Walks the chain from its base (seq 1 unless pruned) and reports the first row that fails a check.
   * `skips` (a shipped chain's accepted gaps, ship/gaps.ts): after the entry at a key, when the next one
   * is missing, the walk goes on from the base given (seq and hash), the entries between uncounted.
   */
  verify(skips?: ReadonlyMap<number, ChainHead>): ChainReport {
    const base = this.base();
    let expected = base.seq + 1;
    let prev = base.hash;
    let skipped = 0;
    let bad: { seq: number; reason: 'hash_mismatch' | 'prev_hash_mismatch' | 'missing_entry' } | undefined;
    const step = (row: EntryRow): boolean => {
      const skip = row.seq === expected ? undefined : skips?.get(expected - 1);
      if (skip !== undefined && skip.seq >= expected) {
        skipped += skip.seq - expected + 1;
        expected = skip.seq + 1;
        prev = skip.hash;
      }
      if (row.seq !== expected) bad = { seq: expected, reason: 'missing_entry' };
      else if (row.prev_hash !== prev) bad = { seq: row.seq, reason: 'prev_hash_mismatch' };
      else if (entryHash(prev, this.content(row)) !== row.hash) bad = { seq: row.seq, reason: 'hash_mismatch' };
      if (bad !== undefined) return false;
      expected = row.seq + 1;
      prev = row.hash;
      return true;
    };
    try {
      this.forEach(step);
    } catch (e) {
      if (!isDamage(e)) throw e;
      // A page of entries could not be read: go on one entry at a time (a lookup by seq reads only
      // the pages on its path) to the first one that cannot be read, then find where reading resumes.
      for (;;) {
        let row: EntryRow | undefined;
        try {
          row = this.rowStmt.get(expected);
        } catch (e2) {
          if (!isDamage(e2)) throw e2;
          return { ok: false, entries_checked: expected - 1 - base.seq, first_bad_seq: expected, reason: 'unreadable', unreadable_to: this.#nextReadable(expected) };
        }
        if (row === undefined) {
          if (this.#anyAfter(expected)) bad = { seq: expected, reason: 'missing_entry' };
          break;
        }
        if (!step(row)) break;
      }
    }
    if (bad !== undefined) return { ok: false, entries_checked: expected - 1 - base.seq - skipped, first_bad_seq: bad.seq, reason: bad.reason };
    const entries = expected - 1 - base.seq - skipped;
    const head = expected === 1 ? null : { seq: expected - 1, hash: prev };
    return base.seq === 0 ? { ok: true, entries, head } : { ok: true, entries, head, base: { seq: base.seq, hash: base.hash } };
  }

  /**
   * Every entry that can still be read, from the base on, one lookup by seq
   * at a time (salvage.ts): `visit` is given each row in seq order, and
   * `unreadable` each range that cannot be read (`to` null: nothing after
   * `from` reads). Never throws on damage past the base.
   */
  readAll(visit: (row: EntryRow) => void, unreadable: (from: number, to: number | null) => void): void {
    let seq = this.base().seq + 1;
    for (;;) {
      let row: EntryRow | undefined;
      try {
        row = this.rowStmt.get(seq);
      } catch (e) {
        if (!isDamage(e)) throw e;
        const to = this.#nextReadable(seq);
        unreadable(seq, to);
        if (to === null) return;
        seq = to + 1;
        continue;
      }
      if (row === undefined) {
        let after: number | null | undefined;
        try {
          after = this.db.prepare<[number], number>('SELECT min(seq) FROM entries WHERE seq > ?').pluck().get(seq);
        } catch (e) {
          if (!isDamage(e)) throw e;
          after = undefined;
        }
        if (after === null || after === undefined) return;
        seq = after;
        continue;
      }
      visit(row);
      seq += 1;
    }
  }

  /**
   * After a damaged read at `from`: the last seq of the unreadable range, found by probing single
   * entries by seq (a lookup by rowid reads only the pages on its path), galloping then bisecting;
   * null when no later entry can be read.
   */
  #nextReadable(from: number): number | null {
    const readable = (seq: number): boolean => {
      try {
        return this.hashAtStmt.get(seq) !== undefined;
      } catch {
        return false;
      }
    };
    const LIMIT = 2 ** 40;
    let step = 1;
    let hit: number | null = null;
    for (let seq = from + 1; seq < LIMIT; seq = from + (step *= 2)) {
      if (readable(seq)) {
        hit = seq;
        break;
      }
      if (step > 1 && !this.#anyAfter(seq)) return null;
    }
    if (hit === null) return null;
    let lo = from;
    while (hit - lo > 1) {
      const mid = Math.floor((lo + hit) / 2);
      if (readable(mid)) hit = mid;
      else lo = mid;
    }
    return hit - 1;
  }

  /** Whether an entry after `seq` may exist (unknown, so true, when that cannot be read either). */
  #anyAfter(seq: number): boolean {
    try {
      return this.db.prepare<[number], number>('SELECT seq FROM entries WHERE seq > ? ORDER BY seq LIMIT 1').pluck().get(seq) !== undefined;
    } catch {
      return seq < 2 ** 32;
    }
  }

  private content(row: Readonly<Record<string, Cell>>): Record<string, Cell> {
    const out: Record<string, Cell> = {};
    for (const c of this.columns) out[c] = row[c] ?? null;
    return out;
  }
}
