/**
 * What an operator sees and says about a pending call. These shapes cross a
 * process boundary (daemon → TUI / `postern approvals`), so they are plain
 * data validated with zod on receipt, and they never carry secret values —
 * only credential names.
 */
import { z } from 'zod';
import { LimitUsageSchema } from './limit-usage.js';

const TargetViewSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('http'),
    method: z.string(),
    origin: z.string(),
    host: z.string(),
    port: z.number(),
    path: z.string(),
    query: z.array(z.tuple([z.string(), z.string()])),
    headers: z.array(z.tuple([z.string(), z.string()])),
    body: z.string().nullable(),
  }),
  z.object({
    kind: z.literal('ssh'),
    host: z.string(),
    port: z.number(),
    user: z.string(),
    argv: z.array(z.string()),
    command: z.string(),
    /** The pinned host-key fingerprint the connection must present (calls to unpinned hosts never reach the queue). */
    host_key: z.string().nullable(),
  }),
]);
export type TargetView = z.infer<typeof TargetViewSchema>;

/** The MCP annotations the tool advertises (hints for clients; Postern's own effect class is what counts). */
const ToolAnnotationsSchema = z.object({
  readOnlyHint: z.boolean(),
  destructiveHint: z.boolean(),
  idempotentHint: z.boolean(),
  openWorldHint: z.boolean(),
});

export const ApprovalCardSchema = z.object({
  id: z.string(),
  session: z.object({
    id: z.string(),
    client_name: z.string().nullable(),
    client_version: z.string().nullable(),
    pid: z.number().nullable(),
  }),
  tool: z.string(),
  /** Postern's effect class for the tool (read, write, destructive…), from the accepted catalog. */
  effect: z.string(),
  /** What the tool advertises to the agent; shown beside `effect`, never lowering the risk shown. */
  annotations: ToolAnnotationsSchema.nullable().default(null),
  /** `required`: an approval given on the approval page needs a WebAuthn assertion (catalog `approval.presence`); absent: none. */
  presence: z.enum(['required', 'none']).optional(),
  revision: z.number(),
  revision_seen: z.number().nullable(),
  /** `session` when the operator may approve for the rest of the session; `per-call` otherwise. */
  scope_allowed: z.enum(['session', 'per-call']),
  reasons: z.array(z.string()),
  /** Non-empty when the call needs approval because its authority widened. */
  widening: z.array(z.string()),
  target: TargetViewSchema,
  credential: z.string().nullable(),
  raw_arguments: z.unknown(),
  normalized_arguments: z.unknown(),
  adapter: z.string().nullable(),
  idempotency_key: z.string().nullable(),
  call_digest: z.string(),
  /** How much of the tool's limits was used when the card opened (empty: the tool has none). */
  limits: z.array(LimitUsageSchema).default([]),
  requested_at: z.string(),
  expires_at: z.string(),
});
export type ApprovalCard = z.infer<typeof ApprovalCardSchema>;

/** The WebAuthn assertion an approval on the page carried (src/daemon/approval-page/presence.ts): the credential and its flags. */
const PresenceProofSchema = z.object({ credential: z.string(), user_present: z.boolean(), user_verified: z.boolean() });
export type PresenceProof = z.infer<typeof PresenceProofSchema>;

/** How a card was resolved: the one definition, used by the queue and the wire. */
export const ApprovalDecisionSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('approved'), scope: z.enum(['once', 'session']), by: z.string(), at: z.string(), presence: PresenceProofSchema.optional() }),
  z.object({ kind: z.literal('denied'), reason: z.string().nullable(), by: z.string(), at: z.string() }),
  z.object({ kind: z.literal('timeout'), at: z.string() }),
  z.object({ kind: z.literal('voided'), reason: z.string(), at: z.string() }),
  z.object({ kind: z.literal('cancelled'), at: z.string() }),
]);
export type ApprovalDecision = z.infer<typeof ApprovalDecisionSchema>;

/**
 * Which presentation of the card the operator had on screen in full
 * (src/protocol/operator/presentation.ts): its SHA-256, hex. A card too large
 * for one view is approved only with the digest of its own presentation.
 */
const SeenSchema = z.object({ presentation: z.string().regex(/^[0-9a-f]{64}$/) });
export type Seen = z.infer<typeof SeenSchema>;

export const OperatorVerdictSchema = z.discriminatedUnion('verdict', [
  z.object({ verdict: z.literal('approve'), scope: z.enum(['once', 'session']), call_digest: z.string().optional(), seen: SeenSchema.optional() }),
  z.object({ verdict: z.literal('deny'), reason: z.string().max(500).nullable() }),
]);
export type OperatorVerdict = z.infer<typeof OperatorVerdictSchema>;
