/**
 * The trail of one call: everything the Activity journal records about it,
 * filled in stage by stage, and the three ways a call ends in the journal —
 * rejected (no intent), intent + outcome, or replay. Invariants: the intent is
 * committed before `effectStarted` can ever be called; a call that recorded an
 * intent always gets an outcome entry (unless the daemon dies, which recovery
 * turns into outcome_unknown); stored values are already redacted. An
 * outcome the journal refuses for now is kept in `svc.pendingOutcomes` and
 * retried, and the agent is told it is not durable yet (`outcome_durable:
 * false`).
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { ResolvedAction } from '../../contracts/index.js';
import type { ApprovalRecord, CallRecord, ShadowRecord, IdempotencyRecord, OutcomeInput, TargetDetails } from '../../journal/index.js';
import { PosternError, isPosternError } from '../../protocol/errors.js';
import { errorResult } from './respond.js';
import type { Services, SessionInfo } from './context.js';
import type { ShapedResult } from './result.js';
import type { ExecResult } from './execute.js';
import { clipLabel } from '../../protocol/clip.js';
import type { ActivityStatus } from '../../protocol/operator/index.js';
import { activityOfLive } from '../activity-view.js';
import type { CallIdentity } from './identity.js';
import { ExposureLog } from './exposures.js';
import type { ExposurePlace } from '../../journal/index.js';
import type { Redactor } from '../../redaction/index.js';

export type JournalApproval = ApprovalRecord | null;

/** The agent's result, saying that its outcome is not journaled yet. */
function notDurable(r: CallToolResult): CallToolResult {
  return {
    ...r,
    content: [...r.content, { type: 'text', text: '(the outcome could not be journaled yet: the journal is busy; Postern keeps retrying, and a retry with the same idempotency_key returns this result without running again)' }],
    structuredContent: { ...(r.structuredContent ?? {}), outcome_durable: false },
  };
}

function targetDetails(a: ResolvedAction): TargetDetails {
  switch (a.kind) {
    case 'http':
      return { kind: 'http', method: a.method, url: a.url };
    case 'ssh':
      return { kind: 'ssh', host: a.host, port: a.port, user: a.user, argv: [...a.argv], host_key_fingerprint: a.hostKey.state === 'pinned' ? a.hostKey.fingerprint : 'untrusted' };
  }
}

export class Trail {
  currentRevision: number | null = null;
  revisionSeen: number | null = null;
  rawArguments: unknown = null;
  #normalized: unknown = null;
  #revisionExecuted: number | null = null;
  #adapter: string | null = null;
  #key: string | null = null;
  #argsDigest: string | null = null;
  #approval: JournalApproval = null;
  #identity: CallIdentity | null = null;
  #shadow: ShadowRecord | undefined;
  #path: string[] = [];
  #effect = false;
  #intent = false;
  readonly #exposures = new ExposureLog();
  #outcome = false;
  readonly #at: string;
  /** The phase running now (the last step or mark) and when it began, for the daemon's call profile. */
  #phase = 'start';
  #phaseAt: number;
  readonly #startedAt: number;

  constructor(
    private readonly svc: Services,
    private readonly session: SessionInfo,
    private readonly tool: string,
    private readonly handlerRevision: string,
    readonly callId: string,
  ) {
    this.#at = svc.clock.now().toISOString();
    this.#startedAt = this.#phaseAt = svc.clock.monotonicMs();
  }

