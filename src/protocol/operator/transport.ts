/**
 * What carries operator messages (./messages.ts), whatever is underneath: the
 * MAC'd Unix socket (./socket-transport.ts) or the private in-process port
 * (./port-transport.ts). A transport moves JSON text, one message per call,
 * already authenticated: a frame that fails its MAC never reaches `onMessage`
 * — the transport closes with OPERATOR_AUTH_FAILED instead.
 *
 * Invariants: `send` never blocks and never throws (on a closed transport it
 * does nothing); `onMessage` has one listener; `closed` settles exactly once —
 * null after a local close(), the error otherwise; `backlog()` is how many
 * bytes were sent but not yet consumed by the peer (the daemon drops a
 * subscriber that lets it grow past its bound).
 */
import type { PosternError } from '../../rules/errors.js';
import type { OperatorRole } from './wire.js';

export interface OperatorTransport {
  /** The role both ends agreed on in the handshake. */
  readonly role: OperatorRole;
  send(text: string): void;
  onMessage(listener: (text: string) => void): void;
  /** Closes; an error given is what `closed` settles with (null: a normal close). */
  close(error?: PosternError | null): void;
  readonly closed: Promise<PosternError | null>;
  backlog(): number;
}
