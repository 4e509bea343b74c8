/**
 * Staged adoption, the pure half: the digest of a catalog file, the record an
 * operator's acceptance produces, its MAC under a key the vault derives
 * (purpose "catalog-mac"), and the decisions built on them:
 *
 * - `judgeAcceptance`: where the home stands, given the stored record, the
 *   vault's high-water mark (the last acceptance the vault itself recorded)
 *   and whether any acceptance history exists. Only a record that verifies
 *   AND matches the vault's mark is `accepted`/`pending`; a missing, forged,
 *   replayed or rolled-back record is an `alarm`, never a first run.
 * - `judgeSuccessor`: whether a running daemon may move from the acceptance
 *   it uses to a newer record (higher sequence, chained to the current one,
 *   directly or through authenticated history entries).
 *
 * Storage, the passphrase and the vault live elsewhere.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { canonicalJson, sha256Hex } from '../../rules/canonical.js';

/** Lowercase hex SHA-256 of the catalog file's exact bytes (a string is taken as UTF-8). */
export function catalogDigest(text: string | Uint8Array): string {
  return sha256Hex(text);
}

/** Records written before acceptance sequences existed (Postern 0.1). Read, never written. */
export interface LegacyAcceptanceRecord {
  readonly format: 'postern.catalog-acceptance/1';
  readonly digest: string;
  readonly accepted_at: string;
  readonly previous_digest: string | null;
}

export interface AcceptanceRecord {
  readonly format: 'postern.catalog-acceptance/2';
  /** 1 for the first acceptance of a home, +1 for each later one; the vault keeps the highest. */
  readonly sequence: number;
  /** catalogDigest of the accepted file. */
  readonly digest: string;
  /** ISO-8601 time of acceptance. */
  readonly accepted_at: string;
  /** Digest of the catalog accepted before this one, or null for the first. */
  readonly previous_digest: string | null;
  /** Accepted although the release gate failed (`--force`). */
  readonly forced: boolean;
  /** How many classified changes the operator was shown. */
  readonly changes: number;
}

export type AnyAcceptanceRecord = AcceptanceRecord | LegacyAcceptanceRecord;

/** What the vault remembers of the last acceptance (written under the passphrase). */
export interface AcceptanceMark {
  readonly sequence: number;
  readonly digest: string;
}

const MAC_DOMAIN = { 'postern.catalog-acceptance/1': 'postern catalog acceptance v1\n', 'postern.catalog-acceptance/2': 'postern catalog acceptance v2\n' } as const;

export function acceptanceRecord(o: { sequence: number; digest: string; acceptedAt: Date; previousDigest: string | null; forced: boolean; changes: number }): AcceptanceRecord {
  return {
    format: 'postern.catalog-acceptance/2',
    sequence: o.sequence,
    digest: o.digest,
    accepted_at: o.acceptedAt.toISOString(),
    previous_digest: o.previousDigest,
    forced: o.forced,
    changes: o.changes,
  };
}

/** Hex HMAC-SHA256 over a domain tag (one per record format) and the record's canonical JSON. */
export function acceptanceMac(key: Uint8Array, record: AnyAcceptanceRecord): string {
  return createHmac('sha256', key).update(MAC_DOMAIN[record.format]).update(canonicalJson(record)).digest('hex');
}

export type AcceptanceCheck = { readonly kind: 'authentic' } | { readonly kind: 'forged' };

export function verifyAcceptance(key: Uint8Array, record: AnyAcceptanceRecord, mac: string): AcceptanceCheck {
  const expected = Buffer.from(acceptanceMac(key, record), 'hex');
  const given = /^[0-9a-f]{64}$/.test(mac) ? Buffer.from(mac, 'hex') : Buffer.alloc(0);
  return given.length === expected.length && timingSafeEqual(given, expected) ? { kind: 'authentic' } : { kind: 'forged' };
}

/** The sequence a record stands for: a legacy record is acceptance 0. */
export const sequenceOf = (r: AnyAcceptanceRecord): number => (r.format === 'postern.catalog-acceptance/2' ? r.sequence : 0);

