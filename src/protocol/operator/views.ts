/**
 * The views that cross the operator channel besides the approval card
 * (../approvals.ts): sessions, grants, call activity, a catalog waiting for
 * acceptance, and the daemon's status. Plain data validated with zod on
 * receipt; none carries a secret value or a raw argument value — activity
 * names the call, not what it was called with.
 *
 * Every string here may come from an agent or a catalog: a consumer shows it
 * only through ../../rules/terminal-text.ts (or ../display/card-view.ts for cards).
 */
import { z } from 'zod';

const iso = z.string().max(64);
const name = z.string().max(4096);

export const SessionViewSchema = z.strictObject({
  id: z.string().max(200),
  client_name: name.nullable(),
  client_version: name.nullable(),
  pid: z.number().int().nullable(),
  /** The MCP protocol version the client negotiated. */
  protocol_version: name.nullable(),
  started_at: iso,
  /** null while the session is live. */
  ended_at: iso.nullable(),
  end_reason: name.nullable(),
});
export type SessionView = z.infer<typeof SessionViewSchema>;

export const GrantViewSchema = z.strictObject({
  /** The id of the approval that gave the grant (unique; `grants.revoke` takes it). */
  id: z.string().max(200),
  session_id: z.string().max(200),
  tool: name,
  /** The tool revision approved; the grant holds only while the authority stays the same. */
  revision: z.number().int(),
  scope: z.literal('session'),
  authority_digest: z.string().max(128),
  granted_at: iso,
  by: name,
});
export type GrantView = z.infer<typeof GrantViewSchema>;

/**
 * How the call's approval stage ended (null: it stopped before approval).
 * `pending`: the client was answered APPROVAL_PENDING and its card stays open.
 */
export const ActivityDecisionSchema = z.enum(['auto', 'approved_once', 'approved_session', 'granted', 'denied', 'timeout', 'voided', 'cancelled', 'pending']);
export type ActivityDecision = z.infer<typeof ActivityDecisionSchema>;

export const ActivityStatusSchema = z.enum(['rejected', 'replayed', 'in_progress', 'success', 'error', 'outcome_unknown']);
export type ActivityStatus = z.infer<typeof ActivityStatusSchema>;

/**
 * One call record. The same call id is announced again as it advances
 * (in_progress → success / error / outcome_unknown): a consumer keeps the
 * newest per id.
 */
export const ActivityViewSchema = z.strictObject({
  id: z.string().max(200),
  /** When the call was admitted. */
  at: iso,
  session_id: z.string().max(200).nullable(),
  tool: name,
  /** The revision run (or the one the session saw when it stopped before that). */
  revision: z.number().int().nullable(),
  status: ActivityStatusSchema,
  decision: ActivityDecisionSchema.nullable(),
  error_code: z.string().max(64).nullable(),
  side_effect_started: z.boolean(),
  duration_ms: z.number().nullable(),
  idempotency_key: name.nullable(),
});
export type ActivityView = z.infer<typeof ActivityViewSchema>;

const ChangeClassSchema = z.enum(['additive', 'bounded_migration', 'breaking', 'behavior_change', 'authority_widening', 'removal', 'semantic_change', 'metadata']);

const CatalogChangeViewSchema = z.strictObject({
  tool: name,
  from: z.number().int().nullable(),
  to: z.number().int().nullable(),
  class: ChangeClassSchema,
  aspect: z.enum(['input', 'output', 'action', 'authority', 'tool', 'catalog']),
  reasons: z.array(name),
});
export type CatalogChangeView = z.infer<typeof CatalogChangeViewSchema>;

/** catalog.yaml differs from the accepted catalog: what accepting it would change. */
export const CatalogPendingViewSchema = z.strictObject({
  /** SHA-256 of the candidate file; catalog.accept / catalog.reject name it. */
  digest: z.string().regex(/^[0-9a-f]{64}$/),
  /** The accepted catalog it is compared with; null when nothing trusted precedes it (every tool is then new). */
  baseline_digest: z.string().nullable(),
  /** An alarm about the acceptance files (record missing, forged, rolled back), or null. */
  alarm: name.nullable(),
  tools: z.number().int(),
  changes: z.array(CatalogChangeViewSchema),
  /** True when any change widens authority; `widening_reasons` says what widened. */
  widening: z.boolean(),
  widening_reasons: z.array(name),
  /** The release gate: failures block acceptance. */
  gate: z.strictObject({ ok: z.boolean(), failures: z.array(name) }),
  /** A file that does not parse: the reason (then `changes` is empty and it cannot be accepted). */
  invalid: name.nullable(),
});
export type CatalogPendingView = z.infer<typeof CatalogPendingViewSchema>;

