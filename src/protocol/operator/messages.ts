/**
 * The operator protocol's messages (version OPERATOR_VERSION): what a client
 * asks (ops, each with a params and a result schema), what the daemon answers,
 * and the events it pushes. The same messages travel on every transport
 * (./transport.ts): as sealed frame bodies on the socket (./wire.ts), as plain
 * JSON text on the in-process port.
 *
 *   C→D  {"id":n,"op":OP,"params":{…}}
 *   D→C  {"kind":"response","id":n,"ok":true,"result":…}
 *        {"kind":"response","id":n|null,"ok":false,"error":{"code","message"}}
 *        {"kind":"event","envelope":{"seq":n,"at":ISO,"event":{"type":…}}}
 *        {"kind":"fatal","error":{…}}          then the daemon closes
 *
 * Invariants: every type is inferred from its schema; an unknown op or bad
 * params is an error response, never a crash; ops in MUTATING_OPS are refused
 * on an observer connection with OBSERVER_READ_ONLY; event seq numbers
 * increase by one per event, daemon-wide, from 1; `subscribe` answers with a
 * snapshot as of `last_seq`, then sends the retained events after `since`
 * (when given) up to `last_seq`, then live events — so a client that keeps
 * the highest seq it saw can re-attach and miss nothing the ring still holds
 * (`gap` says when it did not).
 *
 * Catalog acceptance over the channel (decision): an operator connection was
 * authenticated by proof of the vault passphrase (socket) or is the private
 * port of the process that unlocked the vault with it (`postern up`), so
 * `catalog.accept {digest}` on it IS "accepting with the passphrase". The
 * digest binds the acceptance to the exact file whose diff the operator saw:
 * a file changed meanwhile is refused (CATALOG_PENDING). Observers cannot.
 */
import { z } from 'zod';
import { ApprovalCardSchema, ApprovalDecisionSchema, OperatorVerdictSchema } from '../approvals.js';
import { WireErrorSchema } from './wire.js';
import {
  ActivityDecisionSchema,
  ActivityStatusSchema,
  ActivityViewSchema,
  CatalogInUseSchema,
  CatalogPendingViewSchema,
  CredentialStateViewSchema,
  CallsProfileViewSchema,
  GrantViewSchema,
  SessionViewSchema,
  RunReportSchema,
  StatusViewSchema,
} from './views.js';

const id = z.string().min(1).max(200);
const iso = z.string().max(64);
const sha256 = z.string().regex(/^[0-9a-f]{64}$/, 'a SHA-256 in hex');

/** What `catalog.shadow` did: the catalog now in shadow (null: none) and the one it stopped (null: none ran, or the same one goes on). */
const ShadowChangeSchema = z.strictObject({ shadow: sha256.nullable(), stopped: sha256.nullable() });
export type ShadowChange = z.infer<typeof ShadowChangeSchema>;

/** A device paired with the approval page (never its secret). */
const DeviceViewSchema = z.strictObject({ id: z.string().max(32), name: z.string().max(64), paired_at: iso, revoked_at: iso.nullable() });
export type DeviceView = z.infer<typeof DeviceViewSchema>;
/** An open pairing: the one-time code, the page's URL to open, until when the code is good. */
export const PairingViewSchema = z.strictObject({ code: z.string().max(32), name: z.string().max(64), url: z.string().max(300), expires_at: iso, tls_sha256: z.string().max(64).nullable(), page_key: z.string().regex(/^[A-Z0-9]{4}-[A-Z0-9]{4}$/), run_fingerprint: z.string().max(16) });
/** The running approval page as the daemon reports it (the only source of its URL an operator is shown). */
const PageStatusViewSchema = z.strictObject({ url: z.string().max(300), tls_sha256: z.string().max(64).nullable(), run_fingerprint: z.string().max(16) });
export type PageStatusView = z.infer<typeof PageStatusViewSchema>;
export type PairingView = z.infer<typeof PairingViewSchema>;
/** What the browser opens to pair: the page with the one-time code in its fragment (never sent to a server). */
/** The pairing link: the code and the page key's short code, in the fragment (never sent); the page pairs only with a daemon holding that key. */
export const pairingLink = (p: Pick<PairingView, 'url' | 'code' | 'page_key'>): string => `${p.url}#pair=${p.code}&key=${p.page_key}`;
/** A paired device's name: printable ASCII words, at most 64 characters. */
export const DEVICE_NAME = /^[\x21-\x7e]+( [\x21-\x7e]+)*$/;

