/**
 * `postern.audit-bundle/2` (docs/audit.md): a self-contained file that proves
 * a set of calls was in an anchored journal, checkable offline by anyone with
 * the checkpoint key's fingerprint. The one home of its shape.
 *
 *   format       "postern.audit-bundle/2" (a /1 bundle, which has no
 *                `sessions`, is still verified)
 *   journal_id   the journal the rows come from
 *   calls        the selected call ids (newest first, as the filter listed them)
 *   segments     runs of consecutive activity entries, each ending exactly at
 *                the head a checkpoint signed: { checkpoint (index into
 *                checkpoints), prev_hash (of the entry before the first), rows }
 *                — every entry of the run is there, selected or not, because
 *                the chain hashes each row's full content after its
 *                predecessor's hash (chain.ts): a row cannot be replaced by a
 *                digest without breaking the link
 *   checkpoints  signed checkpoint lines: the key changes that lead to the
 *                segment checkpoints' keys, then the segment checkpoints
 *   catalogs     for each catalog a selected call ran under (the 16-hex prefix
 *                in its handler revision): the full digest when a signed
 *                checkpoint names it, and the accepted catalog text when the
 *                home still holds it (both may be null)
 *   sessions     the sessions journal's side: `ids`, the sessions the
 *                selected calls ran in, and `segments` of sessions entries
 *                in the same form as above, each ending at the sessions head
 *                a bundled checkpoint signed, covering every entry of those
 *                sessions (start, events, close) journaled before it
 *
 * The file is `JSON.stringify(bundle)` and a newline, exactly: the verifier
 * re-serializes what it parsed and refuses any other bytes, so every byte is
 * either hashed into the chain, signed, derived from what is, or refused.
 */
import { z } from 'zod';
import { StoredCheckpointSchema } from '../checkpoint/record.js';

export const BUNDLE_FORMAT = 'postern.audit-bundle/2';
const BUNDLE_FORMATS = ['postern.audit-bundle/1', BUNDLE_FORMAT] as const;

const Hex64 = z.string().regex(/^[0-9a-f]{64}$/);
const Seq = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);
const Text = z.string().max(64 * 1024 * 1024);
const Id = z.string().max(1024);

/** One activity entry: its content columns exactly as chained (activity-schema CONTENT_COLUMNS). */
export const BundleRowSchema = z
  .object({
    seq: Seq,
    at: z.string().max(64),
    kind: z.enum(['intent', 'rejected', 'replay', 'outcome']),
    call_id: Id,
    session_id: Id.nullable(),
    tool: Id,
    idempotency_key: Id.nullable(),
    error_code: Id.nullable(),
    claim: z.enum(['claimed', 'completed', 'released', 'outcome_unknown']).nullable(),
    body: Text,
  })
  .strict();

/** One sessions entry: its content columns exactly as chained (sessions.ts SESSIONS_CONTENT_COLUMNS). */
export const BundleSessionRowSchema = z
  .object({ seq: Seq, at: z.string().max(64), session_id: Id.nullable(), type: z.string().max(128), body: Text })
  .strict();

function segmentsOf<T extends z.ZodTypeAny>(row: T) {
  return z.array(z.object({ checkpoint: z.number().int().min(0), prev_hash: Hex64, rows: z.array(row).min(1) }).strict()).max(1_000_000);
}

export const BundleSchema = z
  .object({
    format: z.enum(BUNDLE_FORMATS),
    journal_id: z.string().min(1).max(128),
    calls: z.array(Id).max(1_000_000),
    segments: segmentsOf(BundleRowSchema),
    checkpoints: z.array(StoredCheckpointSchema).min(1).max(1_000_000),
    catalogs: z.array(z.object({ prefix: z.string().regex(/^[0-9a-f]{16}$/), digest: Hex64.nullable(), text: Text.nullable() }).strict()).max(10_000),
    sessions: z.object({ ids: z.array(Id).max(1_000_000), segments: segmentsOf(BundleSessionRowSchema) }).strict().optional(),
  })
  .strict()
  .refine((b) => (b.format === BUNDLE_FORMAT) === (b.sessions !== undefined), { message: 'a /2 bundle has sessions, a /1 bundle has none', path: ['sessions'] });

export type Bundle = z.infer<typeof BundleSchema>;
export type BundleRow = z.infer<typeof BundleRowSchema>;
export type BundleSessionRow = z.infer<typeof BundleSessionRowSchema>;
export type BundleSegment<R> = { readonly checkpoint: number; readonly prev_hash: string; readonly rows: R[] };

/** The catalog digest prefix a handler revision names (`postern/<version>+catalog.<16 hex>`), if any. */
export function catalogPrefixOf(handlerRevision: unknown): string | null {
  if (typeof handlerRevision !== 'string') return null;
  const m = /\+catalog\.([0-9a-f]{16})$/.exec(handlerRevision);
  return m?.[1] ?? null;
}

/** The bytes a bundle is written as (and must be read back as). */
export function bundleBytes(b: unknown): Buffer {
  return Buffer.from(`${JSON.stringify(b)}\n`, 'utf8');
}
