/**
 * Damaging a closed journal file the way a disk fault would: one page
 * overwritten with 0xff bytes (never a valid b-tree page), chosen by what it
 * holds — the entries table's root (every entry is behind it) or one of its
 * leaves (only the entries on it).
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import Database from 'better-sqlite3';

export type PageChoice = 'entries-root' | 'entries-middle-leaf';

/** Overwrites the chosen page of the SQLite file at `path` (closed, its WAL checkpointed); returns the page number. */
export function damagePage(path: string, choice: PageChoice): number {
  const probe = new Database(path, { readonly: true });
  let page: number;
  let pageSize: number;
  try {
    pageSize = probe.pragma('page_size', { simple: true }) as number;
    if (choice === 'entries-root') {
      page = probe.prepare(`SELECT rootpage FROM sqlite_schema WHERE name = 'entries'`).pluck().get() as number;
    } else {
      const leaves = probe.prepare(`SELECT pageno FROM dbstat WHERE name = 'entries' AND pagetype = 'leaf' ORDER BY pageno`).pluck().all() as number[];
      if (leaves.length < 3) throw new Error(`damagePage: ${path} has ${leaves.length} leaves; write more entries first`);
      page = leaves[Math.floor(leaves.length / 2)]!;
    }
  } finally {
    probe.close();
  }
  const fd = openSync(path, 'r+');
  try {
    writeSync(fd, Buffer.alloc(pageSize, 0xff), 0, pageSize, (page - 1) * pageSize);
  } finally {
    closeSync(fd);
  }
  return page;
}