export type StoredRecord =
  | { readonly kind: 'missing' }
  | { readonly kind: 'malformed'; readonly why: string }
  | { readonly kind: 'stored'; readonly record: AnyAcceptanceRecord; readonly mac: string };

export const Alarms = {
  record_missing: 'the acceptance record is missing although catalogs were accepted before',
  record_forged: 'the acceptance record does not verify with this vault (forged, damaged or from another vault)',
  rolled_back: 'the acceptance record is older than the last acceptance the vault recorded: an earlier accepted catalog was put back',
  vault_behind: 'the vault is older than the acceptance record: was vault.pvlt restored from a copy?',
} as const;
export type Alarm = keyof typeof Alarms;

export type CatalogState =
  | { readonly state: 'no_catalog' }
  /** A file exists but nothing was ever accepted in this home. */
  | { readonly state: 'unaccepted'; readonly fileDigest: string }
  | { readonly state: 'accepted'; readonly digest: string; readonly sequence: number }
  | { readonly state: 'pending'; readonly fileDigest: string; readonly acceptedDigest: string; readonly sequence: number }
  /** Nothing in the home can be trusted as the last acceptance; `message` says why. */
  | { readonly state: 'alarm'; readonly alarm: Alarm; readonly message: string; readonly fileDigest: string | undefined };

export interface AcceptanceFacts {
  readonly fileDigest: string | undefined;
  readonly stored: StoredRecord;
  readonly key: Uint8Array;
  /** The vault's mark, or null when the vault never recorded an acceptance. */
  readonly mark: AcceptanceMark | null;
  /** Whether catalog.history.jsonl holds any line. */
  readonly historyExists: boolean;
}

function alarm(alarm: Alarm, fileDigest: string | undefined, detail = ''): CatalogState {
  return { state: 'alarm', alarm, message: `${Alarms[alarm]}${detail}`, fileDigest };
}

/** Decides what the home's acceptance state is. Only an authentic record that agrees with the vault counts. */
export function judgeAcceptance(f: AcceptanceFacts): CatalogState {
  const { fileDigest, stored, mark } = f;
  if (stored.kind === 'missing') {
    if (mark !== null || f.historyExists) return alarm('record_missing', fileDigest, mark === null ? '' : ` (the vault records acceptance #${mark.sequence})`);
    return fileDigest === undefined ? { state: 'no_catalog' } : { state: 'unaccepted', fileDigest };
  }
  if (stored.kind === 'malformed') return alarm('record_forged', fileDigest, ` (${stored.why})`);
  const { record } = stored;
  if (verifyAcceptance(f.key, record, stored.mac).kind !== 'authentic') return alarm('record_forged', fileDigest);
  const seq = sequenceOf(record);
  if (mark === null) {
    // Only a legacy record may stand without a mark: the vault predates acceptance sequences.
    if (seq !== 0) return alarm('vault_behind', fileDigest, ` (the record is acceptance #${seq}, the vault records none)`);
  } else if (seq < mark.sequence) {
    return alarm('rolled_back', fileDigest, ` (the record is acceptance #${seq}, the vault records #${mark.sequence})`);
  } else if (seq > mark.sequence) {
    return alarm('vault_behind', fileDigest, ` (the record is acceptance #${seq}, the vault records #${mark.sequence})`);
  } else if (record.digest !== mark.digest) {
    return alarm('rolled_back', fileDigest, ` (acceptance #${seq} names another catalog than the vault records)`);
  }
  if (fileDigest === undefined || fileDigest === record.digest) return { state: 'accepted', digest: record.digest, sequence: seq };
  return { state: 'pending', fileDigest, acceptedDigest: record.digest, sequence: seq };
}

/** The acceptance a running daemon uses: sequence 0 and digest null before any. */
export interface CurrentAcceptance {
  readonly sequence: number;
  readonly digest: string | null;
}

export type Succession =
  | { readonly kind: 'same' }
  | { readonly kind: 'adopt'; readonly record: AcceptanceRecord }
  | { readonly kind: 'refuse'; readonly reason: string };

/** One authenticated acceptance, as the record file or a history line holds it. */
export interface SignedRecord {
  readonly record: AnyAcceptanceRecord;
  readonly mac: string;
}

