/**
 * Offline verification of an audit bundle (format.ts): no vault, no home, no
 * journal — only the bytes and, optionally, the key the verifier trusts.
 *
 * Checked, in order, each failure AUDIT_BUNDLE_INVALID with one line saying
 * what: the bytes are JSON in exactly the form the exporter writes; the
 * shape; every checkpoint's signature, under keys reachable from the root
 * (`key`, or the first checkpoint's) through signed key changes; every
 * checkpoint is of the bundle's journal; every segment's rows are consecutive
 * and their recomputed chain ends at its checkpoint's signed head; segments
 * are in order and disjoint; every listed call has its first entry in a
 * segment; the catalogs list exactly the prefixes the calls name, each
 * digest is one a checkpoint signed and each text hashes to its digest; the
 * sessions segments (format /2) hold the same chain proof against the signed
 * sessions heads, every session listed is a bundled call's, has entries in
 * the bundle and its start entry (unless the sessions journal was pruned);
 * calls whose session is not in the bundle are counted in the proof.
 */
import { createHash } from 'node:crypto';
import { PosternError } from '../../rules/errors.js';
import { CONTENT_COLUMNS } from '../activity-schema.js';
import { SESSIONS_CONTENT_COLUMNS } from '../sessions.js';
import { entryHash, type Cell } from '../chain.js';
import { walkTrust } from '../checkpoint/record.js';
import { keyFingerprint } from '../checkpoint/signature.js';
import { BundleSchema, bundleBytes, catalogPrefixOf, type Bundle, type BundleRow, type BundleSegment } from './format.js';
import type { CheckpointRecord } from '../checkpoint/record.js';

interface BundleProof {
  readonly journal_id: string;
  readonly calls: number;
  readonly calls_with_outcome: number;
  /** Entries in the bundle, and how many of them are the calls'. */
  readonly entries: number;
  readonly call_entries: number;
  readonly first_seq: number;
  readonly last_seq: number;
  readonly checkpoints: readonly { readonly counter: number; readonly reason: string; readonly at: string; readonly activity_seq: number }[];
  /** Fingerprints of the keys that signed, the root first. */
  readonly keys: readonly string[];
  /** The root key was named by the verifier. */
  readonly pinned: boolean;
  readonly catalogs: number;
  readonly catalog_texts: number;
  /** The sessions the calls ran in that the bundle proves, and their entries; null for a /1 bundle. */
  readonly sessions: { readonly sessions: number; readonly entries: number; readonly session_entries: number; readonly calls_without_session: number } | null;
}

function refuse(what: string): never {
  throw new PosternError('AUDIT_BUNDLE_INVALID', `the bundle does not verify: ${what}`);
}

const HEADS = new Set(['intent', 'rejected', 'replay']);

function content(row: Readonly<Record<string, Cell>>, columns: readonly string[]): Record<string, Cell> {
  const out: Record<string, Cell> = {};
  for (const c of columns) out[c] = row[c] ?? null;
  return out;
}

/**
 * One chain's segments: consecutive rows, in order and disjoint, after the
 * pruned part, each run hashing to the head its checkpoint signed. Returns
 * the indexes of the checkpoints used, the entry count and the last seq.
 */
function checkSegments<R extends { readonly seq: number } & Readonly<Record<string, Cell>>>(
  b: Bundle,
  chain: 'activity' | 'sessions',
  segments: readonly BundleSegment<R>[],
  columns: readonly string[],
  each: (row: R) => void,
): { used: Set<number>; entries: number; lastSeq: number } {
  const label = chain === 'activity' ? 'segment' : 'sessions segment';
  const used = new Set<number>();
  let entries = 0;
  let lastSeq = 0;
  for (const [i, seg] of segments.entries()) {
    const cp = b.checkpoints[seg.checkpoint];
    if (cp === undefined) refuse(`${label} ${i} names checkpoint ${seg.checkpoint}, which is not in the bundle`);
    const head = (r: CheckpointRecord) => r[chain];
    const first = seg.rows[0]!.seq;
    if (first <= lastSeq) refuse(`${label} ${i} overlaps or precedes the one before it`);
    if (first <= cp.record.bases[chain].seq) refuse(`${label} ${i} starts inside the pruned part of the journal`);
    let prev = seg.prev_hash;
    for (const [k, row] of seg.rows.entries()) {
      if (row.seq !== first + k) refuse(`${label} ${i}: entry ${first + k} is missing`);
      prev = entryHash(prev, content(row, columns));
      entries++;
      each(row);
    }
    lastSeq = seg.rows.at(-1)!.seq;
    if (lastSeq !== head(cp.record).seq || prev !== head(cp.record).hash) {
      refuse(`${label} ${i} (entries ${first}–${lastSeq}) does not hash to the ${chain} head checkpoint #${cp.record.counter} signed: an entry was changed`);
    }
    used.add(seg.checkpoint);
  }
  return { used, entries, lastSeq };
}

function parse(bytes: Buffer): Bundle {
  let raw: unknown;
  try {
    raw = JSON.parse(bytes.toString('utf8'));
  } catch {
    refuse('it is not JSON (truncated or altered)');
  }
  if (!bundleBytes(raw).equals(bytes)) refuse('its bytes are not the ones the exporter writes (altered)');
  const r = BundleSchema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0];
    refuse(`it is not a postern.audit-bundle (${issue === undefined ? 'shape' : `${issue.path.join('.') || 'top level'}: ${issue.message}`})`);
  }
  return r.data;
}

