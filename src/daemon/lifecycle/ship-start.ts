/**
 * Whether this daemon ships its journals, and with what: config.yaml `ship`
 * names a vault credential of kind postgres_url; the connection string is
 * read from the unlocked vault once, here. A missing or misfit credential is
 * logged, written to run/ship.json and reported as the shipping problem (the
 * operator status, the TUI's badge), never a reason not to start: the
 * local journal stays the source of truth and `postern audit ship` catches up.
 */
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Clock } from '../../clock/index.js';
import { atomicWriteFile, removeDurably } from '../../home/atomic-write.js';
import type { HomePaths } from '../../home/paths.js';
import type { UnlockedVault } from '../../vault/index.js';
import type { DaemonConfig } from '../services/config.js';
import { SHIP_STATUS_FILE, ShipLoop, shipProblem, type ShipStatus } from './ship-loop.js';

interface ShipStart {
  readonly paths: HomePaths;
  readonly config: DaemonConfig;
  readonly vault: UnlockedVault;
  readonly clock: Clock;
  readonly log: (line: string) => void;
  readonly onProblem: (problem: string | null) => void;
}

/** A daemon's journal shipping: running (a ShipLoop), or enabled but not started, which reports why until the daemon stops. */
export interface Shipping {
  status(): ShipStatus;
  stop(reason: string): Promise<void>;
}

export async function startShipping(s: ShipStart): Promise<Shipping | null> {
  const c = s.config.ship;
  const statusFile = join(s.paths.runDir, SHIP_STATUS_FILE);
  if (!c.enabled) {
    await removeDurably(statusFile).catch(() => undefined);
    return null;
  }
  const homeName = c.home_name ?? hostname().slice(0, 64);
  const cred = s.vault.get(c.credential);
  const url = cred?.meta.kind === 'postgres_url' ? cred.secret['url'] : undefined;
  if (url === undefined) {
    const message = cred === undefined ? `no credential ${c.credential} in the vault (add it: postern secret add ${c.credential} --kind postgres_url)` : `credential ${c.credential} is of kind ${cred.meta.kind}, not postgres_url`;
    s.log(`journal shipping is enabled but not started: ${message}`);
    const at = s.clock.now().toISOString();
    const status: ShipStatus = { format: 'postern.ship-status/1', database: '(none)', home_id: null, home_name: homeName, state: 'stopped', remote: null, local: null, last_success_at: null, last_error: { code: 'SHIP_UNAVAILABLE', message, at }, updated_at: at };
    await atomicWriteFile(statusFile, `${JSON.stringify(status)}\n`);
    // Not started, and said so where shipping is watched: the operator status and the TUI's badge too.
    s.onProblem(shipProblem(status));
    return { status: () => status, stop: () => Promise.resolve() };
  }
  const loop = new ShipLoop({ url: Buffer.from(url).toString('utf8'), journalDir: s.paths.journalDir, checkpointsPath: s.paths.checkpoints, runDir: s.paths.runDir, homeName, batch: c.batch, retryMs: c.retry_seconds * 1000, clock: s.clock, log: s.log, onProblem: s.onProblem });
  loop.start();
  s.log(`journal shipping to ${loop.status().database} as ${homeName}`);
  return loop;
}
