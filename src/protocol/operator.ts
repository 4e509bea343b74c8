/**
 * The operator channel's wire messages (data only; the crypto lives in
 * src/daemon/operator/channel.ts, shared by both ends).
 *
 * Transport: newline-delimited JSON over the Unix socket `<runDir>/operator.sock`
 * (0600, in the 0700 run directory). Lines are UTF-8; a line longer than the
 * limit for its stage closes the connection. K is the vault's 32-byte
 * `operator-auth` key: the daemon holds it while unlocked, the CLI derives it
 * by opening the vault file with the passphrase. K never crosses the wire.
 *
 * Handshake (plain lines, at most PREAUTH_LINE_BYTES each, within the handshake timeout):
 *   S→C  {"t":"hello","protocol":"postern-operator","v":1,"nonce":Ns}
 *   C→S  {"t":"auth","v":1,"nonce":Nc,"proof":Pc}
 *   S→C  {"t":"welcome","v":1,"proof":Ps}      — only after Pc verified
 *     or {"t":"error","error":{"code","message"}} and close (locked, bad proof, …)
 * Ns, Nc: 32 random bytes each, base64url. With T = Ns ‖ Nc (raw bytes),
 *   Pc = HKDF-SHA256(ikm=K, salt=T, info="postern-operator/1 client-proof", 32)
 *   Ps = HKDF-SHA256(ikm=K, salt=T, info="postern-operator/1 server-proof", 32)
 *   S  = HKDF-SHA256(ikm=K, salt=T, info="postern-operator/1 session", 32)
 * Proofs are compared in constant time. The server proves itself only after the
 * client did, so an unauthenticated peer learns nothing; the client refuses to
 * send any command until Ps verifies, so an impostor on the socket gets nothing
 * either. A relay that forwards the handshake still never learns S.
 *
 * After the handshake every line, both directions, is a sealed frame:
 *   {"seq":n,"body":"<JSON text of the message>","mac":M}
 *   M = HMAC-SHA256(S, "postern-operator/1 frame" ‖ 0x00 ‖ dir ‖ u64be(seq) ‖ utf8(body))
 * dir is "c2s" or "s2c"; seq starts at 0 per direction and must be exactly the
 * next one, so injected, altered, replayed, reordered or dropped frames are all
 * refused. A frame that fails → sealed fatal error OPERATOR_AUTH_FAILED, close.
 *
 * Messages (the frame body):
 *   C→S  {"id":n,"op":OP,"params":{…}}            OP ∈ OperatorOps below
 *   S→C  {"kind":"response","id":n,"ok":true,"result":…}
 *        {"kind":"response","id":n|null,"ok":false,"error":{"code","message"}}
 *        {"kind":"event","event":{"type":"added","card"} | {"type":"resolved","id","decision"}}
 *        {"kind":"fatal","error":{…}}          then the server closes
 * An unknown op or bad params is an error response, never a crash. A locked
 * daemon answers no command (VAULT_LOCKED, close). `subscribe` answers with a
 * snapshot of the pending cards, then pushes queue events on the same channel.
 *
 * Confidentiality is not a goal: cards carry no secrets (credential names only).
 */
import { z } from 'zod';
import { ApprovalCardSchema, OperatorVerdictSchema, type ApprovalDecision } from './approvals.js';

export const OPERATOR_PROTOCOL = 'postern-operator';
export const OPERATOR_VERSION = 1;
export const OPERATOR_SOCKET_FILE = 'operator.sock';
/** Handshake lines are tiny; a peer that has not authenticated gets little memory. */
export const PREAUTH_LINE_BYTES = 4 * 1024;
/** Commands from the operator. */
export const MAX_REQUEST_LINE_BYTES = 1024 * 1024;
/** Answers from the daemon (a list of large cards may be big). */
export const MAX_RESPONSE_LINE_BYTES = 32 * 1024 * 1024;
export const NONCE_BYTES = 32;

const b64u32 = z.string().regex(/^[A-Za-z0-9_-]{43}$/, '32 bytes, base64url');

export const WireErrorSchema = z.strictObject({ code: z.string().max(64), message: z.string().max(1000) });
export type WireError = z.infer<typeof WireErrorSchema>;

