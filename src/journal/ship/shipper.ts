/**
 * One shipping pass: copies what the database does not have yet of this
 * home's two journals, then the signed checkpoints those entries make
 * verifiable (docs/teams.md).
 *
 * Invariants:
 * - where to resume is read from the database each pass (the highest seq it
 *   holds per home and journal), never from a local note: a crash or a cut
 *   anywhere resumes with no gap and no duplicate;
 * - entries go in seq order, a batch per transaction, so the database holds
 *   a contiguous prefix of each chain at every commit;
 * - a retry is idempotent (`ON CONFLICT DO NOTHING`); an entry the database
 *   already holds is compared byte for byte, and a different one is
 *   SHIP_CONFLICT — reported, never overwritten;
 * - entries pruned here before they were shipped stop shipping (SHIP_GAP)
 *   until the gap is accepted (`--accept-gap`: a signed record in the
 *   database, ship/gaps.ts); then it goes on from the chain's base;
 * - a checkpoint is shipped only once the entries it vouches for are, and in
 *   file order (its position is its key), so the database never holds a
 *   checkpoint whose heads it cannot show;
 * - each pass ends with a receipt (ship/receipts.ts) of what the database
 *   then holds: the checkpoint lines from the file's start and the heads;
 * - only reads of the local journals: the shipper never writes them and
 *   never holds them open across a network wait.
 */
import type pg from 'pg';
import type { Journals, JournalName } from '../index.js';
import type { EntryRow } from '../chain.js';
import { canonicalJson } from '../json.js';
import { readCheckpoints } from '../checkpoint/file.js';
import { walkTrust } from '../checkpoint/record.js';
import { PosternError } from '../../rules/errors.js';
import type { CheckpointSigner } from '../checkpoint/signature.js';
import type { ChainBase } from '../types.js';
import { BASE_INSERT, BASES_SELECT, CHECKPOINT_AT, CHECKPOINT_COUNT, CHECKPOINT_INSERT, ENTRIES_AT, ENTRIES_INSERT, GAP_AT, GAP_INSERT, HOME_INSERT, SHIPPED_MAX } from './schema.js';
import { readGap, signGap, type GapRecord, type StoredGap } from './gaps.js';
import { recordReceipt } from './receipts.js';

const DEFAULT_BATCH = 500;
const JOURNALS: readonly JournalName[] = ['sessions', 'activity'];

interface ShipSource {
  /** Read access to this home's journals (the daemon's own, or a read-only open). */
  readonly journals: Journals;
  readonly checkpointsPath: string;
  /** Which machine the rows come from, as team queries show it. */
  readonly homeName: string;
}

export interface ShipProgress {
  readonly home_id: string;
  /** Entries and checkpoints this pass inserted. */
  readonly shipped: { readonly activity: number; readonly sessions: number; readonly checkpoints: number };
  /** The highest seq the database holds after this pass, and the local head. */
  readonly remote: { readonly activity: number; readonly sessions: number };
  readonly local: { readonly activity: number; readonly sessions: number };
  /** Gaps this pass recorded (only with `acceptGap`, and only when there was one). */
  readonly accepted_gaps?: readonly GapRecord[];
}

export interface ShipOptions {
  readonly batch?: number;
  /** Stop after this many batches per journal (the daemon's loop yields between passes); default: until caught up. */
  readonly maxBatches?: number;
  /**
   * `audit ship --accept-gap`: entries pruned before they were shipped are accepted as a gap, signed
   * with this key (the home's checkpoint key) and recorded in the database (ship/gaps.ts); `at` stamps it.
   */
  readonly acceptGap?: { readonly signer: CheckpointSigner; readonly at: Date };
}

type Query = (sql: string, params: readonly unknown[]) => Promise<pg.QueryResult>;