/**
 * May a daemon that uses `current` move to `next`? Only to an authentic v2
 * record with a higher sequence whose chain reaches back to `current`: each
 * step one sequence up and naming the previous step's digest. Steps between
 * come from `history` (authenticated entries; others are ignored).
 */
export function judgeSuccessor(key: Uint8Array, current: CurrentAcceptance, next: StoredRecord, history: readonly SignedRecord[]): Succession {
  // Nothing was ever accepted and there is still no record: nothing changed (a first start, not a removal).
  if (next.kind === 'missing') return current.digest === null ? { kind: 'same' } : { kind: 'refuse', reason: 'the acceptance record was removed; keeping the catalog in use' };
  if (next.kind === 'malformed') return { kind: 'refuse', reason: `the acceptance record is malformed (${next.why}); keeping the catalog in use` };
  const { record } = next;
  if (verifyAcceptance(key, record, next.mac).kind !== 'authentic') return { kind: 'refuse', reason: 'the acceptance record does not verify with this vault; keeping the catalog in use' };
  const seq = sequenceOf(record);
  if (seq === current.sequence && record.digest === current.digest) return { kind: 'same' };
  if (record.format !== 'postern.catalog-acceptance/2' || seq <= current.sequence) {
    return { kind: 'refuse', reason: `the acceptance record is acceptance #${seq}, not newer than #${current.sequence} in use: an earlier accepted catalog was put back; keeping the catalog in use` };
  }
  const bySeq = new Map<number, AcceptanceRecord>();
  for (const h of history) {
    const r = h.record;
    if (r.format === 'postern.catalog-acceptance/2' && r.sequence > current.sequence && r.sequence < seq && verifyAcceptance(key, r, h.mac).kind === 'authentic') bySeq.set(r.sequence, r);
  }
  let prevDigest = record.previous_digest;
  for (let s = seq - 1; s > current.sequence; s--) {
    const step = bySeq.get(s);
    if (step === undefined || step.digest !== prevDigest) return { kind: 'refuse', reason: `acceptance #${seq} does not chain back to #${current.sequence} in use (history entry #${s} missing or altered); keeping the catalog in use` };
    prevDigest = step.previous_digest;
  }
  if (prevDigest !== current.digest) return { kind: 'refuse', reason: `acceptance #${seq} does not follow the catalog in use; keeping the catalog in use` };
  return { kind: 'adopt', record };
}

export type HistoryCheck =
  | { readonly ok: true; readonly entries: number; readonly legacy: number }
  | { readonly ok: false; readonly problem: string };

/**
 * The history file as a chain: after any legacy (unauthenticated, 0.1) lines,
 * every entry verifies, sequences run 1, 2, 3… and each names its
 * predecessor's digest; the last one is `head` (the record in force).
 */
export function verifyHistoryChain(key: Uint8Array, lines: readonly (SignedRecord | 'legacy' | 'malformed')[], head: AcceptanceMark | null): HistoryCheck {
  let legacy = 0;
  let prev: AcceptanceRecord | undefined;
  let entries = 0;
  for (const [i, l] of lines.entries()) {
    if (l === 'malformed') return { ok: false, problem: `line ${i + 1} is malformed` };
    if (l === 'legacy') {
      if (prev !== undefined) return { ok: false, problem: `line ${i + 1} is an unauthenticated entry after authenticated ones` };
      legacy++;
      continue;
    }
    const r = l.record;
    if (r.format !== 'postern.catalog-acceptance/2' || verifyAcceptance(key, r, l.mac).kind !== 'authentic') return { ok: false, problem: `line ${i + 1} does not verify with this vault` };
    const want = (prev?.sequence ?? 0) + 1;
    if (r.sequence !== want) return { ok: false, problem: `line ${i + 1} is acceptance #${r.sequence}, expected #${want}` };
    if (prev !== undefined && r.previous_digest !== prev.digest) return { ok: false, problem: `line ${i + 1} does not name the catalog accepted before it` };
    prev = r;
    entries++;
  }
  if (head !== null && (prev === undefined || prev.sequence !== head.sequence || prev.digest !== head.digest)) {
    return { ok: false, problem: `the history does not end at acceptance #${head.sequence}` };
  }
  return { ok: true, entries, legacy };
}
