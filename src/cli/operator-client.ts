/**
 * The CLI's way onto the operator channel: the MAC'd socket transport and the
 * one OperatorClient, both from src/protocol/operator (this file only joins
 * them, so every CLI command authenticates the same way).
 *
 * Invariants: the caller's key is copied by the transport and zeroed after
 * the handshake; the role defaults to operator.
 */
import type { OperatorClient } from '../protocol/operator/client.js';
import { createOperatorClient, type OperatorClientOptions } from '../protocol/operator/operator-client.js';
import { connectSocketTransport, type SocketTransportOptions } from '../protocol/operator/socket-transport.js';

export { NO_DAEMON_MESSAGE } from '../protocol/operator/socket-transport.js';

export type ConnectOptions = SocketTransportOptions & OperatorClientOptions;

/** Connects and authenticates both ways. Throws DAEMON_UNAVAILABLE, OPERATOR_AUTH_FAILED or VAULT_LOCKED. */
export async function connectOperator(socketPath: string, key: Uint8Array, opts: ConnectOptions = {}): Promise<OperatorClient> {
  return createOperatorClient(await connectSocketTransport(socketPath, key, opts), opts);
}
