/**
 * The decrypted payload: UTF-8 JSON `{ format: 4, generation, created_at,
 * accepted_catalog, journal, retention_days, remembered: [...], credentials:
 * [...] }` with secret parts as standard base64 (FORMAT.md §4). Formats 1 (no
 * `accepted_catalog`), 2 (no `retention_days`, no `remembered`) and 3 (no
 * `journal`) are still read, as a vault that never recorded a catalog
 * acceptance, remembers no earlier value and never recorded a journal; saves
 * write format 4.
 *
 * Invariants: `decodePayload` validates everything (zod for shape, the
 * credential rules for meaning, unique names) before returning, maps every
 * problem to VAULT_CORRUPT, returns no partial result and zeroes the
 * plaintext bytes it was given as well as any secret it decoded before
 * failing. JS strings made along the way (the JSON text, base64 parts) cannot
 * be wiped; they are dropped at once and left to the garbage collector.
 */
import { z } from 'zod';
import { corruptError } from './format.js';
import { fieldsProblem, kindProblem, MAX_SECRET_PART_BYTES, nameProblem, rememberedPartsProblem, secretPartsProblem } from './credentials.js';
import { sodium, zero } from './libsodium.js';
import { DEFAULT_RETENTION_DAYS, MAX_RETENTION_DAYS, type CredentialKind, type JournalGapMark, type JournalMark, type RememberedMeta } from './types.js';

/** The format every save writes; READABLE_PAYLOAD_FORMATS lists what is read. */
const PAYLOAD_FORMAT = 4;
const READABLE_PAYLOAD_FORMATS = [1, 2, 3, 4] as const;

/** At most this many remembered values; the oldest go first beyond it. */
export const MAX_REMEMBERED = 4096;

/** The last catalog acceptance, recorded under the passphrase: its sequence and the accepted file's digest. */
export interface CatalogMark {
  readonly sequence: number;
  readonly digest: string;
}

/** In-memory credential; `meta` fields are replaced (never shared) on change. */
export interface StoredCredential {
  meta: {
    readonly name: string;
    readonly kind: CredentialKind;
    readonly created_at: string;
    rotated_at: string | null;
    last_used_at: string | null;
    fields: Readonly<Record<string, string>>;
  };
  secret: Record<string, Uint8Array>;
}

/** A value the redactor must still recognize: a retired credential value or a minted token (FORMAT.md §4). */
export interface StoredRemembered {
  readonly meta: RememberedMeta;
  readonly secret: Record<string, Uint8Array>;
}

export interface VaultContents {
  generation: number;
  readonly createdAt: string;
  /** The high-water mark of catalog acceptances; null until the first one (and in format 1). */
  acceptedCatalog: CatalogMark | null;
  /** The journal this home keeps and its last anchored heads; null until one is recorded (and before format 4). */
  journal: JournalMark | null;
  /** What restores decided about keys lost with a journal (FORMAT.md §4, `journal_gap`); undefined: never recorded (a vault saved before it was kept). */
  journalGap?: JournalGapMark | null;
  readonly credentials: Map<string, StoredCredential>;
  /** Days a retired value (source `retired`, no `until`) stays remembered. */
  retentionDays: number;
  /** Oldest first. */
  remembered: StoredRemembered[];
}

const Timestamp = z.iso.datetime();

const CredentialRecord = z.strictObject({
  name: z.string(),
  kind: z.string(),
  created_at: Timestamp,
  rotated_at: Timestamp.nullable(),
  last_used_at: Timestamp.nullable(),
  fields: z.record(z.string(), z.string()),
  secret: z.record(z.string(), z.string().max(Math.ceil(MAX_SECRET_PART_BYTES / 3) * 4)),
});

const Mark = z.strictObject({
  sequence: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  digest: z.string().regex(/^[0-9a-f]{64}$/),
});

const Head = z.strictObject({
  seq: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  hash: z.string().regex(/^[0-9a-f]{64}$/),
});

const JournalRecord = z.strictObject({
  id: z.string().min(1).max(128),
  activity: Head,
  sessions: Head,
  checkpoints: z
    .strictObject({ count: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER), counter: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER), digest: z.string().regex(/^[0-9a-f]{64}$/) })
    .nullable()
    .optional(),
});

/** The most keys each list of `journal_gap` holds (journal/gap.ts MAX_RECORD_KEYS). */
const GapKeyRecord = z.strictObject({ tool: z.string().min(1).max(256), key: z.string().min(1).max(1024) });
const JournalGapRecord = z.strictObject({
  held: z.array(GapKeyRecord).max(10_000),
  released: z.array(GapKeyRecord).max(10_000),
  unread: z.boolean(),
});

