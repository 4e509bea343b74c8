/**
 * One call as the operator channel shows it (ActivityView): from the trail
 * of a running call, or from a journaled CallView. Names and codes only —
 * never argument values or results.
 */
import type { ApprovalRecord, CallRecord, CallView } from '../../journal/index.js';
import type { ActivityDecision, ActivityStatus, ActivityView } from '../../protocol/operator/index.js';

function decisionOf(r: Pick<CallRecord, 'approval' | 'decision_path'>, errorCode: string | null): ActivityDecision | null {
  const a: ApprovalRecord | null = r.approval;
  if (errorCode === 'CALL_CANCELLED' && a?.outcome === 'voided') return 'cancelled';
  if (a === null) return r.decision_path.includes('execute') || r.decision_path.includes('journal:intent') ? 'auto' : null;
  switch (a.outcome) {
    case 'approved':
      if (a.mode === 'session') return r.decision_path.includes('approve:granted') ? 'granted' : 'approved_session';
      return a.mode === 'none' ? 'auto' : 'approved_once';
    case 'denied':
      return 'denied';
    case 'timeout':
      return 'timeout';
    case 'voided':
      return 'voided';
    case 'cancelled':
      return 'cancelled';
    case 'pending':
      return 'pending';
  }
}

interface LiveCall {
  readonly record: CallRecord;
  readonly status: ActivityStatus;
  readonly errorCode: string | null;
  readonly sideEffectStarted: boolean;
  readonly durationMs: number | null;
}

export function activityOfLive(c: LiveCall): ActivityView {
  const r = c.record;
  return {
    id: r.call_id,
    at: r.at,
    session_id: r.session_id,
    tool: r.tool,
    revision: r.revision_executed ?? r.revision_seen,
    status: c.status,
    decision: decisionOf(r, c.errorCode),
    error_code: c.errorCode,
    side_effect_started: c.sideEffectStarted,
    duration_ms: c.durationMs,
    idempotency_key: r.idempotency_key,
  };
}

export function activityOfJournal(v: CallView): ActivityView {
  const errorCode = v.rejection?.error_code ?? v.outcome?.error_code ?? null;
  return activityOfLive({
    record: v.call,
    status: v.status,
    errorCode,
    sideEffectStarted: v.outcome?.side_effect_started ?? v.call.side_effect_started,
    durationMs: v.outcome?.duration_ms ?? null,
  });
}
