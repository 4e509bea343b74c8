/**
 * The operator's authorization of the HTTP listener. `config.yaml` is a plain
 * file an agent with file access can edit (docs/threat-model.md, "Operator
 * state an agent can touch"), so `mcp_http.enabled: true` there is a request,
 * not a decision: the daemon opens the listener only when
 * `mcp-http.authorized.json` carries a MAC, under a key derived from the vault
 * (the catalog-mac key, with its own domain string), over the port that
 * config.yaml names. `postern http enable` (passphrase) writes both.
 *
 * Invariants: the MAC covers the format, the port and the time; it is checked
 * in constant time; a record for another port, a malformed one or a forged one
 * authorizes nothing. `postern passwd` re-authenticates a record that verifies
 * under the old key (src/home/rekey.ts) and leaves any other one failing.
 */
import { unlink } from 'node:fs/promises';
import { z } from 'zod';
import { PosternError } from '../rules/errors.js';
import { macVerifies, readMacdRecord, writeMacdRecord, type MacdRecordKind, type ReadMacdRecord } from './macd-record.js';
import type { HomePaths } from './paths.js';

const HTTP_AUTHORIZATION_FORMAT = 'postern.mcp-http-authorization/1';
const MAC_DOMAIN = 'postern mcp-http authorization v1\n';

const RecordSchema = z
  .object({
    format: z.literal(HTTP_AUTHORIZATION_FORMAT),
    port: z.number().int().min(0).max(65_535),
    authorized_at: z.string().max(64),
  })
  .strict();
type HttpAuthorizationRecord = z.infer<typeof RecordSchema>;
interface StoredHttpAuthorization {
  readonly record: HttpAuthorizationRecord;
  readonly mac: string;
}
type ReadHttpAuthorization = ReadMacdRecord<HttpAuthorizationRecord>;

/** mcp-http.authorized.json, for what re-authenticates every MAC'd record (rekey.ts). */
export const HTTP_AUTHORIZATION: MacdRecordKind<HttpAuthorizationRecord> = {
  name: 'HTTP listener authorization',
  domain: MAC_DOMAIN,
  schema: RecordSchema,
  file: (paths) => paths.mcpHttpAuthorization,
  redo: 'run `postern http enable` to authorize the listener again',
};

type HttpAuthorizationVerdict =
  | { readonly kind: 'authorized' }
  | { readonly kind: 'refused'; readonly reason: string };

function isAuthenticHttpAuthorization(key: Uint8Array, s: StoredHttpAuthorization): boolean {
  return macVerifies(key, MAC_DOMAIN, s.record, s.mac);
}

export function readHttpAuthorization(paths: HomePaths): Promise<ReadHttpAuthorization> {
  return readMacdRecord(paths.mcpHttpAuthorization, RecordSchema);
}

/** Whether the listener on `port` (as config.yaml names it) was authorized with this vault's key. */
export function judgeHttpAuthorization(key: Uint8Array, found: ReadHttpAuthorization, port: number): HttpAuthorizationVerdict {
  switch (found.kind) {
    case 'none':
      return { kind: 'refused', reason: 'config.yaml enables it, but it was never authorized with the passphrase' };
    case 'malformed':
      return { kind: 'refused', reason: 'mcp-http.authorized.json is malformed' };
    case 'stored':
      if (!isAuthenticHttpAuthorization(key, found.stored)) return { kind: 'refused', reason: 'its authorization does not verify with this vault (forged, from another vault, or from before a passphrase change)' };
      if (found.stored.record.port !== port) return { kind: 'refused', reason: `it was authorized for port ${found.stored.record.port}, and config.yaml now names port ${port}` };
      return { kind: 'authorized' };
  }
}

export async function writeHttpAuthorization(paths: HomePaths, key: Uint8Array, port: number, at: Date): Promise<void> {
  const record: HttpAuthorizationRecord = { format: HTTP_AUTHORIZATION_FORMAT, port, authorized_at: at.toISOString() };
  await writeMacdRecord(paths.mcpHttpAuthorization, key, MAC_DOMAIN, record);
}

export async function removeHttpAuthorization(paths: HomePaths): Promise<boolean> {
  try {
    await unlink(paths.mcpHttpAuthorization);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new PosternError('FILE_IO', `cannot remove ${paths.mcpHttpAuthorization}`);
  }
}
