/**
 * The daemon's journal shipping (config.yaml `ship`, docs/teams.md): passes
 * of ship/shipper.ts one after the other, off the call path, and what they
 * achieved in `run/ship.json` for `postern status` and `doctor`.
 *
 * Invariants:
 * - no call waits for it: it has its own read-only connection to the
 *   journals (WAL snapshots; it never takes the write lock) and its own
 *   timer; a failure is recorded and retried later, never thrown;
 * - the backlog is bounded by the journal itself: nothing is queued in
 *   memory, each pass reads at most `batch × MAX_BATCHES` entries per
 *   journal from where the database stops, so a long outage costs nothing
 *   but lag;
 * - the connection string lives only in this object (from the vault) and is
 *   dropped when the vault locks (`stop`); the next daemon start resumes.
 */
import { isDeepStrictEqual } from 'node:util';
import { join } from 'node:path';
import type pg from 'pg';
import type { Clock } from '../../clock/index.js';
import { atomicWriteFile } from '../../home/atomic-write.js';
import { openJournals, type Journals } from '../../journal/index.js';
import { connectShip, describeTarget, shipError } from '../../journal/ship/connect.js';
import { shipPass, type ShipProgress } from '../../journal/ship/shipper.js';
import { isPosternError } from '../../rules/errors.js';

/** The status file's name in the run directory. */
export const SHIP_STATUS_FILE = 'ship.json';
/** Batches per journal in one pass; another pass follows at once when there is more. */
const MAX_BATCHES = 20;
/** A caught-up shipper looks for new entries this often. */
const IDLE_MS = 1000;
/** A shipper a little behind waits this long for more, so a busy daemon ships in batches, not a round trip per call. */
const LINGER_MS = 100;

export interface ShipStatus {
  readonly format: 'postern.ship-status/1';
  readonly database: string;
  readonly home_id: string | null;
  readonly home_name: string;
  readonly state: 'starting' | 'shipping' | 'caught_up' | 'failing' | 'stopped';
  /** The highest seq the database held at the last pass, and the local heads then. */
  readonly remote: { readonly activity: number; readonly sessions: number } | null;
  readonly local: { readonly activity: number; readonly sessions: number } | null;
  readonly last_success_at: string | null;
  readonly last_error: { readonly code: string; readonly message: string; readonly at: string } | null;
  readonly updated_at: string;
}

interface ShipLoopOptions {
  readonly url: string;
  readonly journalDir: string;
  readonly checkpointsPath: string;
  readonly runDir: string;
  readonly homeName: string;
  readonly batch: number;
  readonly retryMs: number;
  readonly clock: Clock;
  readonly log: (line: string) => void;
  /** Told when shipping starts or stops failing: one line, or null once it ships again (the TUI's badge). */
  readonly onProblem?: (problem: string | null) => void;
}

/**
 * The one line a shipper that cannot ship shows: failing, or stopped by an error (a missing
 * credential); null while it ships or after a clean stop (a lock, the daemon's stop).
 */
export function shipProblem(s: ShipStatus): string | null {
  if (s.last_error === null || (s.state !== 'failing' && s.state !== 'stopped')) return null;
  return `${s.last_error.code}: ${s.last_error.message}`.slice(0, 300);
}

export class ShipLoop {
  #url: string | null;
  #client: pg.Client | null = null;
  #journals: Journals | null = null;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | null = null;
  #failures = 0;
  #status: ShipStatus;
  #stopped = false;
  /** run/ship.json holds #status (the first write always happens). */
  #written = false;

  constructor(private readonly o: ShipLoopOptions) {
    this.#url = o.url;
    const now = o.clock.now().toISOString();
    this.#status = { format: 'postern.ship-status/1', database: describeTarget(o.url), home_id: null, home_name: o.homeName, state: 'starting', remote: null, local: null, last_success_at: null, last_error: null, updated_at: now };
  }

  start(): void {
    this.#schedule(0);
  }

  status(): ShipStatus {
    return this.#status;
  }

  /** Stops shipping and forgets the connection string (a lock, or the daemon's stop). */
  async stop(reason: string): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#url = null;
    clearTimeout(this.#timer);
    const client = this.#client;
    this.#client = null;
    await client?.end().catch(() => undefined);
    await this.#running?.catch(() => undefined);
    this.#journals?.close();
    this.#journals = null;
    // A clean stop: what was failing is no longer being tried.
    await this.#write({ state: 'stopped', last_error: null }).catch(() => undefined);
    this.o.log(`journal shipping stopped (${reason})`);
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#running = this.#pass().finally(() => (this.#running = null));
    }, ms);
    this.#timer.unref();
  }

  async #pass(): Promise<void> {
    const url = this.#url;
    if (url === null) return;
    let next = IDLE_MS;
    try {
      this.#journals ??= openJournals(this.o.journalDir, { readonly: true });
      this.#client ??= await connectShip(url);
      const p = await shipPass(this.#client, { journals: this.#journals, checkpointsPath: this.o.checkpointsPath, homeName: this.o.homeName }, { batch: this.o.batch, maxBatches: MAX_BATCHES });
      if (this.#failures > 0) this.o.log(`journal shipping to ${this.#status.database} resumed`);
      this.#failures = 0;
      const behind = p.remote.activity < p.local.activity || p.remote.sessions < p.local.sessions;
      // Behind by more than a pass ships: at once; by a little: after a short wait for more.
      const capped = Math.max(p.shipped.activity, p.shipped.sessions) >= this.o.batch * MAX_BATCHES;
      if (behind) next = capped ? 0 : LINGER_MS;
      await this.#write(progress(p, behind, this.o.clock.now().toISOString()));
    } catch (e) {
      const err = isPosternError(e) ? e : shipError(url, 'ship to', e);
      const client = this.#client;
      this.#client = null;
      await client?.end().catch(() => undefined);
      if (this.#failures === 0) this.o.log(`journal shipping: ${err.message} (retrying)`);
      this.#failures++;
      next = this.o.retryMs * 2 ** Math.min(this.#failures - 1, 5);
      await this.#write({ state: 'failing', last_error: { code: err.code, message: err.message, at: this.o.clock.now().toISOString() } }).catch(() => undefined);
    }
    this.#schedule(next);
  }

  async #write(change: Partial<ShipStatus>): Promise<void> {
    if (this.#stopped && change.state !== 'stopped') return;
    // A pass that found nothing new (caught up, same heads, same error) changes nothing on disk:
    // an idle shipper does not rewrite and fsync run/ship.json every second beside the journal's fsyncs.
    if (this.#written && sameSubstance(this.#status, { ...this.#status, ...change })) return;
    const before = shipProblem(this.#status);
    this.#status = { ...this.#status, ...change, updated_at: this.o.clock.now().toISOString() };
    this.#written = true;
    const after = shipProblem(this.#status);
    if ((before === null) !== (after === null)) this.o.onProblem?.(after);
    await atomicWriteFile(join(this.o.runDir, SHIP_STATUS_FILE), `${JSON.stringify(this.#status)}\n`);
  }
}

/** The same status but for its times (when it was written, when a pass last succeeded). */
function sameSubstance(a: ShipStatus, b: ShipStatus): boolean {
  const { updated_at: _a, last_success_at: _sa, ...ra } = a;
  const { updated_at: _b, last_success_at: _sb, ...rb } = b;
  return isDeepStrictEqual(ra, rb);
}

function progress(p: ShipProgress, behind: boolean, at: string): Partial<ShipStatus> {
  return { home_id: p.home_id, state: behind ? 'shipping' : 'caught_up', remote: p.remote, local: p.local, last_success_at: at, last_error: null };
}
