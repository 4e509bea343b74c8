/**
 * The devices paired with the approval page: `approval-devices.json`, MAC'd
 * under the vault's catalog-mac key with its own domain string
 * (macd-record.ts). Each device has an id, the name the operator gave it at
 * pairing, the public half of the key pair its browser made (the private half
 * never leaves the browser: a WebCrypto key that cannot be exported), when it
 * was paired and when it was revoked.
 *
 * Invariants: the daemon is the only writer (pairing and revocation happen in
 * it); a file that is missing authorizes no device, and one that does not
 * verify authorizes none either (it is never rewritten from a forged copy);
 * a revoked device stays listed, revoked, so its id is never reused; each
 * save carries the next `sequence`, which the daemon also journals, and a
 * file whose sequence is below the journal's (an older copy put back) is
 * refused like a forged one. A file of the first format (devices that held a
 * bearer secret) is refused: those devices pair again. A device's passkeys
 * (registered from the page) are kept with it and removed with its revocation.
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { macVerifies, readMacdRecord, writeMacdRecord, type MacdRecordKind } from './macd-record.js';
import type { HomePaths } from './paths.js';

const APPROVAL_DEVICES_FORMAT = 'postern.approval-devices/2';
const MAC_DOMAIN = 'postern approval-page devices v1\n';
/** At most this many devices are kept (revoked ones included). */
export const MAX_DEVICES = 64;

/** A passkey registered from the page for a device (presence: src/daemon/approval-page/presence.ts). */
const PasskeySchema = z
  .object({
    /** The WebAuthn credential id, base64url. */
    id: z.string().min(1).max(1400).regex(/^[A-Za-z0-9_-]+$/),
    /** Its COSE public key, base64url. */
    public_key: z.string().min(1).max(2048).regex(/^[A-Za-z0-9_-]+$/),
    /** The highest signature counter seen (it only grows; 0 for authenticators that keep none). */
    counter: z.number().int().min(0),
    added_at: z.string().max(64),
  })
  .strict();
export type Passkey = z.infer<typeof PasskeySchema>;
/** At most this many passkeys per device. */
export const MAX_PASSKEYS = 8;

const DeviceSchema = z
  .object({
    id: z.string().regex(/^[0-9a-f]{16}$/),
    name: z.string().min(1).max(64),
    /** The device's ECDSA P-256 public key: its uncompressed point, base64url. */
    public_key: z.string().regex(/^[A-Za-z0-9_-]{87}$/),
    paired_at: z.string().max(64),
    revoked_at: z.string().max(64).nullable(),
    /** Its passkeys (absent: none); a revoked device has none. */
    passkeys: z.array(PasskeySchema).max(MAX_PASSKEYS).optional(),
  })
  .strict();
export type PairedDevice = z.infer<typeof DeviceSchema>;

/** `sequence` grows by one a save; the daemon journals it (device_paired, device_revoked), so a copy put back from before a revocation is told apart. */
const RecordSchema = z.object({ format: z.literal(APPROVAL_DEVICES_FORMAT), sequence: z.number().int().min(0), devices: z.array(DeviceSchema).max(MAX_DEVICES), written_at: z.string().max(64) }).strict();
type ApprovalDevicesRecord = z.infer<typeof RecordSchema>;

export const APPROVAL_DEVICES: MacdRecordKind<ApprovalDevicesRecord> = {
  name: 'approval page devices',
  domain: MAC_DOMAIN,
  schema: RecordSchema,
  file: (paths) => paths.approvalDevices,
  redo: 'pair the devices again with `postern approvals pair`',
};

type LoadedDevices = { readonly kind: 'ok'; readonly devices: PairedDevice[]; readonly sequence: number } | { readonly kind: 'refused'; readonly reason: string };

async function isFirstFormat(paths: HomePaths): Promise<boolean> {
  try {
    return (await readFile(paths.approvalDevices, 'utf8')).includes('"postern.approval-devices/1"');
  } catch {
    return false;
  }
}

export async function loadApprovalDevices(paths: HomePaths, key: Uint8Array): Promise<LoadedDevices> {
  const found = await readMacdRecord(paths.approvalDevices, RecordSchema);
  switch (found.kind) {
    case 'none':
      return { kind: 'ok', devices: [], sequence: 0 };
    case 'malformed':
      return { kind: 'refused', reason: (await isFirstFormat(paths)) ? 'approval-devices.json holds devices paired before device keys: pair them again' : 'approval-devices.json is malformed' };
    case 'stored':
      if (!macVerifies(key, MAC_DOMAIN, found.stored.record, found.stored.mac)) return { kind: 'refused', reason: 'approval-devices.json does not verify with this vault (forged, from another vault, or from before a passphrase change)' };
      return { kind: 'ok', devices: found.stored.record.devices, sequence: found.stored.record.sequence };
  }
}

export async function saveApprovalDevices(paths: HomePaths, key: Uint8Array, devices: readonly PairedDevice[], sequence: number, at: Date): Promise<void> {
  const record: ApprovalDevicesRecord = { format: APPROVAL_DEVICES_FORMAT, sequence, devices: [...devices], written_at: at.toISOString() };
  await writeMacdRecord(paths.approvalDevices, key, MAC_DOMAIN, record);
}
