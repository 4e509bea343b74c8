/**
 * The verified point of the idempotency claims: the proof, at every start,
 * that the `idempotency` table (state, not history: neither chained nor
 * anchored) is exactly what the chained entries imply — so that no edit of
 * that table, and no edit of the entries it is checked against, can make a
 * completed key run again.
 *
 * The file `journal/claims.verified` holds one record, MAC'd under the
 * vault's journal-anchor key (a domain of its own): the journal id, a seq P
 * of the activity chain with its hash, and the digest of every claim row
 * whose intent seq is at or before P, as they were when P was sealed. P is
 * sealed only where every such row is final (completed or outcome_unknown:
 * a final claim never changes again, activity-store.ts), so the rows up to P
 * must keep exactly that digest forever.
 *
 * At start, before recovery writes anything (`proveClaims`):
 * - with a seal of this journal that still applies (P between the chain's
 *   base and head): the claim rows up to P must have the sealed digest; the
 *   entries after P are walked from the sealed hash to the head (each seq,
 *   prev_hash and hash), and the claims they imply are cross-checked with the
 *   table (claims-check.ts) — the cost is one pass over the claim rows plus
 *   the entries written since the seal;
 * - without one (a journal that never sealed, a seal deleted, forged or of
 *   another journal, a P pruned away or past the head): the whole chain from
 *   its base is walked and every claim cross-checked — slower, never weaker.
 * Any difference refuses the start (JOURNAL_TAMPERED). A seal put back from
 * earlier is harmless: the rows it covers are final, so it still holds.
 *
 * The seal moves forward after a proof at start (once recovery finished every
 * open claim) and at a clean close of the journals, when the watch
 * (integrity.ts) shows no other process wrote them since they were opened:
 * then the entries past the last seal are the daemon's own. P stops before
 * the first claim still in progress. Invariant: a seal is written only over
 * claims this process proved or wrote itself.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { closeSync, constants, fstatSync, fsyncSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { z } from 'zod';
import { PosternError } from '../../rules/errors.js';
import { fileEvent } from '../../vault/file-events.js';
import { CONTENT_COLUMNS } from '../activity-schema.js';
import { entryHash, type Cell, type EntryRow } from '../chain.js';
import { firstClaimMismatch, firstClaimMismatchAfter } from '../claims-check.js';
import { canonicalJson } from '../json.js';
import { openJournals } from '../index.js';
import { journalPresence } from '../presence.js';
import type { ChainBase, ChainHead } from '../types.js';

const VERIFIED_FILE = 'claims.verified';
const FORMAT = 'postern.claims-verified/1';
const MAC_DOMAIN = 'postern journal claims verified v1\n';
const MAX_FILE_BYTES = 4096;
const PAGE = 1000;

interface VerifiedPoint {
  readonly format: typeof FORMAT;
  readonly journal_id: string;
  readonly seq: number;
  readonly hash: string;
  /** The claim rows with intent seq at or before `seq`: how many, and the SHA-256 of their canonical rows in (tool, key) order. */
  readonly claims: { readonly rows: number; readonly digest: string };
  readonly at: string;
}

const Hex64 = z.string().regex(/^[0-9a-f]{64}$/);
const Seq = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const Stored = z
  .object({
    record: z
      .object({
        format: z.literal(FORMAT),
        journal_id: z.string().min(1).max(128),
        seq: Seq,
        hash: Hex64,
        claims: z.object({ rows: Seq, digest: Hex64 }).strict(),
        at: z.string().max(64),
      })
      .strict(),
    mac: Hex64,
  })
  .strict();

function macOf(key: Uint8Array, record: VerifiedPoint): string {
  return createHmac('sha256', key).update(MAC_DOMAIN).update(canonicalJson(record)).digest('hex');
}

export function verifiedPath(journalDir: string): string {
  return join(journalDir, VERIFIED_FILE);
}

