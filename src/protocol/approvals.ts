/**
 * What an operator sees and says about a pending call. These shapes cross a
 * process boundary (daemon → TUI / `postern approvals`), so they are plain
 * data validated with zod on receipt, and they never carry secret values —
 * only credential names.
 */
import { z } from 'zod';

export const TargetViewSchema = z.discriminatedUnion('kind', [
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
    host_key: z.string().nullable(),
  }),
]);
export type TargetView = z.infer<typeof TargetViewSchema>;

export const ApprovalCardSchema = z.object({
  id: z.string(),
  session: z.object({
    id: z.string(),
    client_name: z.string().nullable(),
    client_version: z.string().nullable(),
    pid: z.number().nullable(),
  }),
  tool: z.string(),
  effect: z.string(),
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
  requested_at: z.string(),
  expires_at: z.string(),
});
export type ApprovalCard = z.infer<typeof ApprovalCardSchema>;

export type ApprovalDecision =
  | { readonly kind: 'approved'; readonly scope: 'once' | 'session'; readonly by: string; readonly at: string }
  | { readonly kind: 'denied'; readonly reason: string | null; readonly by: string; readonly at: string }
  | { readonly kind: 'timeout'; readonly at: string }
  | { readonly kind: 'voided'; readonly reason: string; readonly at: string }
  | { readonly kind: 'cancelled'; readonly at: string };

export const OperatorVerdictSchema = z.discriminatedUnion('verdict', [
  z.object({ verdict: z.literal('approve'), scope: z.enum(['once', 'session']), call_digest: z.string().optional() }),
  z.object({ verdict: z.literal('deny'), reason: z.string().max(500).nullable() }),
]);
export type OperatorVerdict = z.infer<typeof OperatorVerdictSchema>;