/** Ships what the database lacks; throws SHIP_CONFLICT, SHIP_GAP, or the driver's error (for shipError). */
export async function shipPass(client: pg.ClientBase, src: ShipSource, opts: ShipOptions = {}): Promise<ShipProgress> {
  const q: Query = (sql, params) => client.query(sql, params as unknown[]);
  const batch = opts.batch ?? DEFAULT_BATCH;
  const facts = src.journals.facts();
  const homeId = facts.activity.journal_id ?? facts.sessions.journal_id;
  if (homeId === null) throw new PosternError('INTERNAL', 'this journal has no id yet: start the daemon once before shipping');
  const lines = readCheckpoints(src.checkpointsPath);
  // The key the home's checkpoints are trusted from (their first well-signed line's): `verify --from` holds them to it.
  const publicKey = walkTrust(lines).keys[0] ?? null;
  await q(HOME_INSERT, [homeId, src.homeName, publicKey]);

  const maxRows = await q(SHIPPED_MAX, [homeId]);
  const remote: Record<JournalName, number> = { activity: 0, sessions: 0 };
  for (const r of maxRows.rows as { journal: JournalName; seq: string }[]) remote[r.journal] = Number(r.seq);
  const shipped = { activity: 0, sessions: 0, checkpoints: 0 };
  const gaps: GapRecord[] = [];
  for (const name of JOURNALS) {
    const f = facts[name];
    // A first shipment starts where the chain starts now (its base: a prune before shipping is no gap).
    if (remote[name] === 0) remote[name] = await shippedBase(q, homeId, name, canonicalJson(f.base));
    if (remote[name] > f.head.seq) {
      throw new PosternError('SHIP_CONFLICT', `the database holds ${name} entries up to seq ${remote[name]} for home ${homeId}, past this journal's head (seq ${f.head.seq}): a journal put back or another home with this id`, { details: { home: homeId, journal: name, seq: f.head.seq + 1 } });
    }
    if (remote[name] < f.base.seq) {
      const accepted = await gapAccepted(q, homeId, name, remote[name], f.base, opts.acceptGap);
      if (accepted === false) {
        throw new PosternError('SHIP_GAP', `${name} entries ${remote[name] + 1} to ${f.base.seq} were pruned before they were shipped (the database holds up to seq ${remote[name]}): \`postern audit ship --accept-gap\` records the gap, signed, and ships on`, { details: { home: homeId, journal: name, seq: remote[name] + 1 } });
      }
      if (accepted !== true) gaps.push(accepted);
      remote[name] = f.base.seq;
    }
    for (let n = 0; remote[name] < f.head.seq && (opts.maxBatches === undefined || n < opts.maxBatches); n++) {
      const rows = readBatch(src.journals, name, remote[name], batch);
      if (rows.length === 0) break;
      shipped[name] += await insertBatch(q, client, homeId, name, rows);
      remote[name] = rows.at(-1)!.seq;
    }
  }
  const cps = await shipCheckpoints(q, homeId, lines, remote);
  shipped.checkpoints = cps.inserted;
  if (cps.held <= lines.length) await recordReceipt(client, homeId, lines.slice(0, cps.held).map(shippedText), remote);
  return { home_id: homeId, shipped, remote, local: { activity: facts.activity.head.seq, sessions: facts.sessions.head.seq }, ...(gaps.length === 0 ? {} : { accepted_gaps: gaps }) };
}

/**
 * Whether the database holds an accepted gap from `after` to this chain's base (true), or now does because
 * this pass recorded one (its record); false: not accepted. A stored record is taken as it is here
 * (the entries are gone from this home either way); `audit verify --from` judges its signature.
 */
async function gapAccepted(q: Query, homeId: string, name: JournalName, after: number, base: ChainBase, accept: ShipOptions['acceptGap']): Promise<GapRecord | boolean> {
  const stored = async (): Promise<GapRecord | undefined> => {
    const row = (await q(GAP_AT, [homeId, name, after])).rows[0] as StoredGap | undefined;
    const r = row === undefined ? undefined : readGap(row.record);
    return r !== undefined && r.base.seq === base.seq && r.base.hash === base.hash ? r : undefined;
  };
  if ((await stored()) !== undefined) return true;
  if (accept === undefined) return false;
  const g = signGap(accept.signer, homeId, name, after, base, accept.at);
  await q(GAP_INSERT, [homeId, name, after, g.record, g.signature]);
  if ((await stored()) === undefined) {
    throw new PosternError('SHIP_CONFLICT', `the database holds another gap record for ${name} after seq ${after} for home ${homeId}: left as it is (\`postern audit verify --from\` judges it)`, { details: { home: homeId, journal: name, seq: after + 1 } });
  }
  return g.parsed;
}

