/**
 * The record of one call: everything the Activity journal keeps about it,
 * filled in stage by stage (raw and normalized arguments, revisions, key,
 * digests, approval, decision path, exposures), and where it stands (intent
 * recorded, outcome recorded, effect started). It writes nothing itself: the
 * journal port (journal-port.ts) writes the record, and respond.ts shapes
 * the agent's answer. It also tells the call profile and the operator channel
 * where the call is (neither can affect it). Stored values are already
 * redacted.
 */
import type { ApprovalRecord, CallRecord, ShadowRecord } from '../../journal/index.js';
import type { Services, SessionInfo } from './context.js';
import { clipLabel } from '../../rules/clip.js';
import type { ActivityStatus } from '../../protocol/operator/index.js';
import { activityOfLive } from '../services/activity-view.js';
import type { CallIdentity } from './identity.js';
import { ExposureLog } from './exposures.js';
import type { ExposurePlace } from '../../journal/index.js';
import type { Redactor } from '../../redaction/index.js';

export type JournalApproval = ApprovalRecord | null;

export class Trail {
  currentRevision: number | null = null;
  revisionSeen: number | null = null;
  rawArguments: unknown = null;
  #normalized: unknown = null;
  /** The revision the call was validated against: the one that runs if it runs. */
  #revisionPlanned: number | null = null;
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
    private readonly toolName: string,
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
  /**
   * The revision that runs (or ran): null until the call is committed to run
   * (`executes`, as its intent is journaled) and again if it is stopped before
   * the executor (`notExecuted`), so a call refused before anything ran never
   * says it executed a revision.
   */
  get revisionExecuted(): number | null {
    return this.#revisionExecuted;
  }
  /** The call runs under the revision it was validated against (its intent is being journaled, or it replays one that ran). */
  executes(): void {
    this.#revisionExecuted = this.#revisionPlanned;
  }
  /** The call was stopped after its intent and before the executor: nothing ran. */
  notExecuted(): void {
    this.#revisionExecuted = null;
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
    this.#revisionPlanned = revision;
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
  /** Whether the journal holds this call's intent (it then counts as executed, daemon/services/limits.ts). */
  get intentRecorded(): boolean {
    return this.#intent;
  }

  record(): CallRecord {
    return {
      call_id: this.callId,
      session_id: this.session.id,
      run_id: this.runId,
      agent_release: this.#identity?.agentRelease ?? this.session.agentRelease,
      toolset_planned: this.#identity?.toolset ?? null,
      tool: clipLabel(this.toolName, 128),
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
  announce(status: ActivityStatus, errorCode: string | null, durationMs: number | null, effect = this.#effect): void {
    try {
      this.svc.onActivity(activityOfLive({ record: this.record(), status, errorCode, sideEffectStarted: effect, durationMs }));
    } catch {
      // the journal is the record; the event is a courtesy
    }
  }

  /** The journal holds the intent (journal-port.ts): from now on the call has an outcome entry, or recovery makes it outcome_unknown. */
  noteIntent(): void {
    this.#intent = true;
  }
  /** The outcome was handed to the journal (written, or kept to be retried). */
  noteOutcome(): void {
    this.#outcome = true;
  }
  /** Whether the call's request may have left the machine. */
  get effect(): boolean {
    return this.#effect;
  }
  get outcomeRecorded(): boolean {
    return this.#outcome;
  }
  get tool(): string {
    return this.toolName;
  }
  get sessionId(): string {
    return this.session.id;
  }
  get idempotencyKey(): string | null {
    return this.#key;
  }
  get argsDigest(): string | null {
    return this.#argsDigest;
  }
  /** Every secret redacted so far, with where it was found. */
  exposures(): ReturnType<ExposureLog['list']> {
    return this.#exposures.list();
  }
}
