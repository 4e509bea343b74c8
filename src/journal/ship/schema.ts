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
 *   copies for indexes and are never trusted by verification. The copies the
 *   team queries filter on (kind … exposed) are taken from `row` by the
 *   database itself, in a trigger at every insert or change of `row`, so a
 *   shipper of any version fills them and they always say what `row` says
 *   (docs/decisions.md, "Team queries in PostgreSQL");
 * - nothing here updates or deletes: the shipping role needs INSERT and
 *   SELECT only (SHIP_GRANTS); the database is an untrusted store, checked
 *   against the signed checkpoints by `audit verify --from`.
 */

/** A call's first entry (intent, rejected, replay): the predicate of the call indexes, verbatim in every query that uses them. */
export const PG_HEAD = `journal = 'activity' AND kind IN ('intent', 'rejected', 'replay')`;

/**
 * The copies of `row`'s fields the team queries filter on, and their indexes
 * (ship/queries.ts; each plan is checked in test/unit/journal/ship-queries.test.ts
 * and by `npm run bench:audit`). For activity entries: kind, call_id,
 * session_id, tool, idempotency_key, error_code, and `exposed`, the names
 * of the credentials the entry recorded an exposure of; for sessions entries:
 * kind (the entry's type) and session_id. Ids and names compare as bytes
 * (COLLATE "C"), as in the SQLite journals, so an id prefix is an index range.
 *
 * A row that is not a JSON object gets no copies (`audit verify --from`
 * reports it); the trigger never refuses an insert. `UPDATE … SET row = row`
 * on rows without copies is the backfill of a database made by an earlier
 * schema: run by `--init-schema`, it touches only those rows. The first
 * schema's (journal, at) index is dropped: the partial indexes by time
 * replace it, and the planner took it over them for the newest calls (then
 * sorting each time's rows again).
 */
const ENTRY_COPIES = `
ALTER TABLE postern_entries
  ADD COLUMN IF NOT EXISTS kind text COLLATE "C",
  ADD COLUMN IF NOT EXISTS call_id text COLLATE "C",
  ADD COLUMN IF NOT EXISTS session_id text COLLATE "C",
  ADD COLUMN IF NOT EXISTS tool text COLLATE "C",
  ADD COLUMN IF NOT EXISTS idempotency_key text COLLATE "C",
  ADD COLUMN IF NOT EXISTS error_code text COLLATE "C",
  ADD COLUMN IF NOT EXISTS exposed text[];
CREATE OR REPLACE FUNCTION postern_entry_copies() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  r jsonb;
  body jsonb;
  found jsonb;
BEGIN
  NEW.kind := NULL; NEW.call_id := NULL; NEW.session_id := NULL; NEW.tool := NULL;
  NEW.idempotency_key := NULL; NEW.error_code := NULL; NEW.exposed := NULL;
  BEGIN
    r := NEW."row"::jsonb;
  EXCEPTION WHEN others THEN
    RETURN NEW;
  END;
  IF jsonb_typeof(r) IS DISTINCT FROM 'object' THEN RETURN NEW; END IF;
  NEW.session_id := r ->> 'session_id';
  IF NEW.journal = 'sessions' THEN
    NEW.kind := r ->> 'type';
    RETURN NEW;
  END IF;
  NEW.kind := r ->> 'kind'; NEW.call_id := r ->> 'call_id'; NEW.tool := r ->> 'tool';
  NEW.idempotency_key := r ->> 'idempotency_key'; NEW.error_code := r ->> 'error_code';
  IF strpos(r ->> 'body', '"exposures":') > 0 THEN
    BEGIN
      body := (r ->> 'body')::jsonb;
    EXCEPTION WHEN others THEN
      RETURN NEW;
    END;
    found := CASE WHEN NEW.kind = 'outcome' THEN body -> 'exposures' ELSE body -> 'call' -> 'exposures' END;
    IF jsonb_typeof(found) = 'array' THEN
      SELECT array_agg(DISTINCT x ->> 'credential') INTO NEW.exposed
      FROM jsonb_array_elements(found) AS x WHERE jsonb_typeof(x) = 'object' AND x ->> 'credential' IS NOT NULL;
    END IF;
  END IF;
  RETURN NEW;
END
$fn$;
CREATE OR REPLACE TRIGGER postern_entry_copies BEFORE INSERT OR UPDATE OF "row" ON postern_entries
  FOR EACH ROW EXECUTE FUNCTION postern_entry_copies();
UPDATE postern_entries SET "row" = "row" WHERE kind IS NULL;
CREATE INDEX IF NOT EXISTS postern_calls_at ON postern_entries (at, seq, home_id) WHERE ${PG_HEAD};
CREATE INDEX IF NOT EXISTS postern_calls_tool ON postern_entries (tool, at, seq, home_id) WHERE ${PG_HEAD};
CREATE INDEX IF NOT EXISTS postern_calls_session ON postern_entries (session_id, at, seq, home_id) WHERE ${PG_HEAD};
CREATE INDEX IF NOT EXISTS postern_calls_key ON postern_entries (idempotency_key, at, seq, home_id) WHERE ${PG_HEAD} AND idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS postern_calls_error ON postern_entries (error_code, home_id, call_id) WHERE journal = 'activity' AND error_code IS NOT NULL;
CREATE INDEX IF NOT EXISTS postern_calls_id ON postern_entries (call_id, home_id) WHERE journal = 'activity';
CREATE INDEX IF NOT EXISTS postern_sessions_started ON postern_entries (at, seq, home_id) WHERE journal = 'sessions' AND kind = 'session_started';
CREATE INDEX IF NOT EXISTS postern_sessions_id ON postern_entries (session_id, home_id, seq) WHERE journal = 'sessions';
CREATE INDEX IF NOT EXISTS postern_exposed ON postern_entries USING gin (exposed) WHERE exposed IS NOT NULL;
DROP INDEX IF EXISTS postern_entries_at;`;

