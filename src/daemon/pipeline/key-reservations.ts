/**
 * In-memory reservations of idempotency keys (a service every call shares,
 * `Services.reservations`), held between the idempotency stage
 * (stages/key/) and the durable claim with the intent, so 20 parallel calls with one key produce one approval
 * request and one execution. A reservation is released when the call ends,
 * whatever the outcome.
 */
export interface Reservation {
  readonly callId: string;
  /** The digest of the reserving call's normalized arguments. */
  readonly argsDigest: string;
}

export class KeyReservations {
  readonly #held = new Map<string, Reservation>();

  static id(tool: string, key: string): string {
    return `${tool}\u0000${key}`;
  }

  /** The reservation of (tool, key), if a call holds it. */
  held(tool: string, key: string): Reservation | undefined {
    return this.#held.get(KeyReservations.id(tool, key));
  }

  /** True if reserved for this call; false if another call holds it. */
  reserve(tool: string, key: string, callId: string, argsDigest: string): boolean {
    const id = KeyReservations.id(tool, key);
    if (this.#held.has(id)) return false;
    this.#held.set(id, { callId, argsDigest });
    return true;
  }

  release(tool: string, key: string, callId: string): void {
    const id = KeyReservations.id(tool, key);
    if (this.#held.get(id)?.callId === callId) this.#held.delete(id);
  }
}