export const CatalogInUseSchema = z.strictObject({
  digest: z.string(),
  sequence: z.number().int(),
  accepted_at: iso.nullable(),
  tools: z.number().int(),
});
export type CatalogInUse = z.infer<typeof CatalogInUseSchema>;

/** The daemon's state of a credential exchanged for tokens (OAuth, GitHub App): times and the last error, never a value. */
export const CredentialStateViewSchema = z.strictObject({
  name: z.string().max(64),
  valid_until: iso.nullable(),
  last_refresh: iso.nullable(),
  last_error: z.strictObject({ code: z.string().max(64), message: z.string().max(1000), at: iso }).nullable(),
});
export type CredentialStateView = z.infer<typeof CredentialStateViewSchema>;

/** Where calls spent their time in the daemon since it started, phase by phase (daemon/services/call-profile.ts). */
export const CallsProfileViewSchema = z.strictObject({
  calls: z.number().int().min(0),
  /** Mean time of a call in the daemon, from the start of handling to its answer. */
  mean_ms: z.number().min(0),
  phases: z
    .array(
      z.strictObject({
        phase: z.string().max(40),
        /** Calls that went through this phase. */
        calls: z.number().int().min(0),
        /** Mean time of the phase, over the calls that went through it. */
        mean_ms: z.number().min(0),
        /** The phase's total time divided by all calls. */
        per_call_ms: z.number().min(0),
      }),
    )
    .max(48),
});
export type CallsProfileView = z.infer<typeof CallsProfileViewSchema>;

export const StatusViewSchema = z.strictObject({
  /** The operator protocol version the daemon speaks. */
  protocol_version: z.number().int(),
  daemon_version: z.string().max(64),
  pid: z.number().int(),
  locked: z.boolean(),
  lock_reason: name.nullable(),
  started_at: iso,
  catalog: CatalogInUseSchema,
  catalog_pending: z.boolean(),
  sessions: z.number().int(),
  pending: z.number().int(),
  grants: z.number().int(),
  approval_timeout_seconds: z.number(),
  /** The vault's Argon2id cost; `below_floor` marks a test-profile vault (vault/kdf-profile.ts), shown on the TUI's status line. */
  vault_kdf: z.strictObject({ opslimit: z.number().int().min(0), memlimit: z.number().int().min(0), below_floor: z.boolean() }),
  /** The role of the connection that asked. */
  role: z.enum(['operator', 'observer']),
  /** Journal shipping is failing or stopped (one line), or null; absent when shipping is off. */
  ship_problem: z.string().max(300).nullable().optional(),
  /** The approval page's run fingerprint (the page shows the same once the daemon proved itself); absent when no page runs. */
  page_run: z.string().max(16).optional(),
});
export type StatusView = z.infer<typeof StatusViewSchema>;

const count = z.number().int().min(0);

/**
 * The run report (`postern approvals report`, and at a clean stop the file
 * run-report.json in the home): what this daemon run did — calls by how they
 * ended, what approved them (no approval needed, or which pre-approval rule),
 * what was refused with which code, and each rule's budget. Counts only:
 * never an argument value or a result.
 */
export const RunReportSchema = z.strictObject({
  format: z.literal('postern.run-report/1'),
  mode: z.enum(['unattended', 'attended']),
  started_at: iso,
  generated_at: iso,
  /** True for the report written when the daemon stopped. */
  final: z.boolean(),
  catalog_digest: z.string().max(64),
  calls: z.strictObject({
    total: count,
    succeeded: count,
    failed: count,
    rejected: count,
    replayed: count,
    outcome_unknown: count,
    in_progress: count,
  }),
  approved: z.strictObject({
    /** Calls whose tool needs no approval. */
    without_approval: count,
    /** Calls a pre-approval rule approved, by rule name. */
    by_rule: z.record(name, count),
    /** Calls an operator approved (attended runs). */
    by_operator: count,
  }),
  denied: z.strictObject({
    /** APPROVAL_UNAVAILABLE by reason: widening, no_rule, outgrown, budget_used. */
    unavailable: z.record(name, count),
    /** Every call that ended with an error, by error code. */
    by_code: z.record(name, count),
  }),
  budgets: z.array(z.strictObject({ rule: name, tool: name, budget: count, used: count, left: count })),
});
export type RunReport = z.infer<typeof RunReportSchema>;
