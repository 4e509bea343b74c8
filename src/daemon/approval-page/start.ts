/**
 * Whether the daemon opens its approval page, and the files that go with it.
 * Open only when `approval-page.authorized.json` verifies with the vault's
 * key (src/home/approval-page-authorization.ts): the record names the port,
 * the address and the certificate, so nothing an agent can edit opens or
 * moves it. The paired devices (src/home/approval-devices.ts) are loaded
 * whether or not the page opens, so they can be listed and revoked.
 *
 * Files: `run/approval-page.json` (the URL, for `postern approvals pair` and
 * `page status`), written once the port is bound and removed at close.
 */
import { unlink } from 'node:fs/promises';
import type { Clock } from '../../clock/index.js';
import { loadApprovalDevices, saveApprovalDevices, type PairedDevice } from '../../home/approval-devices.js';
import { judgeApprovalPage, readApprovalPageAuthorization, type ApprovalPageRecord } from '../../home/approval-page-authorization.js';
import { atomicWriteFile } from '../../home/atomic-write.js';
import type { HomePaths } from '../../home/paths.js';
import { APPROVAL_PAGE_TLS_CREDENTIAL, certificatePem, certificateSha256 } from '../../home/approval-page-tls.js';
import type { Credential } from '../../vault/index.js';
import { DeviceRegistry } from './devices.js';
import { startApprovalPage, type ApprovalPageEndpoint, type ApprovalPageOptions } from './server.js';

/** What `run/approval-page.json` holds: for people and scripts only; Postern never trusts it (`page status` asks the daemon). */
interface ApprovalPageInfo {
  readonly url: string;
  readonly pid: number;
  readonly tls_sha256: string | null;
}

/**
 * The paired devices at start. `key` is read at every save: the vault the daemon holds now (a
 * new generation replaces the one it started with; a locked vault saves nothing). `journaled` is the highest device-file sequence the (anchored)
 * journal recorded: a file below it was put back from before a later pairing or revocation, and
 * then no device is trusted (the ALARM says why); the next save continues above both.
 */
export async function loadDeviceRegistry(paths: HomePaths, key: () => Uint8Array, clock: Clock, log: (line: string) => void, journaled: number): Promise<DeviceRegistry> {
  const loaded = await loadApprovalDevices(paths, key());
  let devices: PairedDevice[] = [];
  if (loaded.kind === 'refused') log(`approval page: no device is trusted: ${loaded.reason}`);
  else if (loaded.sequence < journaled) log(`ALARM: approval page: no device is trusted: approval-devices.json is save ${loaded.sequence}, the journal recorded save ${journaled} (an older copy was put back)`);
  else devices = loaded.devices;
  const sequence = Math.max(journaled, loaded.kind === 'ok' ? loaded.sequence : 0);
  return new DeviceRegistry({ devices, sequence, clock, save: (list, seq) => saveApprovalDevices(paths, key(), list, seq, clock.now()) });
}

/** The page's TLS key and certificate from the vault, when its certificate is the one the record names; else null. */
export function tlsFromVault(vault: { get(name: string): Credential | undefined }, record: ApprovalPageRecord): { key: string; cert: string } | null {
  const c = vault.get(APPROVAL_PAGE_TLS_CREDENTIAL);
  const key = c?.secret['private_key'];
  const der = c?.meta.fields['certificate'];
  if (c === undefined || c.meta.kind !== 'tls_key' || key === undefined || der === undefined) return null;
  const bytes = Buffer.from(der, 'base64');
  if (certificateSha256(bytes) !== record.tls_sha256) return null;
  return { key: Buffer.from(key).toString('utf8'), cert: certificatePem(bytes) };
}

interface PageStartDeps extends Omit<ApprovalPageOptions, 'bind' | 'port' | 'tls'> {
  readonly paths: HomePaths;
  /** The vault's catalog-mac key (the authorization's MAC key). */
  readonly key: Uint8Array;
  /** The certificate and key for a TLS page, from the vault (null: none kept). */
  readonly tls: (record: ApprovalPageRecord) => { key: string; cert: string } | null;
  readonly log: (line: string) => void;
  readonly journalPage: (data: Record<string, unknown>) => void;
}

export interface RunningPage extends ApprovalPageEndpoint {
  readonly record: ApprovalPageRecord;
  /** The short code of the page key (proof.ts), which a pairing link carries. */
  readonly pageKeyCode: string;
}

export async function startApprovalPageIfAuthorized(d: PageStartDeps): Promise<RunningPage | null> {
  await unlink(d.paths.approvalPageInfo).catch(() => undefined);
  const verdict = judgeApprovalPage(d.key, await readApprovalPageAuthorization(d.paths));
  if (verdict.kind === 'off') return null;
  if (verdict.kind === 'refused') {
    d.log(`approval page NOT started: ${verdict.reason}; run \`postern approvals page enable\` to authorize it`);
    d.journalPage({ state: 'refused', reason: verdict.reason });
    return null;
  }
  const record = verdict.record;
  const tls = record.tls_sha256 === null ? null : d.tls(record);
  if (record.tls_sha256 !== null && tls === null) {
    d.log('approval page NOT started: its TLS key is not in the vault, or its certificate is not the one authorized; run `postern approvals page enable --bind ADDR` again');
    d.journalPage({ state: 'refused', reason: 'the TLS key is not in the vault' });
    return null;
  }
  const page = await startApprovalPage({ ...d, bind: record.bind, port: record.port, tls });
  try {
    const info: ApprovalPageInfo = { url: page.url, pid: process.pid, tls_sha256: record.tls_sha256 };
    await atomicWriteFile(d.paths.approvalPageInfo, `${JSON.stringify(info)}\n`);
  } catch (e) {
    await page.close();
    throw e;
  }
  d.log(`approval page on ${page.url} (run ${page.runFingerprint})${record.tls_sha256 === null ? '' : ` (TLS, certificate SHA-256 ${record.tls_sha256})`}`);
  d.journalPage({ state: 'started', url: page.url, run_fingerprint: page.runFingerprint, tls_sha256: record.tls_sha256, webhook: record.webhook !== null });
  return {
    ...page,
    record,
    pageKeyCode: d.identity.keyCode,
    async close() {
      await page.close();
      await unlink(d.paths.approvalPageInfo).catch(() => undefined);
    },
  };
}
