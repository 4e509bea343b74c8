/**
 * The journals' public data shapes: what the pipeline hands in, what the audit
 * reads back. Data only — no I/O here.
 *
 * Contract with callers: every value given to a journal is stored exactly as
 * given. The journal does not redact; the caller replaces any secret value with
 * a redaction marker *before* it reaches these types (DESIGN §8). Values must
 * be plain JSON data (objects, arrays, strings, finite numbers, booleans,
 * null); anything else is refused with INTERNAL.
 */

/** An approval as the pipeline decided it; `null` on a CallRecord when none was asked. */
export interface ApprovalRecord {
  readonly mode: 'none' | 'session' | 'per-call';
  /** The approval or session-grant id, when there is one. */
  readonly id: string | null;
  /** Who decided: an operator label, or e.g. 'policy' for mode 'none'. */
  readonly decided_by: string | null;
  readonly decided_at: string | null;
  /** `pending`: the call was answered APPROVAL_PENDING and its card stayed open; `cancelled`: the client gave up. */
  readonly outcome: 'approved' | 'denied' | 'timeout' | 'voided' | 'pending' | 'cancelled';
  /** The pre-approval rule that approved the call (an unattended daemon); absent otherwise. */
  readonly rule?: string;
  /** The WebAuthn assertion an approval on the approval page carried (credential id, user present / verified); absent otherwise. */
  readonly presence?: { readonly credential: string; readonly user_present: boolean; readonly user_verified: boolean };
}

/** Where a vault secret was found (and redacted) in a call: what the agent sent, what it was answered. */
export type ExposurePlace = 'arguments' | 'result' | 'error';

/**
 * A real redaction, recorded with the call (never a marker that was already
 * in the text): the credential, the keyed fingerprint of the value found
 * (src/redaction/fingerprint.ts; `null` for a secret that has none) and where.
 */
export interface Exposure {
  readonly credential: string;
  readonly fingerprint: string | null;
  readonly in: readonly ExposurePlace[];
}

/** Everything DESIGN §8 lists for one call, known before execution. */
export interface CallRecord {
  readonly call_id: string;
  readonly session_id: string | null;
  readonly run_id: string | null;
  /** The agent release the call declared (or its session did); absent in entries written before it was recorded. */
  readonly agent_release?: string | null;
  /** The toolset version the call was planned against, as declared (or last listed by its session). */
  readonly toolset_planned?: string | null;
  readonly tool: string;
  readonly revision_seen: number | null;
  readonly revision_executed: number | null;
  /** Build version + catalog digest. */
  readonly handler_revision: string;
  /** Exactly as received from the agent (after redaction of secret values). */
  readonly raw_arguments: unknown;
  /** `null` when the call stopped before normalization. */
  readonly normalized_arguments: unknown;
  readonly adapter_applied: string | null;
  readonly idempotency_key: string | null;
  /** Digest of the canonical normalized arguments; required when a key is given. */
  readonly args_digest: string | null;
  readonly approval: ApprovalRecord | null;
  /** e.g. ['admit', 'resolve:current', 'validate', 'approve:per-call']. */
  readonly decision_path: readonly string[];
  readonly side_effect_started: boolean;
  /** ISO time the call was admitted. */
  readonly at: string;
  /** Secrets redacted so far (the arguments, a refusal's message); absent when none. */
  readonly exposures?: readonly Exposure[];
  /** How the catalog running in shadow would have planned this call; absent when none ran. */
  readonly shadow?: ShadowRecord;
}

export const ShadowVerdicts = ['same', 'would_fail', 'other_request', 'new_approval'] as const;
export type ShadowVerdict = (typeof ShadowVerdicts)[number];

/** The candidate catalog's plan of a call compared with the live one (no effect: nothing was sent for it). */
export interface ShadowRecord {
  /** SHA-256 of the candidate catalog file. */
  readonly digest: string;
  readonly verdict: ShadowVerdict;
  /** For `would_fail`: the error code the candidate would have answered. */
  readonly error_code?: string;
}

export type TargetDetails =
  | { readonly kind: 'http'; readonly method: string; readonly url: string; readonly connected_ip?: string }
  | {
      readonly kind: 'ssh';
      readonly host: string;
      readonly port: number;
      readonly user: string;
      readonly argv: readonly string[];
      readonly host_key_fingerprint: string;
      readonly offered_fingerprint?: string;
    };

