/**
 * Editing a closed activity journal the way a same-user agent with plain
 * SQLite can: the append-only triggers dropped, the entries after a given seq
 * rewritten by `edit`, every one of them re-chained with the journal's own
 * (keyless) hash, and the triggers put back — a journal that verifies end to
 * end, and that only something the agent cannot forge (the anchor, the
 * vault's record, a signed checkpoint) can tell from the real one.
 */
import Database from 'better-sqlite3';
import { CONTENT_COLUMNS } from '../../src/journal/activity-schema.js';
import { entryHash, GENESIS_HASH, type Cell } from '../../src/journal/chain.js';

export type Row = Record<string, Cell>;

/**
 * Replaces the entries after `after` with `edit(rows)` (renumbered from
 * `after + 1`, re-chained from the entry at `after`), and the idempotency
 * table's rows for the keys they name with what the edited intents claim.
 */
export function rechainActivity(path: string, after: number, edit: (rows: Row[]) => Row[]): void {
  const db = new Database(path);
  try {
    const prevOf = (seq: number): string => (seq === 0 ? GENESIS_HASH : (db.prepare('SELECT hash FROM entries WHERE seq = ?').pluck().get(seq) as string));
    const rows = db.prepare('SELECT * FROM entries WHERE seq > ? ORDER BY seq').all(after) as Row[];
    const edited = edit(rows.map((r) => ({ ...r })));
    const triggers = db.prepare(`SELECT sql FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'entries'`).pluck().all() as string[];
    db.transaction(() => {
      for (const t of db.prepare(`SELECT name FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'entries'`).pluck().all() as string[]) db.exec(`DROP TRIGGER ${t}`);
      db.prepare('DELETE FROM entries WHERE seq > ?').run(after);
      let prev = prevOf(after);
      const names = [...CONTENT_COLUMNS, 'prev_hash', 'hash'];
      const insert = db.prepare(`INSERT INTO entries (${names.join(', ')}) VALUES (${names.map((n) => `@${n}`).join(', ')})`);
      edited.forEach((r, i) => {
        const content: Row = {};
        for (const c of CONTENT_COLUMNS) content[c] = r[c] ?? null;
        content['seq'] = after + 1 + i;
        const hash = entryHash(prev, content);
        insert.run({ ...content, prev_hash: prev, hash });
        prev = hash;
      });
      // The claims follow the edited intents, so nothing but the chain's own checks could notice.
      for (const r of rows) if (r['kind'] === 'intent' && r['idempotency_key'] !== null) db.prepare('DELETE FROM idempotency WHERE call_id = ?').run(r['call_id']);
      for (const t of triggers) db.exec(t);
    })();
  } finally {
    db.close();
  }
}

/** The head seq of the activity journal at `path`. */
export function activityHead(path: string): number {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare('SELECT coalesce(max(seq), 0) FROM entries').pluck().get() as number) ?? 0;
  } finally {
    db.close();
  }
}