/** The base the database starts this chain at: the one given, unless an earlier pass recorded another. */
async function shippedBase(q: Query, homeId: string, name: JournalName, base: string): Promise<number> {
  await q(BASE_INSERT, [homeId, name, base]);
  const stored = ((await q(BASES_SELECT, [homeId])).rows as { journal: string; base: string }[]).find((b) => b.journal === name)?.base ?? base;
  try {
    const seq = (JSON.parse(stored) as { seq?: unknown }).seq;
    return typeof seq === 'number' && Number.isSafeInteger(seq) && seq >= 0 ? seq : 0;
  } catch {
    return 0;
  }
}

function readBatch(j: Journals, name: JournalName, after: number, max: number): EntryRow[] {
  const rows: EntryRow[] = [];
  const each = (row: EntryRow): boolean => {
    rows.push(row);
    return rows.length < max;
  };
  if (name === 'activity') j.activityEntries(after, each);
  else j.sessionsEntries(after, each);
  return rows;
}

/** One transaction; returns how many rows were new. A row already there must be this one, byte for byte. */
async function insertBatch(q: Query, client: pg.ClientBase, homeId: string, name: JournalName, rows: readonly EntryRow[]): Promise<number> {
  const texts = rows.map((r) => canonicalJson(r));
  await client.query('BEGIN');
  let inserted: Set<string>;
  try {
    const res = await q(ENTRIES_INSERT, [homeId, name, rows.map((r) => r.seq), rows.map((r) => String(r.at)), rows.map((r) => r.hash), texts]);
    inserted = new Set((res.rows as { seq: string }[]).map((r) => r.seq));
    await client.query('COMMIT');
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
  const existing = rows.filter((r) => !inserted.has(String(r.seq)));
  if (existing.length > 0) {
    const found = await q(ENTRIES_AT, [homeId, name, existing.map((r) => r.seq)]);
    const byseq = new Map((found.rows as { seq: string; row: string }[]).map((r) => [Number(r.seq), r.row]));
    for (const r of existing) {
      if (byseq.get(r.seq) !== texts[rows.indexOf(r)]) {
        throw new PosternError('SHIP_CONFLICT', `the database holds a different ${name} entry at seq ${r.seq} for home ${homeId}: left as it is (\`postern audit verify --from\` judges it)`, { details: { home: homeId, journal: name, seq: r.seq } });
      }
    }
  }
  return inserted.size;
}

/** A checkpoint line as it is shipped: its canonical JSON, or `malformed` for a line that does not parse (a torn append). */
function shippedText(line: ReturnType<typeof readCheckpoints>[number]): string {
  return line === 'malformed' ? 'malformed' : canonicalJson(line);
}

/**
 * Ships checkpoint lines in file order from where the database stops, up to the first whose heads are not
 * shipped yet. Returns how many went in, and how many lines the database holds from the start of the file.
 */
async function shipCheckpoints(q: Query, homeId: string, lines: ReturnType<typeof readCheckpoints>, remote: Readonly<Record<JournalName, number>>): Promise<{ inserted: number; held: number }> {
  const have = Number(((await q(CHECKPOINT_COUNT, [homeId])).rows[0] as { n: string }).n);
  let n = 0;
  let pos = have;
  for (; pos < lines.length; pos++) {
    const line = lines[pos]!;
    // A last line that does not parse may be an append still in progress: it waits for the next pass.
    if (line === 'malformed' && pos === lines.length - 1) break;
    if (line !== 'malformed' && line.record.journal_id === homeId && (line.record.activity.seq > remote.activity || line.record.sessions.seq > remote.sessions)) break;
    const text = shippedText(line);
    const res = await q(CHECKPOINT_INSERT, [homeId, pos, text]);
    if (res.rowCount === 1) n++;
    else {
      const there = (await q(CHECKPOINT_AT, [homeId, pos])).rows[0] as { line: string } | undefined;
      if (there?.line !== text) throw new PosternError('SHIP_CONFLICT', `the database holds a different checkpoint at line ${pos + 1} for home ${homeId}: left as it is`, { details: { home: homeId, journal: 'checkpoints', seq: pos + 1 } });
    }
  }
  return { inserted: n, held: pos };
}