// ---- events ----------------------------------------------------------------

const OperatorEventSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('approval.added'), card: ApprovalCardSchema }),
  z.strictObject({ type: z.literal('approval.resolved'), id, decision: ApprovalDecisionSchema }),
  /** The card's contract changed while it waited (a new catalog was adopted): what is approved is no longer what it shows. */
  z.strictObject({ type: z.literal('approval.stale'), id, reason: z.string().max(1000) }),
  z.strictObject({ type: z.literal('activity'), record: ActivityViewSchema }),
  z.strictObject({ type: z.literal('session.opened'), session: SessionViewSchema }),
  z.strictObject({ type: z.literal('session.closed'), id, ended_at: iso }),
  z.strictObject({ type: z.literal('grant.added'), grant: GrantViewSchema }),
  z.strictObject({ type: z.literal('grant.revoked'), id, reason: z.string().max(1000) }),
  z.strictObject({ type: z.literal('daemon.locked'), reason: z.string().max(1000) }),
  z.strictObject({ type: z.literal('daemon.unlocked') }),
  /** Journal shipping started or stopped failing (daemon/lifecycle/ship-loop.ts): `problem` is one line, null once it ships again. */
  z.strictObject({ type: z.literal('ship.problem'), problem: z.string().max(300).nullable() }),
  z.strictObject({ type: z.literal('catalog.adopted'), catalog: CatalogInUseSchema }),
  z.strictObject({ type: z.literal('catalog.pending'), pending: CatalogPendingViewSchema.nullable() }),
]);
export type OperatorEvent = z.infer<typeof OperatorEventSchema>;

export const OperatorEventEnvelopeSchema = z.strictObject({
  seq: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  at: iso,
  event: OperatorEventSchema,
});
export type OperatorEventEnvelope = z.infer<typeof OperatorEventEnvelopeSchema>;

// ---- ops -------------------------------------------------------------------

const empty = z.strictObject({});
/** At most this many activity records per `activity.recent` (and in a snapshot). */
export const MAX_ACTIVITY = 500;

const ActivityFilterSchema = z.strictObject({
  limit: z.number().int().min(1).max(MAX_ACTIVITY).optional(),
  session_id: id.optional(),
  tool: z.string().min(1).max(200).optional(),
  status: ActivityStatusSchema.optional(),
  decision: ActivityDecisionSchema.optional(),
  /** Only calls that ended with an error code (any, or this one). */
  error_code: z.union([z.literal(true), z.string().min(1).max(64)]).optional(),
});
export type ActivityFilter = z.infer<typeof ActivityFilterSchema>;

const OperatorSnapshotSchema = z.strictObject({
  pending: z.array(ApprovalCardSchema),
  /** Live sessions, then recently ended ones. */
  sessions: z.array(SessionViewSchema),
  grants: z.array(GrantViewSchema),
  /** Recent activity, newest first. */
  recent: z.array(ActivityViewSchema),
  catalog: CatalogPendingViewSchema.nullable(),
  status: StatusViewSchema,
  /** The seq of the newest event the snapshot includes; replayed and live events follow it. */
  last_seq: z.number().int().min(0),
  /** True when `since` was older than the replay ring: some events between it and the snapshot are not replayed. */
  gap: z.boolean(),
});
export type OperatorSnapshot = z.infer<typeof OperatorSnapshotSchema>;

