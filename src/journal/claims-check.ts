/**
 * Cross-checks the idempotency claims (state) against the chained history.
 *
 * The chain proves the entries were not edited; this proves the claims table
 * is exactly what those entries imply. Deleting an `outcome_unknown` claim,
 * for example, would let a retry run again — verify must flag it.
 *
 * A claim row is consistent when its intent entry exists, claimed that very
 * (tool, key, call, digest), and the call's outcome (if any) left it in the
 * state the row shows. Every claimed intent whose outcome did not release it
 * must still have its row. Returns the first inconsistent intent seq, if any.
 *
 * After a prune (prune.ts) the claims of removed intents have no entry to be
 * checked against: they are covered instead by `claims_digest`, the digest of
 * exactly those rows taken at the prune and kept in the chain's base (signed
 * in every later checkpoint). They are final (completed or outcome_unknown:
 * a prune never removes an intent whose claim is still in progress), so the
 * digest must stay what it was.
 */
import type Database from 'better-sqlite3';
import type { ChainBase } from './types.js';
import { canonicalJson, sha256Hex } from './json.js';

const BAD_CLAIM_ROWS = `
  SELECT c.intent_seq AS seq FROM idempotency c
  LEFT JOIN entries i ON i.seq = c.intent_seq
  LEFT JOIN entries o ON o.call_id = c.call_id AND o.kind = 'outcome'
  WHERE c.intent_seq > @base AND (i.seq IS NULL OR i.kind <> 'intent' OR i.claim IS NOT 'claimed'
     OR i.call_id <> c.call_id OR i.tool <> c.tool OR i.idempotency_key IS NOT c.key
     OR i.session_id IS NOT c.session_id
     OR json_extract(i.body, '$.call.args_digest') IS NOT c.args_digest
     OR (o.seq IS NULL AND (c.state <> 'in_progress' OR c.outcome_seq IS NOT NULL))
     OR (o.seq IS NOT NULL AND (o.claim IS NOT c.state OR c.outcome_seq IS NOT o.seq)))
  ORDER BY seq LIMIT 1`;

const PRUNED_CLAIMS = `
  SELECT tool, key, call_id, session_id, args_digest, state, intent_seq, outcome_seq
  FROM idempotency WHERE intent_seq <= ? ORDER BY intent_seq, tool, key`;

/** The digest of the claims whose intent seq is at or before `baseSeq` (null when there are none). */
export function prunedClaimsDigest(db: Database.Database, baseSeq: number): string | null {
  const rows = db.prepare<[number], Record<string, string | number | null>>(PRUNED_CLAIMS).all(baseSeq);
  return rows.length === 0 ? null : sha256Hex(canonicalJson(rows));
}

const MISSING_CLAIMS = `
  SELECT i.seq AS seq FROM entries i
  LEFT JOIN entries o ON o.call_id = i.call_id AND o.kind = 'outcome'
  WHERE i.kind = 'intent' AND i.claim = 'claimed' AND o.claim IS NOT 'released'
    AND NOT EXISTS (SELECT 1 FROM idempotency c WHERE c.call_id = i.call_id)
  ORDER BY i.seq LIMIT 1`;

/** The first intent seq whose claim disagrees with the chain (or, for a pruned chain, the base seq when the kept claims changed), or undefined. */
export function firstClaimMismatch(db: Database.Database, base: ChainBase): number | undefined {
  if (base.seq > 0 && prunedClaimsDigest(db, base.seq) !== base.claims_digest) return base.seq;
  const a = db.prepare<[{ base: number }], number>(BAD_CLAIM_ROWS).pluck().get({ base: base.seq });
  const b = db.prepare<[], number>(MISSING_CLAIMS).pluck().get();
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}

const MISSING_CLAIMS_AFTER = `
  SELECT i.seq AS seq FROM entries i
  LEFT JOIN entries o ON o.call_id = i.call_id AND o.kind = 'outcome'
  WHERE i.seq > ? AND i.kind = 'intent' AND i.claim = 'claimed' AND o.claim IS NOT 'released'
    AND NOT EXISTS (SELECT 1 FROM idempotency c WHERE c.call_id = i.call_id)
  ORDER BY i.seq LIMIT 1`;

/**
 * The same check for the claims of intents after `from` only (the rows at or
 * before it are proved by the verified point's digest, anchor/verified.ts):
 * a pass over the claim rows and over the entries after `from`.
 */
export function firstClaimMismatchAfter(db: Database.Database, from: number): number | undefined {
  const a = db.prepare<[{ base: number }], number>(BAD_CLAIM_ROWS).pluck().get({ base: from });
  const b = db.prepare<[number], number>(MISSING_CLAIMS_AFTER).pluck().get(from);
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}