const RememberedRecord = z.strictObject({
  name: z.string(),
  kind: z.string(),
  source: z.enum(['retired', 'minted']),
  since: Timestamp,
  until: Timestamp.nullable(),
  fields: z.record(z.string(), z.string()),
  secret: z.record(z.string(), z.string().max(Math.ceil(MAX_SECRET_PART_BYTES / 3) * 4)),
});

const PayloadV1 = z.strictObject({
  format: z.literal(1),
  generation: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  created_at: Timestamp,
  credentials: z.array(CredentialRecord),
});

const PayloadV2 = z.strictObject({
  format: z.literal(2),
  generation: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  created_at: Timestamp,
  accepted_catalog: Mark.nullable(),
  credentials: z.array(CredentialRecord),
});

const PayloadV3 = z.strictObject({
  format: z.literal(3),
  generation: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  created_at: Timestamp,
  accepted_catalog: Mark.nullable(),
  retention_days: z.number().int().min(0).max(MAX_RETENTION_DAYS),
  remembered: z.array(RememberedRecord).max(MAX_REMEMBERED),
  credentials: z.array(CredentialRecord),
});

const PayloadV4 = z.strictObject({
  format: z.literal(4),
  generation: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  created_at: Timestamp,
  accepted_catalog: Mark.nullable(),
  journal: JournalRecord.nullable(),
  journal_gap: JournalGapRecord.nullable().optional(),
  retention_days: z.number().int().min(0).max(MAX_RETENTION_DAYS),
  remembered: z.array(RememberedRecord).max(MAX_REMEMBERED),
  credentials: z.array(CredentialRecord),
});

/** Zero every secret part held by `credentials` (or remembered values). */
export function zeroCredentials(credentials: Iterable<{ readonly secret: Record<string, Uint8Array> }>): void {
  for (const c of credentials) zero(...Object.values(c.secret));
}

function encodeSecret(secret: Readonly<Record<string, Uint8Array>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of Object.keys(secret).sort()) {
    const bytes = secret[part];
    if (bytes !== undefined) out[part] = sodium.to_base64(bytes, sodium.base64_variants.ORIGINAL);
  }
  return out;
}

/** Contents to write: a new vault has no remembered values, the default retention and no journal. */
export type ContentsToSeal = Omit<VaultContents, 'retentionDays' | 'remembered' | 'journal'> & Partial<Pick<VaultContents, 'retentionDays' | 'remembered' | 'journal'>>;

/** Serialize; credentials and parts are sorted so equal contents give equal JSON. The caller zeroes the result. */
export function encodePayload(contents: ContentsToSeal): Uint8Array {
  const names = [...contents.credentials.keys()].sort();
  const credentials = names.map((name) => {
    const c = contents.credentials.get(name);
    if (c === undefined) throw new Error('unreachable: name vanished during encoding');
    const { kind, created_at, rotated_at, last_used_at, fields } = c.meta;
    return { name, kind, created_at, rotated_at, last_used_at, fields: { ...fields }, secret: encodeSecret(c.secret) };
  });
  const remembered = (contents.remembered ?? []).map((r) => {
    const { name, kind, source, since, until, fields } = r.meta;
    return { name, kind, source, since, until, fields: { ...fields }, secret: encodeSecret(r.secret) };
  });
  const mark = contents.acceptedCatalog === null ? null : { sequence: contents.acceptedCatalog.sequence, digest: contents.acceptedCatalog.digest };
  const j = contents.journal ?? null;
  const cp = j?.checkpoints ?? null;
  const checkpoints = cp === null ? {} : { checkpoints: { count: cp.count, counter: cp.counter, digest: cp.digest } };
  const journal = j === null ? null : { id: j.id, activity: { seq: j.activity.seq, hash: j.activity.hash }, sessions: { seq: j.sessions.seq, hash: j.sessions.hash }, ...checkpoints };
  const g = contents.journalGap;
  const copyKeys = (ks: JournalGapMark['held']): { tool: string; key: string }[] => ks.map((k) => ({ tool: k.tool, key: k.key }));
  const gap = g === undefined ? {} : { journal_gap: g === null ? null : { held: copyKeys(g.held), released: copyKeys(g.released), unread: g.unread } };
  const json = JSON.stringify({
    format: PAYLOAD_FORMAT,
    generation: contents.generation,
    created_at: contents.createdAt,
    accepted_catalog: mark,
    journal,
    ...gap,
    retention_days: contents.retentionDays ?? DEFAULT_RETENTION_DAYS,
    remembered,
    credentials,
  });
  return new TextEncoder().encode(json);
}

class ProtoKeyError extends Error {}

function rejectProtoKeys(key: string, value: unknown): unknown {
  if (key === '__proto__') throw new ProtoKeyError();
  return value;
}