export interface OutcomeInput {
  /** 'outcome_unknown' (extension): the effect may or may not have happened, e.g. a timeout after sending. */
  readonly status: 'success' | 'error' | 'outcome_unknown';
  readonly side_effect_started: boolean;
  readonly error_code?: string;
  readonly response_status?: number;
  readonly exit_code?: number | null;
  readonly connected_ip?: string;
  readonly duration_ms: number;
  /** The already-redacted result, replayed to a retry with the same key. */
  readonly result?: unknown;
  readonly result_digest?: string;
  readonly target_extra?: Record<string, unknown>;
  /** Output adapter steps that gave the result an older revision's shape. */
  readonly output_adapter?: string;
  /** Secrets redacted from the call (its result and errors included); absent when none. */
  readonly exposures?: readonly Exposure[];
}

/** What an outcome did to the call's idempotency claim; `null` for calls without a key. */
export type ClaimEffect = 'completed' | 'released' | 'outcome_unknown' | null;

export interface CallOutcome {
  readonly at: string;
  readonly status: 'success' | 'error' | 'outcome_unknown';
  /** `null` when unknown (a call recovered after a crash). */
  readonly side_effect_started: boolean | null;
  readonly error_code: string | null;
  readonly response_status: number | null;
  readonly exit_code: number | null;
  readonly connected_ip: string | null;
  readonly duration_ms: number | null;
  readonly result?: unknown;
  readonly result_digest: string | null;
  readonly target_extra: Record<string, unknown> | null;
  /** Output adapter steps applied to the result; absent in entries written before they were recorded. */
  readonly output_adapter?: string | null;
  readonly claim: ClaimEffect;
  /** True when written by crash recovery at open, not by the pipeline. */
  readonly recovered: boolean;
  readonly exposures?: readonly Exposure[];
}

export type CallStatus = 'rejected' | 'replayed' | 'in_progress' | 'success' | 'error' | 'outcome_unknown';

/** One call as the audit sees it: the first entry (intent, rejection or replay) merged with its outcome. */
export interface CallView {
  /** Sequence number of the call's first entry. */
  readonly seq: number;
  /** Journal time of the first entry. */
  readonly journaled_at: string;
  readonly status: CallStatus;
  readonly call: CallRecord;
  /** The intent's target, with `connected_ip` filled from the outcome; `null` when nothing was to run. */
  readonly target: TargetDetails | null;
  readonly rejection: { readonly error_code: string; readonly message: string } | null;
  /** For a replay: the call whose stored result was returned. */
  readonly replay_of: string | null;
  readonly outcome: CallOutcome | null;
}

type ClaimState = 'in_progress' | 'completed' | 'outcome_unknown';

export interface IdempotencyRecord {
  readonly call_id: string;
  readonly tool: string;
  readonly key: string;
  readonly args_digest: string;
  readonly state: ClaimState;
  readonly session_id: string | null;
  /** For a completed claim: how the call ended, and the stored result. */
  readonly status?: 'success' | 'error';
  /** For a completed claim: when its outcome was journaled (ISO 8601). */
  readonly completed_at?: string;
  readonly error_code?: string | null;
  readonly result?: unknown;
}

export interface CallFilter {
  readonly tool?: string;
  readonly session_id?: string;
  readonly idempotency_key?: string;
  /** Inclusive lower bound on journal time (ISO). */
  readonly since?: string;
  /** Exclusive upper bound on journal time (ISO). */
  readonly until?: string;
  /** Matches a rejection's code or an outcome's code. */
  readonly error_code?: string;
  /** Default 100, at most 10,000. Newest first. */
  readonly limit?: number;
}

