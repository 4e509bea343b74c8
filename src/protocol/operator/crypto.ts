/**
 * The operator channel's crypto and framing, shared by the daemon and every
 * client (spec: ./wire.ts). Proofs and the session key come from
 * HKDF-SHA256 over the vault's operator-auth key and both nonces; every frame
 * after the handshake is MAC'd over (direction, sequence, body).
 *
 * Invariants: every comparison of secret-derived bytes is constant time; a
 * FrameCodec accepts each inbound sequence number exactly once and in order,
 * and once it has refused a frame it refuses everything after; session keys
 * are zeroed by `destroy()`. Lines are framed by `protocol/ndjson.ts` (its
 * `LineReader`, re-exported here), which never buffers more than its limit.
 */
import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { NONCE_BYTES, SealedFrameSchema, type OperatorRole } from './wire.js';

const LABEL = 'postern-operator/2';
const FRAME_LABEL = Buffer.from(`${LABEL} frame\0`, 'utf8');

type Direction = 'c2s' | 's2c';

export function newNonce(): Buffer {
  return randomBytes(NONCE_BYTES);
}

export function encodeB64u(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64url');
}

/** Decodes exactly `len` bytes of base64url or returns null (the schema already checked the alphabet). */
export function decodeB64u(s: string, len = NONCE_BYTES): Buffer | null {
  const b = Buffer.from(s, 'base64url');
  return b.length === len && b.toString('base64url') === s ? b : null;
}

/** A key must be 32 bytes and not all zero (a zeroed key means a locked vault, never a valid key). */
export function usableKey(k: Uint8Array | null | undefined): k is Uint8Array {
  return k instanceof Uint8Array && k.length === 32 && k.some((b) => b !== 0);
}

/** The role is part of every derivation, so a relay cannot change it without breaking the proofs. */
function hkdf(key: Uint8Array, serverNonce: Uint8Array, clientNonce: Uint8Array, what: string, role: OperatorRole): Buffer {
  const salt = Buffer.concat([serverNonce, clientNonce]);
  return Buffer.from(hkdfSync('sha256', key, salt, `${LABEL} ${what} ${role}`, 32));
}

export const clientProof = (k: Uint8Array, ns: Uint8Array, nc: Uint8Array, role: OperatorRole): Buffer => hkdf(k, ns, nc, 'client-proof', role);
export const serverProof = (k: Uint8Array, ns: Uint8Array, nc: Uint8Array, role: OperatorRole): Buffer => hkdf(k, ns, nc, 'server-proof', role);
export const sessionKey = (k: Uint8Array, ns: Uint8Array, nc: Uint8Array, role: OperatorRole): Buffer => hkdf(k, ns, nc, 'session', role);

/** Constant-time equality for equal-length byte strings; different lengths are simply unequal. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

function frameMac(key: Uint8Array, dir: Direction, seq: number, body: string): Buffer {
  const seqBytes = Buffer.alloc(8);
  seqBytes.writeBigUInt64BE(BigInt(seq));
  return createHmac('sha256', key).update(FRAME_LABEL).update(dir, 'utf8').update(seqBytes).update(body, 'utf8').digest();
}

type OpenResult = { readonly ok: true; readonly body: string } | { readonly ok: false; readonly why: string };

/** Seals outbound and opens inbound frames for one side of one connection. */
export class FrameCodec {
  readonly #key: Buffer;
  readonly #out: Direction;
  readonly #in: Direction;
  #sendSeq = 0;
  #recvSeq = 0;
  #broken = false;

  constructor(key: Buffer, side: 'client' | 'server') {
    this.#key = key;
    this.#out = side === 'client' ? 'c2s' : 's2c';
    this.#in = side === 'client' ? 's2c' : 'c2s';
  }

  /** One line (without the newline) carrying `body`. */
  seal(body: string): string {
    const seq = this.#sendSeq++;
    return JSON.stringify({ seq, body, mac: encodeB64u(frameMac(this.#key, this.#out, seq, body)) });
  }

  open(line: string): OpenResult {
    if (this.#broken) return { ok: false, why: 'the channel already failed' };
    const fail = (why: string): OpenResult => {
      this.#broken = true;
      return { ok: false, why };
    };
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      return fail('not JSON');
    }
    const f = SealedFrameSchema.safeParse(raw);
    if (!f.success) return fail('not a sealed frame');
    const mac = decodeB64u(f.data.mac, 32);
    if (mac === null) return fail('malformed MAC');
    const good = sameBytes(mac, frameMac(this.#key, this.#in, f.data.seq, f.data.body));
    // Check the MAC before the sequence so a bad frame and a replay look alike to the sender.
    if (!good) return fail('bad MAC');
    if (f.data.seq !== this.#recvSeq) return fail(`sequence ${f.data.seq}, expected ${this.#recvSeq}`);
    this.#recvSeq++;
    return { ok: true, body: f.data.body };
  }

  destroy(): void {
    this.#broken = true;
    this.#key.fill(0);
  }
}

// The operator channel's strict UTF-8 lines come from the one NDJSON splitter.
export { LineReader, type LineEvent } from '../ndjson.js';
