/**
 * The operator's authorization of the approval page (docs/approval-page.md):
 * `approval-page.authorized.json`, MAC'd under the vault's catalog-mac key
 * with its own domain string (macd-record.ts). The record IS the page's
 * configuration — port, address, certificate fingerprint, webhook — so
 * nothing an agent can edit (config.yaml) opens the page, moves it to another
 * address, or points its notifications elsewhere. `postern approvals page
 * enable` (passphrase) writes it; `disable` removes it.
 *
 * Invariants: a missing, malformed or forged record authorizes nothing; an
 * address other than 127.0.0.1 is only valid with a certificate (TLS); the
 * webhook carries the call's arguments only when `arguments` is true.
 */
import { unlink } from 'node:fs/promises';
import { z } from 'zod';
import { PosternError } from '../rules/errors.js';
import { macVerifies, readMacdRecord, writeMacdRecord, type MacdRecordKind, type ReadMacdRecord } from './macd-record.js';
import type { HomePaths } from './paths.js';

const APPROVAL_PAGE_FORMAT = 'postern.approval-page-authorization/1';
const MAC_DOMAIN = 'postern approval-page authorization v1\n';
/** The page's port when none is named. */
export const APPROVAL_PAGE_DEFAULT_PORT = 7470;
export const LOOPBACK = '127.0.0.1';

const RecordSchema = z
  .object({
    format: z.literal(APPROVAL_PAGE_FORMAT),
    port: z.number().int().min(0).max(65_535),
    bind: z.string().min(1).max(64),
    /** SHA-256 of the certificate's DER, when the page is served over TLS (its key is in the vault). */
    tls_sha256: z.string().regex(/^[0-9a-f]{64}$/).nullable(),
    webhook: z.object({ url: z.string().max(2_000), arguments: z.boolean() }).strict().nullable(),
    authorized_at: z.string().max(64),
  })
  .strict()
  .refine((r) => r.bind === LOOPBACK || r.tls_sha256 !== null, { message: 'an address other than 127.0.0.1 needs TLS' });
export type ApprovalPageRecord = z.infer<typeof RecordSchema>;

export const APPROVAL_PAGE_AUTHORIZATION: MacdRecordKind<ApprovalPageRecord> = {
  name: 'approval page authorization',
  domain: MAC_DOMAIN,
  schema: RecordSchema,
  file: (paths) => paths.approvalPageAuthorization,
  redo: 'run `postern approvals page enable` to authorize the page again',
};

type ApprovalPageVerdict =
  | { readonly kind: 'off' }
  | { readonly kind: 'authorized'; readonly record: ApprovalPageRecord }
  | { readonly kind: 'refused'; readonly reason: string };

export function readApprovalPageAuthorization(paths: HomePaths): Promise<ReadMacdRecord<ApprovalPageRecord>> {
  return readMacdRecord(paths.approvalPageAuthorization, RecordSchema);
}

/** Whether the page was authorized with this vault's key, and how. */
export function judgeApprovalPage(key: Uint8Array, found: ReadMacdRecord<ApprovalPageRecord>): ApprovalPageVerdict {
  switch (found.kind) {
    case 'none':
      return { kind: 'off' };
    case 'malformed':
      return { kind: 'refused', reason: 'approval-page.authorized.json is malformed' };
    case 'stored':
      if (!macVerifies(key, MAC_DOMAIN, found.stored.record, found.stored.mac)) return { kind: 'refused', reason: 'its authorization does not verify with this vault (forged, from another vault, or from before a passphrase change)' };
      return { kind: 'authorized', record: found.stored.record };
  }
}

export async function writeApprovalPageAuthorization(paths: HomePaths, key: Uint8Array, r: Omit<ApprovalPageRecord, 'format' | 'authorized_at'>, at: Date): Promise<ApprovalPageRecord> {
  const record: ApprovalPageRecord = { format: APPROVAL_PAGE_FORMAT, ...r, authorized_at: at.toISOString() };
  const ok = RecordSchema.safeParse(record);
  if (!ok.success) throw new PosternError('USAGE', ok.error.issues[0]?.message ?? 'invalid approval page settings');
  await writeMacdRecord(paths.approvalPageAuthorization, key, MAC_DOMAIN, record);
  return record;
}

export async function removeApprovalPageAuthorization(paths: HomePaths): Promise<boolean> {
  try {
    await unlink(paths.approvalPageAuthorization);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new PosternError('FILE_IO', `cannot remove ${paths.approvalPageAuthorization}`);
  }
}
