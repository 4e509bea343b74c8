/**
 * The rows of a journal's `entries` table read straight from the pages of
 * its file, for salvage (salvage.ts) when SQLite's own lookups cannot reach
 * them: every lookup goes through the table's root and interior pages (and
 * the schema on page 1), so one damaged page there hides every entry behind
 * it. As SQLite's `.recover` does (its `sqlite_dbpage` table is not built
 * into the bundled SQLite), each page is read on its own: the cells of every
 * table-leaf page are decoded as records, following their overflow chains;
 * a damaged page, a broken chain or a cell that does not decode is skipped.
 *
 * Invariants: a record is taken for an entry only when it has exactly the
 * entries table's columns (content columns, then prev_hash and hash, `seq`
 * being the rowid) and its own hash recomputes (SHA-256 over its prev_hash
 * and the canonical JSON of its content, chain.ts) — so a row of another
 * table, a garbled cell or a page of garbage is never reported as an entry;
 * two different copies of one seq (a stale free page) are both dropped, never
 * one picked. Read-only: the file is only read. Limits: the main file only
 * (pages still in the -wal file are left to SQLite's lookups); the rows are
 * held in memory (salvage asks only for the seqs its lookups could not read).
 */
import { readFileSync } from 'node:fs';
import { entryHash, type Cell, type EntryRow } from './chain.js';

/** A cursor over one buffer; every read is bounds-checked (a bad read throws, the cell is skipped). */
class Reader {
  constructor(
    private readonly buf: Buffer,
    public pos: number,
    private readonly end: number,
  ) {}

  varint(): number {
    let v = 0n;
    for (let i = 0; i < 9; i++) {
      const b = this.byte();
      if (i === 8) return Number((v << 8n) | BigInt(b));
      v = (v << 7n) | BigInt(b & 0x7f);
      if ((b & 0x80) === 0) return Number(v);
    }
    throw new Error('varint');
  }

  byte(): number {
    if (this.pos >= this.end) throw new Error('past the end');
    return this.buf[this.pos++]!;
  }
}

interface FileShape {
  readonly pageSize: number;
  /** Bytes of each page that hold b-tree content (page size less the reserved bytes). */
  readonly usable: number;
  readonly pages: number;
}

const PAGE_SIZES = new Set([512, 1024, 2048, 4096, 8192, 16384, 32768, 65536]);

/** The page size from the file header, or SQLite's default when the header is damaged. */
function shapeOf(file: Buffer): FileShape {
  let pageSize = file.length >= 100 ? file.readUInt16BE(16) : 4096;
  if (pageSize === 1) pageSize = 65536;
  let reserved = file.length >= 100 ? file[20]! : 0;
  if (!PAGE_SIZES.has(pageSize) || file.subarray(0, 16).toString('latin1') !== 'SQLite format 3\u0000') {
    pageSize = 4096;
    reserved = 0;
  }
  return { pageSize, usable: pageSize - reserved, pages: Math.floor(file.length / pageSize) };
}

/** The payload of one cell: its local part and its overflow chain, or undefined when the chain is broken. */
function payloadOf(file: Buffer, shape: FileShape, r: Reader, size: number): Buffer | undefined {
  const u = shape.usable;
  const maxLocal = u - 35;
  if (size <= maxLocal) {
    if (r.pos + size > file.length) return undefined;
    return file.subarray(r.pos, r.pos + size);
  }
  const minLocal = Math.floor(((u - 12) * 32) / 255) - 23;
  const k = minLocal + ((size - minLocal) % (u - 4));
  const local = k <= maxLocal ? k : minLocal;
  const parts: Buffer[] = [file.subarray(r.pos, r.pos + local)];
  let have = local;
  let next = file.readUInt32BE(r.pos + local);
  for (let hops = 0; have < size; hops++) {
    if (next < 2 || next > shape.pages || hops > shape.pages) return undefined;
    const at = (next - 1) * shape.pageSize;
    const take = Math.min(u - 4, size - have);
    parts.push(file.subarray(at + 4, at + 4 + take));
    have += take;
    next = file.readUInt32BE(at);
  }
  return Buffer.concat(parts);
}

