/**
 * Reading shipped journals back for `audit verify --from`: the homes a
 * database holds, and one home's journals copied into a private temporary
 * journal directory, so that the very code that verifies a local journal
 * (chain.ts, checkpoint/) judges a shipped one. (The team queries do not
 * copy: ship/queries.ts asks the database.) Nothing here judges: what a row cannot be (unparsable, not of its
 * journal's shape, stored under another seq) is noted as a finding and the
 * row left out, which the chain walk then reports as a missing entry.
 *
 * Invariants: the database is untrusted — every row's bytes are re-hashed by
 * the chain walk, the extra columns (at, hash) are ignored; the copy lives in
 * a 0700 temp dir, removed by `close()`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { openJournals, type Journals, type JournalName } from '../index.js';
import { ACTIVITY_SCHEMA, CONTENT_COLUMNS } from '../activity-schema.js';
import { SESSIONS_CONTENT_COLUMNS, SESSIONS_SCHEMA } from '../sessions.js';
import { BASE_META_KEY } from '../chain.js';
import { ensureJournalDir, openJournalDb, type SchemaSpec } from '../database.js';
import { parseCheckpointLine } from '../checkpoint/file.js';
import type { StoredCheckpoint } from '../checkpoint/record.js';
import { BASES_SELECT, CHECKPOINTS_SELECT, ENTRIES_PAGE, GAPS_PRESENT, GAPS_SELECT, HOMES_SELECT } from './schema.js';
import type { StoredGap } from './gaps.js';

const PAGE = 5000;

export interface ShippedHome {
  readonly home_id: string;
  readonly name: string;
  /** The key recorded at the first shipment (untrusted: printed for comparison with `postern audit key`). */
  readonly public_key: string | null;
}

/** A row of the database that could not be copied, or that sits under another seq than its own. */
export interface RowFinding {
  readonly journal: JournalName;
  readonly seq: number;
  readonly problem: 'unreadable' | 'misplaced';
}

export interface RemoteHome {
  readonly home: ShippedHome;
  /** The copy, opened read-only like a local audit. */
  readonly journals: Journals;
  readonly checkpoints: readonly (StoredCheckpoint | 'malformed')[];
  readonly rows: readonly RowFinding[];
  /** The accepted gaps the database holds for this home (ship/gaps.ts), unjudged. */
  readonly gaps: readonly StoredGap[];
  close(): void;
}

export async function listHomes(client: pg.ClientBase): Promise<ShippedHome[]> {
  return (await client.query(HOMES_SELECT)).rows as ShippedHome[];
}

/** The homes `filter` names: a home id, its unique prefix, or a home name; all homes without one. */
export function selectHomes(homes: readonly ShippedHome[], filter: string | undefined): ShippedHome[] {
  if (filter === undefined) return [...homes];
  const exact = homes.filter((h) => h.home_id === filter || h.name === filter);
  return exact.length > 0 ? exact : homes.filter((h) => h.home_id.startsWith(filter));
}

const SPECS: Record<JournalName, { spec: SchemaSpec; columns: readonly string[] }> = {
  activity: { spec: ACTIVITY_SCHEMA, columns: CONTENT_COLUMNS },
  sessions: { spec: SESSIONS_SCHEMA, columns: SESSIONS_CONTENT_COLUMNS },
};

