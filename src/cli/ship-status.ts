/**
 * What `postern status` and `doctor` say about journal shipping: the daemon's
 * run/ship.json (daemon/lifecycle/ship-loop.ts) read against the journals' heads now,
 * so the lag is current even when the shipper has stalled. No passphrase.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { HomePaths } from '../home/paths.js';
import type { Finding } from '../home/host-checks.js';
import { openJournals } from '../journal/index.js';
import { SHIP_STATUS_FILE, shipProblem, type ShipStatus } from '../daemon/lifecycle/ship-loop.js';
import { sanitizeForTerminal as clean } from '../rules/terminal-text.js';

interface ShipReport {
  readonly status: ShipStatus | null;
  readonly local: { readonly activity: number; readonly sessions: number } | null;
  /** Local entries the database did not hold at the shipper's last pass; null when unknown. */
  readonly lag: { readonly activity: number; readonly sessions: number } | null;
}

export function readShipReport(paths: Pick<HomePaths, 'runDir' | 'journalDir'>): ShipReport {
  let status: ShipStatus | null = null;
  try {
    status = JSON.parse(readFileSync(join(paths.runDir, SHIP_STATUS_FILE), 'utf8')) as ShipStatus;
  } catch {
    // no shipping, or not yet
  }
  let local: ShipReport['local'] = null;
  try {
    const j = openJournals(paths.journalDir, { readonly: true });
    try {
      const f = j.facts();
      local = { activity: f.activity.head.seq, sessions: f.sessions.head.seq };
    } finally {
      j.close();
    }
  } catch {
    // no journal yet: no lag to tell
  }
  const remote = status?.remote ?? null;
  const lag = remote === null || local === null ? null : { activity: Math.max(0, local.activity - remote.activity), sessions: Math.max(0, local.sessions - remote.sessions) };
  return { status, local, lag };
}

/** One line: `off`, or the state, the database, the lag and the last error. */
export function describeShipping(r: ShipReport): string {
  const s = r.status;
  if (s === null) return 'off (config.yaml `ship: {enabled: true}` and a postgres_url credential turn it on; `postern audit ship` catches up once)';
  const lag = r.lag === null ? 'lag unknown' : `lag: activity ${r.lag.activity}, sessions ${r.lag.sessions} entries`;
  const last = s.last_success_at === null ? 'nothing shipped yet' : `last shipped ${clean(s.last_success_at, 40)}`;
  const err = s.last_error === null ? '' : `; last error (${clean(s.last_error.at, 40)}): ${clean(s.last_error.code, 40)}: ${clean(s.last_error.message, 400)}`;
  return `${clean(s.state, 20)} to ${clean(s.database, 200)} as ${clean(s.home_name, 64)}; ${lag}; ${last}${err}`;
}

export function shipFinding(paths: Pick<HomePaths, 'runDir' | 'journalDir'>): Finding {
  const r = readShipReport(paths);
  const check = 'journal shipping';
  const detail = describeShipping(r);
  if (r.status === null || shipProblem(r.status) === null) return { status: 'ok', check, detail };
  return { status: 'warning', check, detail, fix: 'see the last error; shipping resumes by itself once the database answers, or run `postern audit ship --to …` (docs/teams.md)' };
}
