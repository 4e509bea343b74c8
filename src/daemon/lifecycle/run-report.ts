/**
 * The run report of one daemon run (RunReport, src/protocol/operator/views.ts):
 * built from the calls' activity as they advance (the same views the operator
 * channel gets) and the pre-approval rules' budgets (approvals/unattended.ts).
 * Served by `postern approvals report`, and written when the daemon stops
 * cleanly to `run-report.json` in the home (0600, replaced atomically).
 *
 * Invariants: a call is counted once, by how it ended (a call still running
 * is `in_progress`); counts only, never an argument or a result; the report
 * of an attended run has no rule counts, only what operators approved.
 */
import { join } from 'node:path';
import type { Clock } from '../../clock/index.js';
import type { Catalog } from '../../contracts/index.js';
import { atomicWriteFile } from '../../home/atomic-write.js';
import type { ActivityView, RunReport } from '../../protocol/operator/index.js';
import type { RuleBudgets } from '../../approvals/unattended.js';

/** Where the report of the last run that stopped cleanly is written, in the home. */
const RUN_REPORT_FILE = 'run-report.json';

function runReportPath(home: string): string {
  return join(home, RUN_REPORT_FILE);
}

type Ended = 'succeeded' | 'failed' | 'rejected' | 'replayed' | 'outcome_unknown';

export class RunReporter {
  readonly #running = new Set<string>();
  readonly #ended: Record<Ended, number> = { succeeded: 0, failed: 0, rejected: 0, replayed: 0, outcome_unknown: 0 };
  readonly #byCode = new Map<string, number>();
  #withoutApproval = 0;
  #byOperator = 0;
  readonly #startedAt: string;

  constructor(
    private readonly clock: Clock,
    /** Present when the run is unattended. */
    private readonly budgets: RuleBudgets | undefined,
  ) {
    this.#startedAt = clock.now().toISOString();
  }

  /** Takes each activity view of a call as it advances. */
  observe(v: ActivityView): void {
    let ended: Ended;
    switch (v.status) {
      case 'in_progress':
        this.#running.add(v.id);
        return;
      case 'success':
        ended = 'succeeded';
        break;
      case 'error':
        ended = 'failed';
        break;
      case 'rejected':
        ended = 'rejected';
        break;
      case 'replayed':
        ended = 'replayed';
        break;
      case 'outcome_unknown':
        ended = 'outcome_unknown';
        break;
    }
    this.#running.delete(v.id);
    this.#ended[ended]++;
    if (v.error_code !== null) this.#byCode.set(v.error_code, (this.#byCode.get(v.error_code) ?? 0) + 1);
    if (v.decision === 'auto') this.#withoutApproval++;
    if (this.budgets === undefined && (v.decision === 'approved_once' || v.decision === 'approved_session' || v.decision === 'granted')) this.#byOperator++;
  }

  report(catalog: { readonly catalog: Catalog; readonly digest: string }, final: boolean): RunReport {
    const e = this.#ended;
    const sorted = (m: Map<string, number>): Record<string, number> => Object.fromEntries([...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    return {
      format: 'postern.run-report/1',
      mode: this.budgets === undefined ? 'attended' : 'unattended',
      started_at: this.#startedAt,
      generated_at: this.clock.now().toISOString(),
      final,
      catalog_digest: catalog.digest,
      calls: { total: e.succeeded + e.failed + e.rejected + e.replayed + e.outcome_unknown + this.#running.size, ...e, in_progress: this.#running.size },
      approved: { without_approval: this.#withoutApproval, by_rule: this.budgets?.approvedByRule() ?? {}, by_operator: this.#byOperator },
      denied: { unavailable: this.budgets?.unavailableByReason() ?? {}, by_code: sorted(this.#byCode) },
      budgets: this.budgets?.budgets(catalog.catalog) ?? [],
    };
  }

  /** Writes the report to `run-report.json` in the home (0600, atomic). */
  async write(home: string, report: RunReport): Promise<string> {
    const path = runReportPath(home);
    await atomicWriteFile(path, `${JSON.stringify(report, null, 2)}\n`);
    return path;
  }
}