/** Parse and validate a decrypted payload. Zeroes `plaintext`. */
export function decodePayload(plaintext: Uint8Array, source?: string): VaultContents {
  const fail = (reason: string) => corruptError(reason, source);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(plaintext);
  } catch {
    throw fail('payload is not valid UTF-8');
  } finally {
    zero(plaintext);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text, rejectProtoKeys);
  } catch (e) {
    throw fail(e instanceof ProtoKeyError ? "payload has a member named '__proto__'" : 'payload is not valid JSON');
  }
  const format = typeof raw === 'object' && raw !== null && 'format' in raw ? raw.format : undefined;
  if (typeof format === 'number' && Number.isInteger(format) && format > PAYLOAD_FORMAT) {
    throw fail(`unsupported payload format ${format} (this Postern reads payload formats ${READABLE_PAYLOAD_FORMATS.join(', ')})`);
  }
  const parsed = format === 1 ? PayloadV1.safeParse(raw) : format === 2 ? PayloadV2.safeParse(raw) : format === 3 ? PayloadV3.safeParse(raw) : PayloadV4.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue === undefined ? '' : issue.path.map(String).join('.');
    throw fail(`payload does not match format ${format === 1 || format === 2 || format === 3 ? format : PAYLOAD_FORMAT} at '${path}' (${issue?.code ?? 'invalid'})`);
  }
  const credentials = new Map<string, StoredCredential>();
  const remembered: StoredRemembered[] = [];
  try {
    parsed.data.credentials.forEach((record, i) => {
      const problem = recordProblem(record, secretPartsProblem);
      if (problem !== null) throw fail(`credential #${i}: ${problem}`);
      if (credentials.has(record.name)) throw fail(`credential #${i}: duplicate name '${record.name}'`);
      const secret = decodeSecret(record.secret, `credential #${i}`, fail);
      const stored: StoredCredential = {
        meta: {
          name: record.name,
          kind: record.kind as CredentialKind,
          created_at: record.created_at,
          rotated_at: record.rotated_at,
          last_used_at: record.last_used_at,
          fields: Object.freeze({ ...record.fields }),
        },
        secret,
      };
      credentials.set(record.name, stored);
    });
    if (parsed.data.format === 3 || parsed.data.format === 4) {
      parsed.data.remembered.forEach((record, i) => {
        const problem = recordProblem(record, rememberedPartsProblem);
        if (problem !== null) throw fail(`remembered #${i}: ${problem}`);
        const { name, source, since, until, fields } = record;
        remembered.push({ meta: { name, kind: record.kind as CredentialKind, source, since, until, fields: Object.freeze({ ...fields }) }, secret: decodeSecret(record.secret, `remembered #${i}`, fail) });
      });
    }
  } catch (e) {
    zeroCredentials(credentials.values());
    zeroCredentials(remembered);
    throw e;
  }
  const acceptedCatalog = parsed.data.format === 1 ? null : parsed.data.accepted_catalog;
  const retentionDays = parsed.data.format === 3 || parsed.data.format === 4 ? parsed.data.retention_days : DEFAULT_RETENTION_DAYS;
  const journal = parsed.data.format === 4 ? parsed.data.journal : null;
  const journalGap = parsed.data.format === 4 ? parsed.data.journal_gap : undefined;
  return { generation: parsed.data.generation, createdAt: parsed.data.created_at, acceptedCatalog, journal, ...(journalGap === undefined ? {} : { journalGap }), credentials, retentionDays, remembered };
}

/** The credential rules for a decoded record (a credential's, or a remembered value's with its own part rule). */
function recordProblem(record: { readonly name: string; readonly kind: string; readonly fields: Record<string, string>; readonly secret: Record<string, string> }, partsProblem: (kind: CredentialKind, parts: readonly string[]) => string | null): string | null {
  return nameProblem(record.name) ?? kindProblem(record.kind) ?? fieldsProblem(record.kind as CredentialKind, record.fields) ?? partsProblem(record.kind as CredentialKind, Object.keys(record.secret));
}

/** Base64 parts to bytes; on a bad part, what was decoded so far is zeroed. */
function decodeSecret(parts: Readonly<Record<string, string>>, where: string, fail: (reason: string) => Error): Record<string, Uint8Array> {
  const secret: Record<string, Uint8Array> = {};
  try {
    for (const [part, b64] of Object.entries(parts)) {
      try {
        secret[part] = sodium.from_base64(b64, sodium.base64_variants.ORIGINAL);
      } catch {
        throw fail(`${where}: secret part '${part}' is not valid base64`);
      }
      if ((secret[part]?.length ?? 0) > MAX_SECRET_PART_BYTES) throw fail(`${where}: secret part '${part}' is too large`);
    }
  } catch (e) {
    zero(...Object.values(secret));
    throw e;
  }
  return secret;
}
