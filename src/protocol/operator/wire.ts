/**
 * The operator channel on the Unix socket: handshake lines and sealed frames
 * (data only; the crypto is ./crypto.ts, shared by both ends).
 *
 * Transport: newline-delimited JSON over `<runDir>/operator.sock` (0600, in the
 * 0700 run directory). Lines are UTF-8; a line longer than the limit for its
 * stage closes the connection. K is the vault's 32-byte `operator-auth` key:
 * the daemon holds it while unlocked, the client derives it by opening the
 * vault file with the passphrase. K never crosses the wire.
 *
 * Handshake (plain lines, at most PREAUTH_LINE_BYTES each, within the handshake timeout):
 *   S→C  {"t":"hello","protocol":"postern-operator","v":2,"nonce":Ns}
 *   C→S  {"t":"auth","v":2,"role":R,"nonce":Nc,"proof":Pc}      R ∈ operator | observer
 *   S→C  {"t":"welcome","v":2,"role":R,"proof":Ps}      — only after Pc verified
 *     or {"t":"error","error":{"code","message"}} and close (locked, bad proof, …)
 * Ns, Nc: 32 random bytes each, base64url. With T = Ns ‖ Nc (raw bytes),
 *   Pc = HKDF-SHA256(ikm=K, salt=T, info="postern-operator/2 client-proof " ‖ R, 32)
 *   Ps = HKDF-SHA256(ikm=K, salt=T, info="postern-operator/2 server-proof " ‖ R, 32)
 *   S  = HKDF-SHA256(ikm=K, salt=T, info="postern-operator/2 session " ‖ R, 32)
 * The role is inside every derivation: a relay that rewrites it makes the
 * proof fail, so an observer connection can never be turned into an operator
 * one. Proofs are compared in constant time; the server proves itself only
 * after the client did; the client sends no command before Ps verifies.
 *
 * After the handshake every line, both directions, is a sealed frame:
 *   {"seq":n,"body":"<JSON text of the message>","mac":M}
 *   M = HMAC-SHA256(S, "postern-operator/2 frame" ‖ 0x00 ‖ dir ‖ u64be(seq) ‖ utf8(body))
 * dir is "c2s" or "s2c"; seq starts at 0 per direction and must be exactly the
 * next one, so injected, altered, replayed, reordered or dropped frames are all
 * refused. A frame that fails → sealed fatal error OPERATOR_AUTH_FAILED, close.
 * The frame body is a message of ./messages.ts.
 *
 * Confidentiality is not a goal: nothing on this channel is secret (cards and
 * views carry credential names only).
 */
import { z } from 'zod';

export const OPERATOR_PROTOCOL = 'postern-operator';
/** Version 2: roles (operator / observer), events with sequence numbers, the views of messages.ts. */
export const OPERATOR_VERSION = 2;
export const OPERATOR_SOCKET_FILE = 'operator.sock';
/** Handshake lines are tiny; a peer that has not authenticated gets little memory. */
export const PREAUTH_LINE_BYTES = 4 * 1024;
/** Commands from the operator. */
export const MAX_REQUEST_LINE_BYTES = 1024 * 1024;
/** Answers from the daemon (a list of large cards may be big). */
export const MAX_RESPONSE_LINE_BYTES = 32 * 1024 * 1024;
export const NONCE_BYTES = 32;

const OperatorRoleSchema = z.enum(['operator', 'observer']);
/** `operator` may decide and change; `observer` only reads (every mutating op → OBSERVER_READ_ONLY). */
export type OperatorRole = z.infer<typeof OperatorRoleSchema>;

const b64u32 = z.string().regex(/^[A-Za-z0-9_-]{43}$/, '32 bytes, base64url');

export const WireErrorSchema = z.strictObject({ code: z.string().max(64), message: z.string().max(1000) });
export type WireError = z.infer<typeof WireErrorSchema>;

export const HelloSchema = z.strictObject({
  t: z.literal('hello'),
  protocol: z.literal(OPERATOR_PROTOCOL),
  v: z.literal(OPERATOR_VERSION),
  nonce: b64u32,
});
export const AuthSchema = z.strictObject({ t: z.literal('auth'), v: z.literal(OPERATOR_VERSION), role: OperatorRoleSchema, nonce: b64u32, proof: b64u32 });
const WelcomeSchema = z.strictObject({ t: z.literal('welcome'), v: z.literal(OPERATOR_VERSION), role: OperatorRoleSchema, proof: b64u32 });
const PlainErrorSchema = z.strictObject({ t: z.literal('error'), error: WireErrorSchema });
export const ServerHandshakeSchema = z.discriminatedUnion('t', [HelloSchema, WelcomeSchema, PlainErrorSchema]);
export type Auth = z.infer<typeof AuthSchema>;

export const SealedFrameSchema = z.strictObject({
  seq: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  body: z.string(),
  mac: b64u32,
});

/**
 * The in-process pair (`postern up`): a private MessagePort, never a path on
 * disk, handed by the process that unlocked the vault to its own UI. Its
 * first message from the client is {"t":"attach","v":2,"role":R}; the daemon
 * answers {"t":"attached","v":2,"role":R}; then the same messages as the
 * socket's frame bodies, as JSON text, unsealed (nobody else holds the port).
 * The receiver also acknowledges consumed bytes with {"t":"ack","bytes":n}
 * so the daemon can tell a UI that fell behind (it never blocks on one).
 */
export const PortAttachSchema = z.strictObject({ t: z.literal('attach'), v: z.literal(OPERATOR_VERSION), role: OperatorRoleSchema });
export const PortAttachedSchema = z.strictObject({ t: z.literal('attached'), v: z.literal(OPERATOR_VERSION), role: OperatorRoleSchema });
export const PortAckSchema = z.strictObject({ t: z.literal('ack'), bytes: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER) });