/** Params and result of every operation; the op names are the keys. */
export const OperatorOps = {
  'approvals.list': { params: empty, result: z.array(ApprovalCardSchema) },
  'approvals.decide': { params: z.strictObject({ approval_id: id, verdict: OperatorVerdictSchema }), result: ApprovalDecisionSchema },
  /** What became of the remembered resolved cards whose id starts with `prefix` (read-only; APPROVAL_NOT_FOUND's state). */
  'approvals.resolved': { params: z.strictObject({ prefix: id }), result: z.array(z.strictObject({ id, decision: ApprovalDecisionSchema })) },
  /** This daemon run's report so far (read-only). */
  'approvals.report': { params: empty, result: RunReportSchema },
  'sessions.list': {
    params: z.strictObject({ include_ended: z.boolean().optional(), limit: z.number().int().min(1).max(MAX_ACTIVITY).optional() }),
    result: z.array(SessionViewSchema),
  },
  'grants.list': { params: z.strictObject({ session_id: id.optional() }), result: z.array(GrantViewSchema) },
  'grants.revoke': { params: z.strictObject({ id }), result: z.strictObject({ revoked: GrantViewSchema }) },
  'activity.recent': { params: ActivityFilterSchema, result: z.array(ActivityViewSchema) },
  'catalog.pending': { params: empty, result: CatalogPendingViewSchema.nullable() },
  'catalog.accept': { params: z.strictObject({ digest: sha256 }), result: z.strictObject({ accepted: CatalogInUseSchema }) },
  'catalog.reject': { params: z.strictObject({ digest: sha256 }), result: z.strictObject({ rejected: sha256 }) },
  /** Runs the pending catalog with this digest in shadow (null: stops the shadow); `stopped` names the shadow this ended, if any. */
  'catalog.shadow': { params: z.strictObject({ digest: sha256.nullable() }), result: ShadowChangeSchema },
  status: { params: empty, result: StatusViewSchema },
  /** Each minted-token credential the daemon has used since the unlock (secret list). */
  'credentials.state': { params: empty, result: z.array(CredentialStateViewSchema) },
  /** Where the daemon's calls spent their time since it started, phase by phase (read-only). */
  'calls.profile': { params: empty, result: CallsProfileViewSchema },
  lock: { params: empty, result: z.strictObject({ locked: z.literal(true) }) },
  /** Signs a journal checkpoint now (`postern audit checkpoint`), so what was journaled so far can be proven; `signed` is false for a daemon without the signing key. */
  'audit.checkpoint': { params: empty, result: z.strictObject({ signed: z.boolean() }) },
  /** Opens a one-time pairing code for a new approval-page device called `name`. */
  'devices.pair': { params: z.strictObject({ name: z.string().min(1).max(64).regex(DEVICE_NAME, 'printable ASCII') }), result: PairingViewSchema },
  'devices.list': { params: empty, result: z.array(DeviceViewSchema) },
  /** The running approval page (null: none): its URL, certificate and run fingerprint. */
  'page.status': { params: empty, result: PageStatusViewSchema.nullable() },
  /** Revokes a paired device (id or unique prefix): refused by the page at its next request. */
  'devices.revoke': { params: z.strictObject({ id: z.string().min(1).max(32) }), result: z.strictObject({ revoked: DeviceViewSchema }) },
  subscribe: { params: z.strictObject({ since: z.number().int().min(0).optional() }), result: OperatorSnapshotSchema },
} as const;
export type OperatorOp = keyof typeof OperatorOps;
export type OperatorParams<O extends OperatorOp> = z.input<(typeof OperatorOps)[O]['params']>;
export type OperatorResult<O extends OperatorOp> = z.infer<(typeof OperatorOps)[O]['result']>;

/** Ops that decide or change something: refused on an observer connection (OBSERVER_READ_ONLY). */
export const MUTATING_OPS: ReadonlySet<OperatorOp> = new Set<OperatorOp>(['approvals.decide', 'grants.revoke', 'catalog.accept', 'catalog.reject', 'catalog.shadow', 'lock', 'audit.checkpoint', 'devices.pair', 'devices.revoke']);

export function isOperatorOp(op: string): op is OperatorOp {
  return Object.prototype.hasOwnProperty.call(OperatorOps, op);
}

// ---- envelopes -------------------------------------------------------------

export const RequestEnvelopeSchema = z.strictObject({
  id: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  op: z.string().max(64),
  params: z.unknown().optional(),
});

export const ServerMessageSchema = z.union([
  z.strictObject({ kind: z.literal('response'), id: z.number().int(), ok: z.literal(true), result: z.unknown() }),
  z.strictObject({ kind: z.literal('response'), id: z.number().int().nullable(), ok: z.literal(false), error: WireErrorSchema }),
  z.strictObject({ kind: z.literal('event'), envelope: OperatorEventEnvelopeSchema }),
  z.strictObject({ kind: z.literal('fatal'), error: WireErrorSchema }),
]);
export type ServerMessage = z.infer<typeof ServerMessageSchema>;