export function verifyBundle(bytes: Buffer, opts: { readonly key?: string } = {}): BundleProof {
  const b = parse(bytes);
  const walk = walkTrust(b.checkpoints, opts.key);
  if (walk.rootUnseen) refuse(`no checkpoint is signed by the key ${opts.key ?? ''}`);
  if (walk.badSignature > 0) refuse(`${walk.badSignature} checkpoint signature(s) do not verify`);
  if (walk.untrusted > 0) refuse(`${walk.untrusted} checkpoint(s) are signed by a key no trusted key endorsed`);
  for (const c of b.checkpoints) if (c.record.journal_id !== b.journal_id) refuse(`checkpoint #${c.record.counter} is of another journal`);

  const heads = new Map<string, BundleRow>();
  const outcomes = new Set<string>();
  const { used, entries, lastSeq } = checkSegments(b, 'activity', b.segments, CONTENT_COLUMNS, (row) => {
    if (HEADS.has(row.kind)) {
      if (heads.has(row.call_id)) refuse(`call ${row.call_id} has two first entries`);
      heads.set(row.call_id, row);
    } else outcomes.add(row.call_id);
  });

  const listed = new Set(b.calls);
  if (listed.size !== b.calls.length) refuse('a call is listed twice');
  const prefixes = new Set<string>();
  let callEntries = 0;
  for (const id of b.calls) {
    const head = heads.get(id);
    if (head === undefined) refuse(`call ${id} is listed but its entry is not in the bundle`);
    let call: { handler_revision?: unknown } | undefined;
    try {
      call = (JSON.parse(head.body) as { call?: { handler_revision?: unknown } }).call;
    } catch {
      refuse(`the entry of call ${id} is not JSON`);
    }
    const p = catalogPrefixOf(call?.handler_revision);
    if (p !== null) prefixes.add(p);
    callEntries += outcomes.has(id) ? 2 : 1;
  }

  const want = [...prefixes].sort();
  const got = b.catalogs.map((c) => c.prefix);
  if (want.length !== got.length || want.some((p, i) => got[i] !== p)) refuse('the catalog list is not the catalogs the calls ran under');
  const signedDigests = new Set(b.checkpoints.map((c) => c.record.catalog_digest));
  for (const c of b.catalogs) {
    if (c.digest !== null && (!c.digest.startsWith(c.prefix) || !signedDigests.has(c.digest))) refuse(`catalog ${c.prefix}: its digest is not one a checkpoint signed`);
    if (c.text !== null && (c.digest === null || createHash('sha256').update(c.text, 'utf8').digest('hex') !== c.digest)) refuse(`catalog ${c.prefix}: its text does not hash to its digest`);
  }

  const sessions = b.sessions === undefined ? null : checkSessions(b, b.sessions, b.calls.map((id) => heads.get(id)!.session_id));

  const segCps = [...used].sort((x, y) => x - y).map((i) => b.checkpoints[i]!.record);
  return {
    journal_id: b.journal_id,
    calls: b.calls.length,
    calls_with_outcome: b.calls.filter((id) => outcomes.has(id)).length,
    entries,
    call_entries: callEntries,
    first_seq: b.segments[0]?.rows[0]?.seq ?? 0,
    last_seq: lastSeq,
    checkpoints: segCps.map((r) => ({ counter: r.counter, reason: r.reason, at: r.at, activity_seq: r.activity.seq })),
    keys: walk.keys.map(keyFingerprint),
    pinned: opts.key !== undefined,
    catalogs: b.catalogs.length,
    catalog_texts: b.catalogs.filter((c) => c.text !== null).length,
    sessions,
  };
}

function checkSessions(b: Bundle, s: NonNullable<Bundle['sessions']>, callSessions: readonly (string | null)[]): NonNullable<BundleProof['sessions']> {
  const ids = new Set(s.ids);
  if (ids.size !== s.ids.length) refuse('a session is listed twice');
  const started = new Set<string>();
  const seen = new Set<string>();
  let own = 0;
  const { entries } = checkSegments(b, 'sessions', s.segments, SESSIONS_CONTENT_COLUMNS, (row) => {
    if (row.session_id === null || !ids.has(row.session_id)) return;
    own++;
    seen.add(row.session_id);
    if (row.type === 'session_started') started.add(row.session_id);
  });
  const wanted = new Set(callSessions.filter((id): id is string => id !== null));
  for (const id of ids) {
    if (!wanted.has(id)) refuse(`session ${id} is listed but no bundled call ran in it`);
    if (!seen.has(id)) refuse(`session ${id} is listed but none of its entries is in the bundle`);
    if (!started.has(id) && !b.checkpoints.some((c) => c.record.bases.sessions.seq > 0)) refuse(`session ${id} is listed without its start entry (and the sessions journal was never pruned)`);
  }
  // A bundle is a selection: a call whose session the exporter did not include is counted, not refused.
  const without = callSessions.filter((id) => id !== null && !ids.has(id)).length;
  return { sessions: ids.size, entries, session_entries: own, calls_without_session: without };
}