export const SESSION_EVENT_TYPES = [
  'tools_listed',
  'list_changed_sent',
  'grant_given',
  'grant_revoked',
  'lock',
  'unlock',
  'catalog_accepted',
  'catalog_refused',
  /** An operator rejected a pending catalog.yaml over the operator channel; the file was set aside. */
  'catalog_rejected',
  /** An operator started (digest) or stopped (null) running a pending catalog in shadow. */
  'catalog_shadow',
  'vault_changed',
  'session_closed',
  'daemon_started',
  'daemon_stopped',
  /** The first entry of a journal started by `postern anchor new-journal` (or a new home). */
  'journal_started',
  /** The operator accepted a vault generation older than the anchor's (`postern anchor accept-vault`). */
  'vault_generation_accepted',
  /** Entries past the anchor found at start after a crash, and adopted. */
  'anchor_tail_adopted',
  /** The operator removed old entries (`postern audit prune`): the cut-off, and where each chain now starts. */
  'journal_pruned',
  /** The HTTP listener started (its URL), or was enabled in config.yaml and refused (why). */
  'http_listener',
  /** A session's `tools/call` became an MCP task (its call is journaled like any other). */
  'task_started',
  /** An MCP task ended: completed, failed or cancelled (by tasks/cancel, or with its session). */
  'task_ended',
  /** A started session declared its run id or agent release (a `_meta` after its first request); the session row reads it. */
  'session_identified',
  /** A call answered APPROVAL_PENDING whose card ended with no call taking its decision: approved, denied, timed out, voided or cancelled. */
  'approval_ended',
  /** The approval page started (its URL), or was authorized and refused (why). */
  'approval_page',
  /** A device redeemed a pairing code on the approval page (its id and name). */
  'device_paired',
  /** The operator revoked a paired device (its id). */
  'device_revoked',
  /** The operator put back an older backup of the journal (`postern anchor restore-journal`): its head, the gap up to what the anchor said, the keys known to be claimed in it (journal/gap.ts). */
  'journal_restored',
  /** The operator closed the gap of a restore after checking the targets (`postern anchor close-gap`): keys refused because of it run again. */
  'journal_gap_closed',
  /** The operator released one key the gap of a restore held (`postern anchor release-key`). */
  'journal_key_released',
  /** A passkey was registered from the approval page for a paired device (its id, the credential id). */
  'passkey_added',
  /** The SSH gateway started (its port), or was enabled in config.yaml and refused (why). */
  'ssh_gateway',
] as const;
export type SessionEventType = (typeof SESSION_EVENT_TYPES)[number];

export interface SessionStart {
  readonly session_id: string;
  readonly transport: string;
  readonly client_name: string | null;
  readonly client_version: string | null;
  readonly protocol_version: string | null;
  readonly peer_pid: number | null;
  readonly peer_uid: number | null;
  /** The peer's OS user name at connect, on the shared agent socket only (docs/agent-users.md). */
  readonly peer_user?: string | null;
  readonly run_id: string | null;
  readonly agent_release: string | null;
}

export interface SessionRow extends SessionStart {
  readonly seq: number;
  readonly started_at: string;
  readonly ended_at: string | null;
  readonly end_reason: string | null;
}

export interface SessionEventRow {
  readonly seq: number;
  readonly at: string;
  readonly session_id: string | null;
  /** 'session_started' is the entry written by startSession. */
  readonly type: SessionEventType | 'session_started';
  readonly data: Record<string, unknown>;
}

/** A chain's last entry: seq 0 with the genesis hash (64 zeros) when it is empty. */
export interface ChainHead {
  readonly seq: number;
  readonly hash: string;
}

/** Where a chain starts: seq 0 and the genesis hash, or the head a prune cut at (src/journal/prune.ts). */
export interface ChainBase {
  readonly seq: number;
  readonly hash: string;
  /** Activity only: SHA-256 of the idempotency claims kept for removed entries (null when none were removed). */
  readonly claims_digest: string | null;
}

export type ChainReport =
  | {
      readonly ok: true;
      readonly entries: number;
      readonly head: { readonly seq: number; readonly hash: string } | null;
      /** Set when the chain was pruned: the (seq, hash) it starts from. */
      readonly base?: { readonly seq: number; readonly hash: string };
    }
  | {
      readonly ok: false;
      readonly entries_checked: number;
      /** The first sequence number at which the journal is not what was written. */
      readonly first_bad_seq: number;
      readonly reason: ChainBreak;
      /** For `unreadable`: the last sequence number of the unreadable range (null when nothing after it could be read). */
      readonly unreadable_to?: number | null;
    };

export type ChainBreak =
  /** The file's pages holding these entries cannot be read (SQLite: the database disk image is malformed). */
  | 'unreadable'
  /** The row's content does not hash to its stored hash: it was edited. */
  | 'hash_mismatch'
  /** The row does not link to the row before it: a row was replaced or inserted. */
  | 'prev_hash_mismatch'
  /** A sequence number is missing: a row was deleted. */
  | 'missing_entry'
  /** Activity only: the idempotency claims disagree with the chained history. */
  | 'claim_mismatch';