/** The authentic seal, or undefined (none, unreadable, malformed or forged: the proof then starts from the base). */
export function readVerified(path: string, key: Uint8Array): VerifiedPoint | undefined {
  let text: string;
  try {
    const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      if (fstatSync(fd).size > MAX_FILE_BYTES) return undefined;
      text = readFileSync(fd, 'utf8');
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
  let parsed;
  try {
    parsed = Stored.safeParse(JSON.parse(text));
  } catch {
    return undefined;
  }
  if (!parsed.success) return undefined;
  const { record, mac } = parsed.data;
  const expected = Buffer.from(macOf(key, record), 'hex');
  return timingSafeEqual(expected, Buffer.from(mac, 'hex')) ? record : undefined;
}

/** Writes the seal durably (temp, fsync, rename); a failure is the caller's to log: the old seal still holds. */
function writeVerified(path: string, key: Uint8Array, record: VerifiedPoint): void {
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    const fd = openSync(tmp, 'wx', 0o600);
    try {
      writeSync(fd, `${JSON.stringify({ record, mac: macOf(key, record) })}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
    fileEvent();
  } catch (e) {
    try {
      unlinkSync(tmp);
    } catch {
      // never created, or renamed
    }
    throw new PosternError('JOURNAL_UNAVAILABLE', `journal: cannot write ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`, { cause: e });
  }
}

const CLAIM_ROWS = `SELECT tool, key, call_id, session_id, args_digest, state, intent_seq, outcome_seq FROM idempotency WHERE intent_seq <= ? ORDER BY tool, key`;

/** The digest of the claim rows whose intent seq is at or before `seq` (one pass over the table, in its key order). */
function claimsDigest(db: Database.Database, seq: number): { rows: number; digest: string } {
  const h = createHash('sha256');
  let rows = 0;
  for (const r of db.prepare<[number], unknown[]>(CLAIM_ROWS).raw().iterate(seq)) {
    h.update(JSON.stringify(r));
    h.update('\n');
    rows += 1;
  }
  return { rows, digest: h.digest('hex') };
}

/** Where the next seal may stand: before the first claim still in progress, else at the head. */
function sealableSeq(db: Database.Database, head: number): number {
  const open = db.prepare<[], number | null>(`SELECT min(intent_seq) FROM idempotency WHERE state = 'in_progress'`).pluck().get();
  return open === null || open === undefined ? head : Math.min(head, open - 1);
}

/** The first break walking the chain from `from` to `head`, or null. */
function walkProblem(db: Database.Database, from: ChainHead, head: ChainHead): string | null {
  const page = db.prepare<[number, number], EntryRow>('SELECT * FROM entries WHERE seq > ? ORDER BY seq LIMIT ?');
  let expected = from.seq + 1;
  let prev = from.hash;
  for (;;) {
    const rows = page.all(expected - 1, PAGE);
    for (const row of rows) {
      if (row.seq !== expected) return `entry ${expected} is missing`;
      const content: Record<string, Cell> = {};
      for (const c of CONTENT_COLUMNS) content[c] = row[c] ?? null;
      if (row.prev_hash !== prev || entryHash(prev, content) !== row.hash) return `entry ${row.seq} was changed`;
      expected += 1;
      prev = row.hash;
    }
    if (rows.length < PAGE) break;
  }
  if (expected - 1 !== head.seq || prev !== head.hash) return `the entries after ${from.seq} do not lead to the anchored head`;
  return null;
}

/** What the start proved: the seq the proof started from, and the seal to write next (null when the old one still says as much). */
export interface ClaimsProof {
  readonly from: number;
  readonly walked: number;
}

/** The activity chain as found at start. */
interface ActivityFound {
  readonly journal_id: string;
  readonly head: ChainHead;
  readonly base: ChainBase;
}

function tampered(what: string): PosternError {
  return new PosternError(
    'JOURNAL_TAMPERED',
    `the activity journal was edited outside Postern (${what}): a completed idempotency key could run again on it, so the daemon will not start; \`postern audit verify --unlock\` shows where, then restore the journal from a backup (\`postern anchor restore-journal BACKUP\`) or start a new one (\`postern anchor new-journal\`)`,
    { details: { reason: 'claims_unproved' } },
  );
}

/**
 * Proves the claims against the chain (see the header); throws
 * JOURNAL_TAMPERED on the first thing it cannot prove. Read only.
 */
export function proveClaims(db: Database.Database, found: ActivityFound, seal: VerifiedPoint | undefined): ClaimsProof {
  const applies = seal !== undefined && seal.journal_id === found.journal_id && seal.seq >= found.base.seq && seal.seq <= found.head.seq;
  const from: ChainHead = applies ? { seq: seal.seq, hash: seal.hash } : { seq: found.base.seq, hash: found.base.hash };
  if (applies) {
    const now = claimsDigest(db, seal.seq);
    if (now.digest !== seal.claims.digest) {
      const fewer = now.rows < seal.claims.rows ? `${seal.claims.rows - now.rows} claim row(s) removed` : 'claim rows changed';
      throw tampered(`${fewer} among the ${seal.claims.rows} proved at entry ${seal.seq}`);
    }
  }
  const broken = walkProblem(db, from, found.head);
  if (broken !== null) throw tampered(broken);
  const bad = applies ? firstClaimMismatchAfter(db, from.seq) : firstClaimMismatch(db, found.base);
  if (bad !== undefined) throw tampered(`the idempotency claim of entry ${bad} does not match the chained entries`);
  return { from: from.seq, walked: found.head.seq - from.seq };
}

/** Seals the claims as they are now, when that moves the verified point forward; returns the new point's seq or null. */
export function sealClaims(db: Database.Database, path: string, key: Uint8Array, found: ActivityFound, after: number, at: string): number | null {
  const seq = sealableSeq(db, found.head.seq);
  if (seq <= after) return null;
  const hash = db.prepare<[number], string>('SELECT hash FROM entries WHERE seq = ?').pluck().get(seq) ?? (seq === found.base.seq ? found.base.hash : undefined);
  if (hash === undefined) return null;
  writeVerified(path, key, { format: FORMAT, journal_id: found.journal_id, seq, hash, claims: claimsDigest(db, seq), at });
  return seq;
}

/**
 * The same proof, read only, for `doctor --unlock` and `anchor status`: the
 * refusal's message, or null when the claims are proved (or there are no
 * journal files to prove them on).
 */
export function inspectClaims(journalDir: string, key: Uint8Array): string | null {
  if (journalPresence(journalDir).kind !== 'complete') return null;
  const j = openJournals(journalDir, { readonly: true });
  try {
    const a = j.facts().activity;
    proveClaims(j.activityDb, { journal_id: a.journal_id ?? '', head: a.head, base: a.base }, readVerified(verifiedPath(journalDir), key));
    return null;
  } catch (e) {
    if (e instanceof PosternError && e.code === 'JOURNAL_TAMPERED') return e.message;
    throw e;
  } finally {
    j.close();
  }
}