export const HelloSchema = z.strictObject({
  t: z.literal('hello'),
  protocol: z.literal(OPERATOR_PROTOCOL),
  v: z.literal(OPERATOR_VERSION),
  nonce: b64u32,
});
export const AuthSchema = z.strictObject({ t: z.literal('auth'), v: z.literal(OPERATOR_VERSION), nonce: b64u32, proof: b64u32 });
export const WelcomeSchema = z.strictObject({ t: z.literal('welcome'), v: z.literal(OPERATOR_VERSION), proof: b64u32 });
export const PlainErrorSchema = z.strictObject({ t: z.literal('error'), error: WireErrorSchema });
export const ServerHandshakeSchema = z.discriminatedUnion('t', [HelloSchema, WelcomeSchema, PlainErrorSchema]);
export type Hello = z.infer<typeof HelloSchema>;
export type Auth = z.infer<typeof AuthSchema>;
export type Welcome = z.infer<typeof WelcomeSchema>;
export type PlainError = z.infer<typeof PlainErrorSchema>;

export const SealedFrameSchema = z.strictObject({
  seq: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  body: z.string(),
  mac: b64u32,
});
export type SealedFrame = z.infer<typeof SealedFrameSchema>;

export const ApprovalDecisionSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('approved'), scope: z.enum(['once', 'session']), by: z.string(), at: z.string() }),
  z.object({ kind: z.literal('denied'), reason: z.string().nullable(), by: z.string(), at: z.string() }),
  z.object({ kind: z.literal('timeout'), at: z.string() }),
  z.object({ kind: z.literal('voided'), reason: z.string(), at: z.string() }),
  z.object({ kind: z.literal('cancelled'), at: z.string() }),
]);
// The wire schema and the queue's type must stay the same shape.
const _decisionFits: (d: ApprovalDecision) => z.infer<typeof ApprovalDecisionSchema> = (d) => d;
void _decisionFits;

const empty = z.strictObject({});
/** Params and result of every operation; the op names are the keys. */
export const OperatorOps = {
  'approvals.list': { params: empty, result: z.array(ApprovalCardSchema) },
  'approvals.decide': {
    params: z.strictObject({ approval_id: z.string().min(1).max(200), verdict: OperatorVerdictSchema }),
    result: ApprovalDecisionSchema,
  },
  status: { params: empty, result: z.unknown() },
  lock: { params: empty, result: z.strictObject({ locked: z.literal(true) }) },
  subscribe: { params: empty, result: z.strictObject({ pending: z.array(ApprovalCardSchema) }) },
} as const;
export type OperatorOp = keyof typeof OperatorOps;
export type OperatorParams<O extends OperatorOp> = z.input<(typeof OperatorOps)[O]['params']>;
export type OperatorResult<O extends OperatorOp> = z.infer<(typeof OperatorOps)[O]['result']>;

export function isOperatorOp(op: string): op is OperatorOp {
  return Object.prototype.hasOwnProperty.call(OperatorOps, op);
}

export const RequestEnvelopeSchema = z.strictObject({
  id: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  op: z.string().max(64),
  params: z.unknown().optional(),
});
export type RequestEnvelope = z.infer<typeof RequestEnvelopeSchema>;

export const OperatorEventSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('added'), card: ApprovalCardSchema }),
  z.strictObject({ type: z.literal('resolved'), id: z.string(), decision: ApprovalDecisionSchema }),
]);
export type OperatorEvent = z.infer<typeof OperatorEventSchema>;

export const ServerMessageSchema = z.union([
  z.strictObject({ kind: z.literal('response'), id: z.number().int(), ok: z.literal(true), result: z.unknown() }),
  z.strictObject({ kind: z.literal('response'), id: z.number().int().nullable(), ok: z.literal(false), error: WireErrorSchema }),
  z.strictObject({ kind: z.literal('event'), event: OperatorEventSchema }),
  z.strictObject({ kind: z.literal('fatal'), error: WireErrorSchema }),
]);
export type ServerMessage = z.infer<typeof ServerMessageSchema>;
