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
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFile, unlink } from 'node:fs/promises';
import { z } from 'zod';
import { canonicalJson } from '../rules/canonical.js';
import { PosternError } from '../rules/errors.js';
import { atomicWriteFile } from './atomic-write.js';
import type { HomePaths } from './paths.js';

export const HTTP_AUTHORIZATION_FORMAT = 'postern.mcp-http-authorization/1';
const MAC_DOMAIN = 'postern mcp-http authorization v1\n';

const RecordSchema = z
  .object({
    format: z.literal(HTTP_AUTHORIZATION_FORMAT),
    port: z.number().int().min(0).max(65_535),
    authorized_at: z.string().max(64),
  })
  .strict();
export type HttpAuthorizationRecord = z.infer<typeof RecordSchema>;

const StoredSchema = z.object({ record: RecordSchema, mac: z.string().max(128) }).strict();
export type StoredHttpAuthorization = z.infer<typeof StoredSchema>;

export type ReadHttpAuthorization =
  | { readonly kind: 'none' }
  | { readonly kind: 'malformed' }
  | { readonly kind: 'stored'; readonly stored: StoredHttpAuthorization };

export type HttpAuthorizationVerdict =
  | { readonly kind: 'authorized' }
  | { readonly kind: 'refused'; readonly reason: string };

export function httpAuthorizationMac(key: Uint8Array, record: HttpAuthorizationRecord): string {
  return createHmac('sha256', key).update(MAC_DOMAIN).update(canonicalJson(record)).digest('hex');
}

export function isAuthenticHttpAuthorization(key: Uint8Array, s: StoredHttpAuthorization): boolean {
  const expected = Buffer.from(httpAuthorizationMac(key, s.record), 'hex');
  const given = /^[0-9a-f]{64}$/.test(s.mac) ? Buffer.from(s.mac, 'hex') : Buffer.alloc(0);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export async function readHttpAuthorization(paths: HomePaths): Promise<ReadHttpAuthorization> {
  let text: string;
  try {
    text = await readFile(paths.mcpHttpAuthorization, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'none' };
    throw new PosternError('FILE_IO', `cannot read ${paths.mcpHttpAuthorization}`);
  }
  try {
    const r = StoredSchema.safeParse(JSON.parse(text));
    return r.success ? { kind: 'stored', stored: r.data } : { kind: 'malformed' };
  } catch {
    return { kind: 'malformed' };
  }
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
  await atomicWriteFile(paths.mcpHttpAuthorization, `${JSON.stringify({ record, mac: httpAuthorizationMac(key, record) }, null, 2)}\n`);
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