/** The values of one record, or undefined when it does not decode. */
function recordValues(p: Buffer): Cell[] | undefined {
  const r = new Reader(p, 0, p.length);
  const headerSize = r.varint();
  if (headerSize > p.length) return undefined;
  const types: number[] = [];
  while (r.pos < headerSize) types.push(r.varint());
  let at = headerSize;
  const out: Cell[] = [];
  for (const t of types) {
    const [value, width] = valueOf(p, at, t);
    if (width < 0 || at + width > p.length) return undefined;
    out.push(value);
    at += width;
  }
  return out;
}

const INT_WIDTH: Record<number, number> = { 1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8 };

/** One value of serial type `t` at `at`: the value and its width (-1: a type a record never holds). */
function valueOf(p: Buffer, at: number, t: number): [Cell, number] {
  if (t === 0) return [null, 0];
  if (t === 8 || t === 9) return [t - 8, 0];
  const w = INT_WIDTH[t];
  if (w !== undefined) {
    if (at + w > p.length) return [null, -1];
    return [w === 8 ? Number(p.readBigInt64BE(at)) : p.readIntBE(at, w), w];
  }
  if (t === 7) return at + 8 > p.length ? [null, -1] : [p.readDoubleBE(at), 8];
  if (t >= 13 && t % 2 === 1) {
    const n = (t - 13) / 2;
    return [p.subarray(at, at + n).toString('utf8'), n];
  }
  return [null, -1]; // a blob or a reserved type: no entries column holds one
}

/** The entry a record is, when it has the columns and its hash recomputes. */
function entryOf(rowid: number, values: Cell[], columns: readonly string[]): EntryRow | undefined {
  const names = [...columns, 'prev_hash', 'hash'];
  if (values.length !== names.length || columns[0] !== 'seq') return undefined;
  const row: Record<string, Cell> = {};
  names.forEach((n, i) => (row[n] = values[i]!));
  row['seq'] = rowid;
  const prev = row['prev_hash'];
  const hash = row['hash'];
  if (typeof prev !== 'string' || typeof hash !== 'string' || !/^[0-9a-f]{64}$/.test(hash)) return undefined;
  const content: Record<string, Cell> = {};
  for (const c of columns) content[c] = row[c] ?? null;
  try {
    if (entryHash(prev, content) !== hash) return undefined;
  } catch {
    return undefined;
  }
  return row as EntryRow;
}

/** The entries on one table-leaf page (none when it is not one). */
function leafEntries(file: Buffer, shape: FileShape, page: number, columns: readonly string[], wanted: (seq: number) => boolean): EntryRow[] {
  const start = (page - 1) * shape.pageSize;
  const head = start + (page === 1 ? 100 : 0);
  if (file[head] !== 0x0d) return [];
  const cells = file.readUInt16BE(head + 3);
  const found: EntryRow[] = [];
  for (let i = 0; i < cells && head + 8 + 2 * i + 2 <= start + shape.pageSize; i++) {
    try {
      const off = file.readUInt16BE(head + 8 + 2 * i);
      if (off < 8 || off >= shape.usable) continue;
      const r = new Reader(file, start + off, start + shape.usable);
      const size = r.varint();
      const rowid = r.varint();
      if (!wanted(rowid)) continue;
      const payload = payloadOf(file, shape, r, size);
      const values = payload === undefined ? undefined : recordValues(payload);
      const entry = values === undefined ? undefined : entryOf(rowid, values, columns);
      if (entry !== undefined) found.push(entry);
    } catch {
      // a cell that does not decode is skipped
    }
  }
  return found;
}

/**
 * Every entry of `path` whose seq `wanted` asks for, read page by page, by
 * seq; a seq found in two different copies is left out (it stays unreadable).
 */
export function recoverEntries(path: string, columns: readonly string[], wanted: (seq: number) => boolean): Map<number, EntryRow> {
  const file = readFileSync(path);
  const shape = shapeOf(file);
  const rows = new Map<number, EntryRow>();
  const conflicting = new Set<number>();
  for (let page = 1; page <= shape.pages; page++) {
    for (const e of leafEntries(file, shape, page, columns, wanted)) {
      const had = rows.get(e.seq);
      if (had === undefined && !conflicting.has(e.seq)) rows.set(e.seq, e);
      else if (had !== undefined && had.hash !== e.hash) {
        rows.delete(e.seq);
        conflicting.add(e.seq);
      }
    }
  }
  return rows;
}