  step(s: string): void {
    this.#path.push(s);
    this.mark(s);
  }
  /** A new phase for the call profile only (not a step of the decision path). */
  mark(phase: string): void {
    const profile = this.svc.profile;
    const now = this.svc.clock.monotonicMs();
    profile.add(this.#phase, now - this.#phaseAt);
    this.#phase = phase;
    this.#phaseAt = now;
  }
  /** The call is answered: its last phase and its whole time go to the profile. */
  ended(): void {
    this.mark('end');
    this.svc.profile.ended(this.svc.clock.monotonicMs() - this.#startedAt);
  }
  identity(i: CallIdentity): void {
    this.#identity = i;
  }
  shadow(s: ShadowRecord): void {
    this.#shadow = s;
  }
  /** The revision that runs (or ran), once the call was validated against it. */
  get revisionExecuted(): number | null {
    return this.#revisionExecuted;
  }
  raw(v: unknown): void {
    this.rawArguments = v;
  }
  /** `r`, recording in this call's journal entries what it redacts as found in `place`. */
  redactor(place: ExposurePlace, r: Redactor = this.svc.state.redactor()): Redactor {
    return this.#exposures.redactor(r, place);
  }
  key(k: string | undefined): void {
    this.#key = k ?? null;
  }
  normalized(v: unknown, revision: number, adapted: readonly string[]): void {
    this.#normalized = this.redactor('arguments').redactValue(v);
    this.#revisionExecuted = revision;
    this.#adapter = adapted.length === 0 ? null : adapted.join('; ');
  }
  digest(d: string): void {
    this.#argsDigest = d;
  }
  approval(a: JournalApproval): void {
    this.#approval = a;
  }
  effectStarted(): void {
    this.#effect = true;
  }
  /** The run id the call is recorded under: the one it declared, else its session's. */
  get runId(): string | null {
    return this.#identity?.runId ?? this.session.runId;
  }
  /** Whether the journal holds this call's intent (it then counts as executed, daemon/limits.ts). */
  get intentRecorded(): boolean {
    return this.#intent;
  }

  #record(): CallRecord {
    return {
      call_id: this.callId,
      session_id: this.session.id,
      run_id: this.runId,
      agent_release: this.#identity?.agentRelease ?? this.session.agentRelease,
      toolset_planned: this.#identity?.toolset ?? null,
      tool: clipLabel(this.tool, 128),
      revision_seen: this.revisionSeen,
      revision_executed: this.#revisionExecuted,
      handler_revision: this.handlerRevision,
      raw_arguments: this.rawArguments,
      normalized_arguments: this.#normalized,
      adapter_applied: this.#adapter,
      idempotency_key: this.#key,
      args_digest: this.#argsDigest,
      approval: this.#approval,
      decision_path: [...this.#path],
      side_effect_started: this.#effect,
      at: this.#at,
      ...(this.#shadow === undefined ? {} : { shadow: this.#shadow }),
      exposures: this.#exposures.list(),
    };
  }

  /** Tells the operator channel where the call stands; a failing listener never affects the call. */
  #announce(status: ActivityStatus, errorCode: string | null, durationMs: number | null, effect = this.#effect): void {
    try {
      this.svc.onActivity(activityOfLive({ record: this.#record(), status, errorCode, sideEffectStarted: effect, durationMs }));
    } catch {
      // the journal is the record; the event is a courtesy
    }
  }

  /** Commits the intent (and claims the key). Throws JOURNAL_UNAVAILABLE or CALL_IN_PROGRESS; nothing has left the machine. */
  async intent(action: ResolvedAction): Promise<void> {
    let r;
    try {
      r = await this.svc.commits.intent({ ...this.#record(), target: targetDetails(action) });
    } catch (e) {
      // Committed but not anchored: nothing runs, and the failure is journaled as its outcome (releasing the key).
      if (isPosternError(e) && e.details['intent_committed'] === true) this.#intent = true;
      throw e;
    }
    if (!r.claimed) throw new PosternError('CALL_IN_PROGRESS', 'another call holds this idempotency_key; check it with postern_call_status');
    this.#intent = true;
    this.#announce('in_progress', null, null);
  }

  /**
   * An executor failure: journal the outcome and return the error to throw.
   * Once the request may have been written, a failure that came before any
   * answer (a timeout, a reset or closed connection, a cancellation) leaves the
   * effect unknown: it is journaled as outcome_unknown, so a retry with the key
   * is told so instead of being replayed a failure that may have succeeded.
   * A failure that proves nothing was delivered (the TLS handshake failed) or
   * that came with an answer (a response too large) stays an error.
   */
  async failedExecution(e: unknown, ms: number): Promise<PosternError> {
    const err = isPosternError(e) ? e : new PosternError('TARGET_ERROR', 'the action failed', { sideEffectStarted: this.#effect, cause: e });
    const started = err.sideEffectStarted || this.#effect;
    const final = started === err.sideEffectStarted ? err : new PosternError(err.code, err.message, { details: err.details, sideEffectStarted: started });
    const result = this.#errorResult(final);
    const unknown = started && (final.code === 'TARGET_TIMEOUT' || final.code === 'CALL_CANCELLED' || (final.code === 'TARGET_ERROR' && final.details['phase'] !== 'tls'));
    // A refused SSH host key: the journal keeps the offered fingerprint beside the pinned one of the intent.
    const offered = final.details['offered_fingerprint'];
    const durable = await this.#writeOutcome({
      status: unknown ? 'outcome_unknown' : 'error',
      side_effect_started: started,
      error_code: final.code,
      duration_ms: Math.round(ms),
      result,
      ...(typeof offered === 'string' ? { target_extra: { offered_fingerprint: offered, pinned_fingerprint: final.details['pinned_fingerprint'] ?? null } } : {}),
    });
    if (durable) return final;
    return new PosternError(final.code, final.message, { details: { ...final.details, outcome_durable: false }, sideEffectStarted: final.sideEffectStarted, cause: final });
  }

  /** Journals a finished call's outcome; returns the result for the agent (marked when the outcome is not durable yet). */
  async outcome(shaped: ShapedResult, ms: number, exec: ExecResult): Promise<CallToolResult> {
    const target =
      exec.kind === 'http'
        ? { response_status: exec.result.status, connected_ip: exec.result.connected_ip }
        : { exit_code: exec.result.exit_code };
    const durable = await this.#writeOutcome({
      status: shaped.status,
      side_effect_started: true,
      ...(shaped.errorCode === undefined ? {} : { error_code: shaped.errorCode }),
      ...target,
      duration_ms: Math.round(ms),
      result: shaped.result,
      result_digest: shaped.digest,
      ...(shaped.outputAdapted === undefined ? {} : { output_adapter: shaped.outputAdapted.join('; ') }),
    });
    return durable ? shaped.result : notDurable(shaped.result);
  }

  /**
   * True when the outcome is journaled. When the journal refuses it for now
   * (JOURNAL_UNAVAILABLE: locked, busy…) it is kept and retried in the
   * background; until then the intent stays open, so a restart makes it
   * outcome_unknown — never a re-run.
   */
  async #writeOutcome(input: OutcomeInput): Promise<boolean> {
    const exposures = this.#exposures.list();
    const o: OutcomeInput = exposures.length === 0 ? input : { ...input, exposures };
    this.#outcome = true;
    this.#announce(o.status, o.error_code ?? null, o.duration_ms, o.side_effect_started);
    try {
      this.mark('journal:outcome');
      await this.svc.commits.outcome(this.callId, o);
      this.mark('respond');
      return true;
    } catch (e) {
      // Committed but its fsync failed: it is in the journal (a retry would find it); only its durability is not known.
      if (isPosternError(e, 'JOURNAL_UNAVAILABLE') && e.details['outcome_committed'] !== true) {
        this.svc.pendingOutcomes.add({
          callId: this.callId,
          tool: this.tool.slice(0, 128),
          key: this.#key,
          argsDigest: this.#argsDigest,
          sessionId: this.session.id,
          outcome: o,
          finishedAt: this.svc.clock.now().toISOString(),
        });
      }
      return false;
    }
  }

  /** Same key, same arguments, completed: the stored result, no new effect (`durable` false: answered from a pending outcome). */
  replay(holder: IdempotencyRecord, durable = true): CallToolResult {
    this.step('idempotency:replay');
    try {
      this.svc.journals.activity.recordReplay({ ...this.#record(), replay_of: holder.call_id });
    } catch {
      // A replay has no effect; failing to journal it does not change what happened.
    }
    this.#announce('replayed', null, null);
    const stored = holder.result as CallToolResult | undefined;
    const sc = (stored?.structuredContent ?? {}) as Record<string, unknown>;
    const replayed: CallToolResult = {
      ...(stored ?? { content: [] }),
      content: [...(stored?.content ?? []), { type: 'text', text: `(replayed result of call ${holder.call_id}; nothing was run again)` }],
      structuredContent: { ...sc, replayed: true, replay_of: holder.call_id },
    };
    return durable ? replayed : notDurable(replayed);
  }

  #errorResult(err: PosternError): CallToolResult {
    let redact: (s: string) => string = (s) => s;
    try {
      const r = this.redactor('error');
      redact = (s) => r.redactText(s);
    } catch {
      // locked: nothing to redact with, and nothing secret was handled
    }
    const safe = new PosternError(err.code, redact(err.message), { details: err.details, sideEffectStarted: err.sideEffectStarted });
    return errorResult(safe, { tool: clipLabel(this.tool, 128), current_revision: this.currentRevision, call_id: this.callId });
  }

  /** Any failure: journal it where it belongs and answer with a typed error. */
  async fail(e: unknown): Promise<CallToolResult> {
    const err = isPosternError(e) ? e : new PosternError('INTERNAL', 'an unexpected internal failure; nothing further was run', { sideEffectStarted: this.#effect, cause: e });
    const result = this.#errorResult(err);
    if (this.#intent) {
      if (!this.#outcome) await this.#writeOutcome({ status: 'error', side_effect_started: err.sideEffectStarted || this.#effect, error_code: err.code, duration_ms: 0, result });
    } else {
      try {
        this.svc.journals.activity.recordRejected({ ...this.#record(), error_code: err.code, message: result.content[0]?.type === 'text' ? result.content[0].text : err.code });
      } catch {
        // Nothing ran; the agent still gets the error.
      }
      this.#announce('rejected', err.code, null);
    }
    return result;
  }
}