/** The indexes of the team queries, by name (the plan checks name them). */
export const TEAM_INDEXES = ['postern_calls_at', 'postern_calls_tool', 'postern_calls_session', 'postern_calls_key', 'postern_calls_error', 'postern_calls_id', 'postern_sessions_started', 'postern_sessions_id', 'postern_exposed'] as const;

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
${ENTRY_COPIES}
CREATE TABLE IF NOT EXISTS postern_gaps (
  home_id text NOT NULL,
  journal text NOT NULL CHECK (journal IN ('activity', 'sessions')),
  after_seq bigint NOT NULL CHECK (after_seq >= 0),
  record text NOT NULL,
  signature text NOT NULL,
  shipped_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (home_id, journal, after_seq)
);
CREATE TABLE IF NOT EXISTS postern_checkpoints (
  home_id text NOT NULL,
  position bigint NOT NULL CHECK (position >= 0),
  line text NOT NULL,
  shipped_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (home_id, position)
);
CREATE TABLE IF NOT EXISTS postern_receipts (
  home_id text NOT NULL,
  checkpoints bigint NOT NULL CHECK (checkpoints >= 0),
  digest text NOT NULL,
  activity bigint NOT NULL CHECK (activity >= 0),
  sessions bigint NOT NULL CHECK (sessions >= 0),
  shipped_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (home_id, checkpoints, activity, sessions)
);
`;

const SHIP_TABLES = ['postern_homes', 'postern_bases', 'postern_entries', 'postern_checkpoints', 'postern_gaps', 'postern_receipts'] as const;

/** What an admin grants the shipping role (and nothing more): insert and read, never update or delete. */
export function shipGrants(role: string): string {
  const r = quoteIdent(role);
  return [`GRANT USAGE ON SCHEMA public TO ${r};`, `GRANT SELECT, INSERT ON ${SHIP_TABLES.join(', ')} TO ${r};`].join('\n');
}

/** A role name as a quoted SQL identifier. */
function quoteIdent(name: string): string {
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

/** An accepted gap (ship/gaps.ts): the signed record of the entries a home pruned before they were shipped. */
export const GAP_INSERT = 'INSERT INTO postern_gaps (home_id, journal, after_seq, record, signature) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING';
export const GAP_AT = 'SELECT journal, after_seq::text AS after_seq, record, signature FROM postern_gaps WHERE home_id = $1 AND journal = $2 AND after_seq = $3';
export const GAPS_SELECT = 'SELECT g.journal, g.after_seq::text AS after_seq, g.record, g.signature FROM postern_gaps g WHERE g.home_id = $1 ORDER BY g.journal, g.after_seq';
/** Whether postern_gaps exists (a database made before it has no gaps, and is read as such). */
export const GAPS_PRESENT = "SELECT to_regclass('postern_gaps') IS NOT NULL AS present";
export const HOMES_SELECT = 'SELECT home_id, name, public_key FROM postern_homes ORDER BY name, home_id';
export const BASES_SELECT = 'SELECT journal, base FROM postern_bases WHERE home_id = $1';
/*
 * Paged reads. Each orders and pages by the table's own numeric column, named
 * with its table alias: a bare `ORDER BY seq` would name the `seq::text`
 * output column and page in text order ('1', '10', '100', …, '2'), and the
 * keyset (`> $n`) would then skip whole ranges.
 */
/** A page of one home's journal, by seq (the primary key), after seq $3. */
export const ENTRIES_PAGE = 'SELECT e.seq::text AS seq, e.row FROM postern_entries e WHERE e.home_id = $1 AND e.journal = $2 AND e.seq > $3 ORDER BY e.seq LIMIT $4';
/** A page of one home's checkpoint lines, in file order, after position $2 (-1 for the first page). */
export const CHECKPOINTS_PAGE = 'SELECT c.position::text AS position, c.line FROM postern_checkpoints c WHERE c.home_id = $1 AND c.position > $2 ORDER BY c.position LIMIT $3';
/**
 * Whether postern_receipts exists and this role may use it ($1: 'INSERT' or 'SELECT'). A database made
 * before it, or a role not granted it yet, has none: shipping records none, verification reads none.
 */
export const RECEIPTS_PRESENT = "SELECT CASE WHEN to_regclass('postern_receipts') IS NULL THEN false ELSE has_table_privilege('postern_receipts', $1) END AS present";
/** A shipping pass's receipt (ship/receipts.ts): what the database held of this home after it. */
export const RECEIPT_INSERT = 'INSERT INTO postern_receipts (home_id, checkpoints, digest, activity, sessions) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING';
/** The furthest any receipt of this home says the database held (nulls: no receipt). */
export const RECEIPTS_FURTHEST = 'SELECT max(r.checkpoints)::text AS checkpoints, max(r.activity)::text AS activity, max(r.sessions)::text AS sessions FROM postern_receipts r WHERE r.home_id = $1';
/** The digests the receipts give for the first $2 checkpoint lines. */
export const RECEIPT_DIGESTS = 'SELECT DISTINCT r.digest FROM postern_receipts r WHERE r.home_id = $1 AND r.checkpoints = $2 ORDER BY r.digest';
