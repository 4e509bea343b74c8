/**
 * What became of approvals that are no longer pending: the queue remembers the
 * last RESOLVED_KEPT resolved ids with their decision (never a value of the
 * call), so APPROVAL_NOT_FOUND says whether the card expired, was decided
 * (approved or denied), was withdrawn (voided, cancelled) or was never known
 * to this daemon run. One home for that error: the queue and the CLI both
 * build it here.
 */
import { PosternError } from '../rules/errors.js';
import type { ApprovalDecision } from '../protocol/approvals.js';

const RESOLVED_KEPT = 1024;

/** `details.state` of APPROVAL_NOT_FOUND. */
type NotFoundState = 'expired' | 'decided' | 'withdrawn' | 'unknown';

interface ResolvedApproval {
  readonly id: string;
  readonly decision: ApprovalDecision;
}

function notFoundState(d: ApprovalDecision | undefined): NotFoundState {
  if (d === undefined) return 'unknown';
  switch (d.kind) {
    case 'timeout':
      return 'expired';
    case 'approved':
    case 'denied':
      return 'decided';
    case 'voided':
    case 'cancelled':
      return 'withdrawn';
  }
}

function what(d: ApprovalDecision | undefined): string {
  if (d === undefined) return 'this daemon run knows no approval with that id (or it resolved long ago)';
  switch (d.kind) {
    case 'timeout':
      return `it expired at ${d.at}: nobody decided in time`;
    case 'approved':
      return `it was already approved (${d.scope}) at ${d.at}`;
    case 'denied':
      return `it was already denied at ${d.at}`;
    case 'voided':
      return `it was withdrawn at ${d.at} (voided)`;
    case 'cancelled':
      return `it was withdrawn at ${d.at} (the agent's client cancelled the call)`;
  }
}

/** APPROVAL_NOT_FOUND for `shownId` (already safe to print), saying what became of it. */
export function approvalNotFound(shownId: string, d: ApprovalDecision | undefined): PosternError {
  const state = notFoundState(d);
  return new PosternError('APPROVAL_NOT_FOUND', `no pending approval ${shownId}: ${what(d)}`, {
    details: d === undefined ? { state } : { state, decision: d.kind },
  });
}

/** The last RESOLVED_KEPT resolutions, oldest forgotten first. */
export class ResolvedApprovals {
  readonly #byId = new Map<string, ApprovalDecision>();

  remember(id: string, d: ApprovalDecision): void {
    this.#byId.delete(id);
    this.#byId.set(id, d);
    if (this.#byId.size > RESOLVED_KEPT) {
      const oldest = this.#byId.keys().next();
      if (oldest.done !== true) this.#byId.delete(oldest.value);
    }
  }

  get(id: string): ApprovalDecision | undefined {
    return this.#byId.get(id);
  }

  /** The remembered resolutions whose id starts with `prefix` (a non-empty prefix). */
  matching(prefix: string): ResolvedApproval[] {
    if (prefix === '') return [];
    return [...this.#byId].filter(([id]) => id.startsWith(prefix)).map(([id, decision]) => ({ id, decision }));
  }
}
