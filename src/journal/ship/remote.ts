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
import { BASES_SELECT, CHECKPOINTS_PAGE, ENTRIES_PAGE, GAPS_PRESENT, GAPS_SELECT, HOMES_SELECT } from './schema.js';
import type { StoredGap } from './gaps.js';
import { readReceipts, type ReceiptFacts } from './receipts.js';
import type { ChainBase } from '../types.js';

/** Rows per page of the paged reads (entries, checkpoint lines). */
const REMOTE_PAGE = 5000;

interface RemoteOptions {
  /** Rows per page (tests give a small one to walk many pages). */
  readonly page?: number;
}

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
  /** The checkpoint lines' stored texts, in file order (what receipts digest; `checkpoints` is each one parsed). */
  readonly lineTexts: readonly string[];
  /** The bases the database says each chain started at (untrusted: the signed checkpoints judge them). */
  readonly bases: Readonly<Partial<Record<JournalName, ChainBase>>>;
  /** What the home's furthest shipping receipts say the database held (null: none). */
  readonly receipts: ReceiptFacts | null;
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
export async function openRemoteHome(client: pg.ClientBase, home: ShippedHome, o: RemoteOptions = {}): Promise<RemoteHome> {
  const page = o.page ?? REMOTE_PAGE;
  const root = mkdtempSync(join(tmpdir(), 'postern-shipped-'));
  const dir = join(root, 'journal');
  try {
    const bases = new Map(((await client.query(BASES_SELECT, [home.home_id])).rows as { journal: JournalName; base: string }[]).map((b) => [b.journal, b.base]));
    const findings: RowFinding[] = [];
    ensureJournalDir(dir);
    for (const name of ['sessions', 'activity'] as const) await copyJournal(client, dir, home.home_id, name, bases.get(name), findings, page);
    const lineTexts = await checkpointLines(client, home.home_id, page);
    const gaps = ((await client.query(GAPS_PRESENT)).rows[0] as { present?: boolean } | undefined)?.present === true ? ((await client.query(GAPS_SELECT, [home.home_id])).rows as StoredGap[]).map((g) => ({ ...g, after_seq: Number(g.after_seq) })) : [];
    const receipts = await readReceipts(client, home.home_id);
    const journals = openJournals(dir, { readonly: true });
    return {
      home,
      journals,
      checkpoints: lineTexts.map(parseCheckpointLine),
      lineTexts,
      bases: Object.fromEntries([...bases].flatMap(([name, text]) => {
        const b = parsedBase(text);
        return b === undefined ? [] : [[name, b]];
      })),
      receipts,
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

/** Every checkpoint line of a home, in file order, a page at a time (keyset on the numeric position). */
async function checkpointLines(client: pg.ClientBase, homeId: string, page: number): Promise<string[]> {
  const out: string[] = [];
  for (let after = -1; ; ) {
    const rows = (await client.query(CHECKPOINTS_PAGE, [homeId, after, page])).rows as { position: string; line: string }[];
    for (const r of rows) out.push(r.line);
    if (rows.length < page) return out;
    after = Number(rows.at(-1)!.position);
  }
}

/** A stored base, when it reads as one (a base that does not is left to the chain walk, which reports it). */
function parsedBase(text: string): ChainBase | undefined {
  try {
    const b = JSON.parse(text) as Partial<ChainBase> | null;
    if (b === null || !Number.isSafeInteger(b.seq) || typeof b.hash !== 'string') return undefined;
    return { seq: b.seq!, hash: b.hash, claims_digest: typeof b.claims_digest === 'string' ? b.claims_digest : null };
  } catch {
    return undefined;
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

/**
 * The base as the copy's `meta` keeps it: null for a chain never pruned (chain.ts writes none); a pruned one
 * without its claims digest. The claims a prune kept for the entries it removed are not shipped, so the copy
 * holds none of them and has no digest to check them against; the digest itself is judged against the signed
 * checkpoints (ship/verify.ts puts the shipped one back into the facts), which is all the database can show.
 */
function copyBase(text: string): string | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return text; // kept as found: the chain walk reports a malformed base
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return text;
  const b = parsed as Record<string, unknown>;
  if (b['seq'] === 0) return null;
  return 'claims_digest' in b ? JSON.stringify({ ...b, claims_digest: null }) : text;
}

async function copyJournal(client: pg.ClientBase, dir: string, homeId: string, name: JournalName, base: string | undefined, findings: RowFinding[], page: number): Promise<void> {
  const { spec, columns } = SPECS[name];
  const db = openJournalDb(dir, spec, false, homeId);
  try {
    db.pragma('synchronous = OFF');
    // A chain that was never pruned has no base in `meta` (chain.ts): only a pruned one is written.
    const kept = base === undefined ? null : copyBase(base);
    if (kept !== null) db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)').run(BASE_META_KEY, kept);
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
      const rows = (await client.query(ENTRIES_PAGE, [homeId, name, after, page])).rows as { seq: string; row: string }[];
      put(rows);
      if (rows.length < page) break;
      after = Number(rows.at(-1)!.seq);
    }
    if (name === 'activity') db.exec(CLAIMS_FROM_HISTORY);
  } finally {
    db.close();
  }
}
