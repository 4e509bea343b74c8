/**
 * Shipping receipts (`postern_receipts`, docs/teams.md): after each pass the
 * shipper inserts what the database then held of its home — how many
 * checkpoint lines, a digest of exactly those lines in file order, and the
 * highest seq of each journal. `audit verify --from` holds the database to
 * the furthest receipt: fewer checkpoint lines, other lines or lines in
 * another order under the digest, or entries missing from the end are each a
 * finding, where without a receipt they would read as a home that had not
 * shipped that far yet.
 *
 * Invariants:
 * - a receipt is insert-only like every shipped row (the shipping role may
 *   insert and select, nothing more), and names only what the shipper itself
 *   compared or inserted in that pass, taken from the home's own file;
 * - the digest is a chain over the lines' shipped texts (`'malformed'` for a
 *   torn line), so the digest of any prefix is computed in one walk;
 * - receipts are not signed: they catch an owner who changes the rows and not
 *   the receipts. An owner who deletes or rewrites the receipts too is seen
 *   only by the home itself (its next pass ships what is missing again) or by
 *   comparing the newest checkpoint `verify --from` prints with the home's
 *   own `postern audit verify` (docs/teams.md, "What verification proves").
 */
import type pg from 'pg';
import { sha256Hex } from '../json.js';
import type { JournalName } from '../database.js';
import { RECEIPT_DIGESTS, RECEIPT_INSERT, RECEIPTS_FURTHEST, RECEIPTS_PRESENT } from './schema.js';

/** The digest of no line. */
const RECEIPT_GENESIS = '0'.repeat(64);

/** The digest of every prefix of `texts`: element k is the digest of the first k lines. */
function prefixDigests(texts: readonly string[]): string[] {
  const out = [RECEIPT_GENESIS];
  for (const t of texts) out.push(sha256Hex(`${out.at(-1)!}\n${t}`));
  return out;
}

/** What the furthest receipts of a home say the database held; null when it has no receipt (or no receipts table). */
export interface ReceiptFacts {
  readonly checkpoints: number;
  /** The digests receipts give for the first `checkpoints` lines (one, unless a receipt was forged or the file diverged). */
  readonly digests: readonly string[];
  readonly heads: Readonly<Record<JournalName, number>>;
}

async function present(client: pg.ClientBase, privilege: 'INSERT' | 'SELECT'): Promise<boolean> {
  return ((await client.query(RECEIPTS_PRESENT, [privilege])).rows[0] as { present?: boolean } | undefined)?.present === true;
}

/** Records a pass's receipt; nothing when the database was made before receipts or the role may not insert them (an admin's `--init-schema --grant` again). */
export async function recordReceipt(client: pg.ClientBase, homeId: string, lineTexts: readonly string[], heads: Readonly<Record<JournalName, number>>): Promise<void> {
  if (!(await present(client, 'INSERT'))) return;
  const digest = prefixDigests(lineTexts).at(-1)!;
  await client.query(RECEIPT_INSERT, [homeId, lineTexts.length, digest, heads.activity, heads.sessions]);
}

export async function readReceipts(client: pg.ClientBase, homeId: string): Promise<ReceiptFacts | null> {
  if (!(await present(client, 'SELECT'))) return null;
  const far = (await client.query(RECEIPTS_FURTHEST, [homeId])).rows[0] as { checkpoints: string | null; activity: string | null; sessions: string | null } | undefined;
  if (far?.checkpoints === null || far?.checkpoints === undefined) return null;
  const checkpoints = Number(far.checkpoints);
  const digests = ((await client.query(RECEIPT_DIGESTS, [homeId, checkpoints])).rows as { digest: string }[]).map((r) => r.digest);
  return { checkpoints, digests, heads: { activity: Number(far.activity), sessions: Number(far.sessions) } };
}

/** What the database holds now, to be held against the receipts. */
interface HeldNow {
  readonly lineTexts: readonly string[];
  readonly heads: Readonly<Record<JournalName, number>>;
}

/** One line per way the database holds less, or other, than a receipt says it held; empty when it agrees. */
export function judgeReceipts(r: ReceiptFacts | null, now: HeldNow): string[] {
  if (r === null) return [];
  const out: string[] = [];
  if (now.lineTexts.length < r.checkpoints) {
    out.push(`checkpoints: the database holds ${now.lineTexts.length} checkpoint lines, but a shipment recorded ${r.checkpoints}: checkpoints were removed`);
  } else {
    const digest = prefixDigests(now.lineTexts.slice(0, r.checkpoints)).at(-1)!;
    if (r.digests.some((d) => d !== digest)) out.push(`checkpoints: the first ${r.checkpoints} checkpoint lines are not the ones a shipment recorded: checkpoints were edited, replaced or reordered`);
  }
  for (const name of ['sessions', 'activity'] as const) {
    if (now.heads[name] < r.heads[name]) out.push(`${name} journal: the database holds entries up to seq ${now.heads[name]}, but a shipment recorded seq ${r.heads[name]}: entries were removed from the end`);
  }
  return out;
}
