/**
 * The approval page as the composition root wires it: the paired devices
 * (loaded whether or not the page opens, so they can be listed and revoked),
 * the operator channel's device operations (`devices.pair|list|revoke`), the
 * page itself when its record authorizes it (start.ts), and the notices a new
 * card sends (notify.ts). Pairing needs a running page: the code is only worth
 * something with a URL to open.
 */
import type { ApprovalQueue } from '../../approvals/queue.js';
import type { Clock } from '../../clock/index.js';
import type { HomePaths } from '../../home/paths.js';
import type { Journals } from '../../journal/index.js';
import type { ActivityView } from '../../protocol/operator/index.js';
import { PosternError } from '../../rules/errors.js';
import type { UnlockedVault } from '../../vault/index.js';
import type { EventBus } from '../services/events.js';
import type { JournalEvent } from '../services/journal-event.js';
import { startNotifications } from './notify.js';
import type { BackendParts } from '../operator/backend.js';
import { pageIdentity } from './proof.js';
import { loadDeviceRegistry, startApprovalPageIfAuthorized, tlsFromVault, type RunningPage } from './start.js';

interface PageWiringParts {
  readonly paths: HomePaths;
  readonly clock: Clock;
  readonly log: (line: string) => void;
  readonly journals: Journals;
  readonly journalEvent: JournalEvent;
  readonly queue: ApprovalQueue;
  readonly bus: EventBus;
  /** The vault the daemon holds now (a new generation replaces it). */
  readonly vault: () => UnlockedVault;
}

interface PageWiring {
  /** What the operator channel offers for devices. */
  readonly deviceOps: NonNullable<BackendParts['devices']>;
  /** Opens the page if authorized (null: not), and starts the notices; `stop` ends the notices. */
  start(activity: () => ActivityView[]): Promise<{ readonly running: RunningPage | null; readonly stopNotifications: () => void }>;
}

export async function wireApprovalPage(p: PageWiringParts): Promise<PageWiring> {
  const { journalEvent } = p;
  // The device file's number the journal last saw: a file older than that trusts no device.
  const journaled = Math.max(0, ...(['device_paired', 'device_revoked', 'passkey_added'] as const).map((t) => Number(p.journals.sessions.latestEvent(null, t)?.data['sequence'] ?? 0) || 0));
  const devices = await loadDeviceRegistry(p.paths, () => p.vault().deriveKey('catalog-mac'), p.clock, p.log, journaled);
  let running: RunningPage | null = null;
  const view = (d: { id: string; name: string; paired_at: string; revoked_at: string | null }) => ({ id: d.id, name: d.name, paired_at: d.paired_at, revoked_at: d.revoked_at });
  const deviceOps: PageWiring['deviceOps'] = {
    pair: (name) => {
      if (running === null) throw new PosternError('USAGE', 'the approval page is not running: run `postern approvals page enable`, then restart the daemon');
      return { ...devices.openPairing(name), url: running.url, tls_sha256: running.record.tls_sha256, page_key: running.pageKeyCode, run_fingerprint: running.runFingerprint };
    },
    list: () => devices.list().map(view),
    revoke: async (id) => {
      const d = await devices.revoke(id);
      running?.dropDevice(d.id);
      journalEvent(null, 'device_revoked', { device: d.id, name: d.name, sequence: devices.sequence });
      return view(d);
    },
    page: () => (running === null ? null : { url: running.url, tls_sha256: running.record.tls_sha256, run_fingerprint: running.runFingerprint }),
  };
  return {
    deviceOps,
    async start(activity) {
      running = await startApprovalPageIfAuthorized({
        paths: p.paths, clock: p.clock, queue: p.queue, bus: p.bus, devices, log: p.log,
        key: p.vault().deriveKey('catalog-mac'),
        identity: pageIdentity(p.vault().deriveKey('catalog-mac')),
        revoke: async (id) => (await deviceOps.revoke(id)),
        tls: (record) => tlsFromVault(p.vault(), record),
        activity,
        journal: (type, data) => journalEvent(null, type, data),
        journalPage: (data) => journalEvent(null, 'approval_page', data),
      });
      const stopNotifications = startNotifications({ queue: p.queue, webhook: running?.record.webhook ?? null, pageUrl: running?.url ?? null, path: process.env['PATH'] ?? null, log: p.log });
      return { running, stopNotifications };
    },
  };
}
