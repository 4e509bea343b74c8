/**
 * A clean stop, in order: stop admitting (agent socket, HTTP listener), end
 * waiting approvals, let running actions finish (bounded by the grace
 * period), close the endpoints and the pools (a request still running past
 * the grace is cut: its call shows as outcome_unknown), write what outcomes
 * can still be written, the unattended run's report, then lock (journaled,
 * like every lock) before the journals close, so the last events are kept;
 * the final anchor write; the operator key zeroed; the daemon lock released.
 */
import type { ApprovalQueue } from '../../approvals/queue.js';
import type { HttpPool } from '../../executors/http/index.js';
import type { SshPool } from '../../executors/ssh/index.js';
import type { HomePaths } from '../../home/paths.js';
import { isPosternError } from '../../rules/errors.js';
import type { JournalEvent } from '../services/journal-event.js';
import type { PendingOutcomes } from '../pipeline/pending-outcomes.js';
import type { RunReporter } from './run-report.js';
import type { DaemonState } from '../services/state.js';

const SHUTDOWN_GRACE_MS = 10_000;

/** Something that takes connections and can stop taking them. */
export interface Endpoint {
  stopAccepting?(): void;
  close(): Promise<void> | void;
}

interface ShutdownParts {
  /** Stopped first (file watchers, timers). */
  readonly watchers: readonly (() => void)[];
  /** Stop admitting, in this order; closed after the calls drained. */
  readonly endpoints: readonly Endpoint[];
  readonly queue: ApprovalQueue;
  readonly inflight: ReadonlySet<Promise<unknown>>;
  readonly ssh: SshPool;
  readonly http: HttpPool | null;
  readonly pendingOutcomes: PendingOutcomes;
  /** The unattended run's reporter, or null when an operator approves. */
  readonly report: { readonly reporter: RunReporter; readonly paths: HomePaths } | null;
  readonly state: DaemonState;
  readonly journalEvent: JournalEvent;
  /** Marks the stop as begun (the lock cascade then leaves the anchor's final write to it). */
  readonly beginStop: () => void;
  readonly closeJournals: () => void;
  /** Last: zeroes keys, releases the daemon lock. */
  readonly release: () => Promise<void>;
  readonly log: (line: string) => void;
  readonly graceMs?: number;
}

export async function shutdown(p: ShutdownParts, reason: string): Promise<void> {
  const { log } = p;
  for (const stop of p.watchers) stop();
  for (const e of p.endpoints) e.stopAccepting?.();
  p.queue.voidAll(`daemon stopping: ${reason}`);
  const drained = Promise.allSettled([...p.inflight]);
  const grace = new Promise<void>((resolve) => setTimeout(resolve, p.graceMs ?? SHUTDOWN_GRACE_MS).unref());
  await Promise.race([drained, grace]);
  if (p.inflight.size > 0) log(`${p.inflight.size} calls still running at shutdown: they will show as outcome_unknown`);
  for (const e of p.endpoints) await e.close();
  await p.ssh.close();
  await p.http?.destroy();
  const unwritten = p.pendingOutcomes.flushNow();
  await p.pendingOutcomes.settled();
  if (unwritten > 0) log(`${unwritten} outcomes could not be journaled: kept for the next start, which journals them first`);
  // The unattended run's report, once every call has ended (or been cut): the file, then the log line.
  if (p.report !== null) {
    try {
      log(`run report written to ${await p.report.reporter.write(p.report.paths.home, p.report.reporter.report(p.state.snapshot(), true))}`);
    } catch (e) {
      log(`run report: ${isPosternError(e) ? e.message : 'could not be written'}`);
    }
  }
  p.beginStop();
  p.state.lock(reason);
  p.journalEvent(null, 'daemon_stopped', { reason });
  try {
    p.closeJournals();
  } catch (e) {
    log(`journal anchor: ${isPosternError(e) ? e.message : 'final write failed'}`);
  }
  await p.release();
}
