/**
 * The decrypted payload: UTF-8 JSON `{ format: 2, generation, created_at,
 * accepted_catalog, credentials: [...] }` with secret parts as standard
 * base64 (FORMAT.md §4). Format 1 (no `accepted_catalog`) is still read, as
 * a vault that never recorded a catalog acceptance; saves write format 2.
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
import { fieldsProblem, kindProblem, MAX_SECRET_PART_BYTES, nameProblem, secretPartsProblem } from './credentials.js';
import { sodium, zero } from './libsodium.js';
import type { CredentialKind } from './types.js';

/** The format every save writes; READABLE_PAYLOAD_FORMATS lists what is read. */
export const PAYLOAD_FORMAT = 2;
export const READABLE_PAYLOAD_FORMATS = [1, 2] as const;

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

export interface VaultContents {
  generation: number;
  readonly createdAt: string;
  /** The high-water mark of catalog acceptances; null until the first one (and in format 1). */
  acceptedCatalog: CatalogMark | null;
  readonly credentials: Map<string, StoredCredential>;
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

/** Zero every secret part held by `credentials`. */
export function zeroCredentials(credentials: Iterable<StoredCredential>): void {
  for (const c of credentials) zero(...Object.values(c.secret));
}

/** Serialize; credentials and parts are sorted so equal contents give equal JSON. The caller zeroes the result. */
export function encodePayload(contents: VaultContents): Uint8Array {
  const names = [...contents.credentials.keys()].sort();
  const credentials = names.map((name) => {
    const c = contents.credentials.get(name);
    if (c === undefined) throw new Error('unreachable: name vanished during encoding');
    const secret: Record<string, string> = {};
    for (const part of Object.keys(c.secret).sort()) {
      const bytes = c.secret[part];
      if (bytes !== undefined) secret[part] = sodium.to_base64(bytes, sodium.base64_variants.ORIGINAL);
    }
    const { kind, created_at, rotated_at, last_used_at, fields } = c.meta;
    return { name, kind, created_at, rotated_at, last_used_at, fields: { ...fields }, secret };
  });
  const mark = contents.acceptedCatalog === null ? null : { sequence: contents.acceptedCatalog.sequence, digest: contents.acceptedCatalog.digest };
  const json = JSON.stringify({ format: PAYLOAD_FORMAT, generation: contents.generation, created_at: contents.createdAt, accepted_catalog: mark, credentials });
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
  const parsed = format === 1 ? PayloadV1.safeParse(raw) : PayloadV2.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue === undefined ? '' : issue.path.map(String).join('.');
    throw fail(`payload does not match format ${format === 1 ? 1 : PAYLOAD_FORMAT} at '${path}' (${issue?.code ?? 'invalid'})`);
  }
  const credentials = new Map<string, StoredCredential>();
  try {
    parsed.data.credentials.forEach((record, i) => {
      const problem =
        nameProblem(record.name) ??
        kindProblem(record.kind) ??
        fieldsProblem(record.kind as CredentialKind, record.fields) ??
        secretPartsProblem(record.kind as CredentialKind, Object.keys(record.secret));
      if (problem !== null) throw fail(`credential #${i}: ${problem}`);
      if (credentials.has(record.name)) throw fail(`credential #${i}: duplicate name '${record.name}'`);
      const secret: Record<string, Uint8Array> = {};
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
      for (const [part, b64] of Object.entries(record.secret)) {
        try {
          secret[part] = sodium.from_base64(b64, sodium.base64_variants.ORIGINAL);
        } catch {
          throw fail(`credential #${i}: secret part '${part}' is not valid base64`);
        }
        if ((secret[part]?.length ?? 0) > MAX_SECRET_PART_BYTES) throw fail(`credential #${i}: secret part '${part}' is too large`);
      }
    });
  } catch (e) {
    zeroCredentials(credentials.values());
    throw e;
  }
  const acceptedCatalog = parsed.data.format === 2 ? parsed.data.accepted_catalog : null;
  return { generation: parsed.data.generation, createdAt: parsed.data.created_at, acceptedCatalog, credentials };
}
