/**
 * The PostgreSQL tables journals are shipped to (docs/teams.md), and the SQL
 * that reads and writes them. One home of these statements: the shipper, the
 * remote reader and the README's GRANTs all take them from here.
 *
 * Invariants:
 * - every entry is keyed by (home_id, journal, seq): a retry of the same
 *   entry is a conflict that changes nothing (`ON CONFLICT DO NOTHING`), and
 *   the shipper compares the stored `row` text with its own, byte for byte;
 * - `row` is the entry's canonical JSON (every column, prev_hash and hash
 *   included), the exact bytes a verifier re-hashes; the other columns are
 *   copies for indexes and are never trusted by verification;
 * - nothing here updates or deletes: the shipping role needs INSERT and
 *   SELECT only (SHIP_GRANTS); the database is an untrusted store, checked
 *   against the signed checkpoints by `audit verify --from`.
 */

/** Tables and indexes; `CREATE … IF NOT EXISTS`, so a second run changes nothing. Run by an admin role. */
export const SHIP_SCHEMA = `
CREATE TABLE IF NOT EXISTS postern_homes (
  home_id text PRIMARY KEY,
  name text NOT NULL,
  public_key text,
  first_shipped_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS postern_bases (
  home_id text NOT NULL,
  journal text NOT NULL CHECK (journal IN ('activity', 'sessions')),
  base text NOT NULL,
  PRIMARY KEY (home_id, journal)
);
CREATE TABLE IF NOT EXISTS postern_entries (
  home_id text NOT NULL,
  journal text NOT NULL CHECK (journal IN ('activity', 'sessions')),
  seq bigint NOT NULL CHECK (seq > 0),
  at text NOT NULL,
  hash text NOT NULL,
  row text NOT NULL,
  shipped_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (home_id, journal, seq)
);
CREATE INDEX IF NOT EXISTS postern_entries_at ON postern_entries (journal, at);
CREATE TABLE IF NOT EXISTS postern_checkpoints (
  home_id text NOT NULL,
  position bigint NOT NULL CHECK (position >= 0),
  line text NOT NULL,
  shipped_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (home_id, position)
);
`;

export const SHIP_TABLES = ['postern_homes', 'postern_bases', 'postern_entries', 'postern_checkpoints'] as const;

/** What an admin grants the shipping role (and nothing more): insert and read, never update or delete. */
export function shipGrants(role: string): string {
  const r = quoteIdent(role);
  return [`GRANT USAGE ON SCHEMA public TO ${r};`, `GRANT SELECT, INSERT ON ${SHIP_TABLES.join(', ')} TO ${r};`].join('\n');
}

/** A role name as a quoted SQL identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

export const HOME_INSERT = 'INSERT INTO postern_homes (home_id, name, public_key) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING';
export const BASE_INSERT = 'INSERT INTO postern_bases (home_id, journal, base) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING';
export const SHIPPED_MAX = 'SELECT journal, max(seq)::text AS seq FROM postern_entries WHERE home_id = $1 GROUP BY journal';
export const CHECKPOINT_COUNT = 'SELECT count(*)::text AS n FROM postern_checkpoints WHERE home_id = $1';
/** One batch: arrays of seqs, times, hashes and rows; returns the seqs that went in (a conflict returns nothing). */
export const ENTRIES_INSERT = `
  INSERT INTO postern_entries (home_id, journal, seq, at, hash, row)
  SELECT $1, $2, s, a, h, r FROM unnest($3::bigint[], $4::text[], $5::text[], $6::text[]) AS t(s, a, h, r)
  ORDER BY s
  ON CONFLICT DO NOTHING RETURNING seq::text AS seq`;
export const ENTRIES_AT = 'SELECT seq::text AS seq, row FROM postern_entries WHERE home_id = $1 AND journal = $2 AND seq = ANY($3::bigint[])';
/** The checkpoint file's line at `position` (0-based, in file order): the order trust is walked in. */
export const CHECKPOINT_INSERT = 'INSERT INTO postern_checkpoints (home_id, position, line) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING position';
export const CHECKPOINT_AT = 'SELECT line FROM postern_checkpoints WHERE home_id = $1 AND position = $2';

export const HOMES_SELECT = 'SELECT home_id, name, public_key FROM postern_homes ORDER BY name, home_id';
export const BASES_SELECT = 'SELECT journal, base FROM postern_bases WHERE home_id = $1';
/** A page of one home's journal, by seq (the primary key). */
export const ENTRIES_PAGE = 'SELECT seq::text AS seq, row FROM postern_entries WHERE home_id = $1 AND journal = $2 AND seq > $3 ORDER BY seq LIMIT $4';
export const CHECKPOINTS_SELECT = 'SELECT position::text AS position, line FROM postern_checkpoints WHERE home_id = $1 ORDER BY position';