/** Copies one home's shipped journals and checkpoints; `close()` removes the copy. */
export async function openRemoteHome(client: pg.ClientBase, home: ShippedHome): Promise<RemoteHome> {
  const root = mkdtempSync(join(tmpdir(), 'postern-shipped-'));
  const dir = join(root, 'journal');
  try {
    const bases = new Map(((await client.query(BASES_SELECT, [home.home_id])).rows as { journal: JournalName; base: string }[]).map((b) => [b.journal, b.base]));
    const findings: RowFinding[] = [];
    ensureJournalDir(dir);
    for (const name of ['sessions', 'activity'] as const) await copyJournal(client, dir, home.home_id, name, bases.get(name), findings);
    const lines = ((await client.query(CHECKPOINTS_SELECT, [home.home_id])).rows as { line: string }[]).map((r) => parseCheckpointLine(r.line));
    const gaps = ((await client.query(GAPS_PRESENT)).rows[0] as { present?: boolean } | undefined)?.present === true ? ((await client.query(GAPS_SELECT, [home.home_id])).rows as StoredGap[]).map((g) => ({ ...g, after_seq: Number(g.after_seq) })) : [];
    const journals = openJournals(dir, { readonly: true });
    return {
      home,
      journals,
      checkpoints: lines,
      rows: findings,
      gaps,
      close() {
        journals.close();
        rmSync(root, { recursive: true, force: true });
      },
    };
  } catch (e) {
    rmSync(root, { recursive: true, force: true });
    throw e;
  }
}

/**
 * The idempotency claims are state kept beside the chain, not shipped: the copy gets the claims its
 * history implies (claims-check.ts then finds them consistent; the chain is what is verified).
 */
const CLAIMS_FROM_HISTORY = `
  INSERT OR REPLACE INTO idempotency (tool, key, call_id, session_id, args_digest, state, intent_seq, outcome_seq)
  SELECT i.tool, i.idempotency_key, i.call_id, i.session_id, json_extract(i.body, '$.call.args_digest'),
         CASE WHEN o.seq IS NULL THEN 'in_progress' ELSE o.claim END, i.seq, o.seq
  FROM entries i LEFT JOIN entries o ON o.call_id = i.call_id AND o.kind = 'outcome'
  WHERE i.kind = 'intent' AND i.claim = 'claimed' AND i.idempotency_key IS NOT NULL AND (o.seq IS NULL OR o.claim IN ('completed', 'outcome_unknown'))
  ORDER BY i.seq`;

function prunedBase(text: string): boolean {
  try {
    return (JSON.parse(text) as { seq?: unknown }).seq !== 0;
  } catch {
    return true; // kept as found: the chain walk reports a malformed base
  }
}

async function copyJournal(client: pg.ClientBase, dir: string, homeId: string, name: JournalName, base: string | undefined, findings: RowFinding[]): Promise<void> {
  const { spec, columns } = SPECS[name];
  const db = openJournalDb(dir, spec, false, homeId);
  try {
    db.pragma('synchronous = OFF');
    // A chain that was never pruned has no base in `meta` (chain.ts): only a pruned one is written.
    if (base !== undefined && prunedBase(base)) db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)').run(BASE_META_KEY, base);
    const names = [...columns, 'prev_hash', 'hash'];
    const insert = db.prepare(`INSERT INTO entries (${names.join(', ')}) VALUES (${names.map((n) => `@${n}`).join(', ')})`);
    const put = db.transaction((rows: readonly { seq: string; row: string }[]) => {
      for (const r of rows) {
        const seq = Number(r.seq);
        let values: Record<string, unknown>;
        try {
          values = JSON.parse(r.row) as Record<string, unknown>;
          if (typeof values !== 'object' || values === null) throw new Error('not an object');
        } catch {
          findings.push({ journal: name, seq, problem: 'unreadable' });
          continue;
        }
        if (values['seq'] !== seq) findings.push({ journal: name, seq, problem: 'misplaced' });
        const cells: Record<string, unknown> = {};
        for (const c of names) cells[c] = c === 'seq' ? seq : (values[c] ?? null);
        try {
          insert.run(cells);
        } catch {
          findings.push({ journal: name, seq, problem: 'unreadable' });
        }
      }
    });
    for (let after = 0; ; ) {
      const page = (await client.query(ENTRIES_PAGE, [homeId, name, after, PAGE])).rows as { seq: string; row: string }[];
      put(page);
      if (page.length < PAGE) break;
      after = Number(page.at(-1)!.seq);
    }
    if (name === 'activity') db.exec(CLAIMS_FROM_HISTORY);
  } finally {
    db.close();
  }
}
