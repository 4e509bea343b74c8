/**
 * The way onto the operator channel from another process: the MAC'd socket
 * transport and the one OperatorClient (this file only joins them, so every
 * front end — the CLI's commands, the demo — authenticates the same way).
 *
 * Invariants: the caller's key is copied by the transport and zeroed after
 * the handshake; the role defaults to operator.
 */
import type { OperatorClient } from './client.js';
import { createOperatorClient, type OperatorClientOptions } from './operator-client.js';
import { connectSocketTransport, type SocketTransportOptions } from './socket-transport.js';

export { NO_DAEMON_MESSAGE } from './socket-transport.js';

type ConnectOptions = SocketTransportOptions & OperatorClientOptions;

/** Connects and authenticates both ways. Throws DAEMON_UNAVAILABLE, OPERATOR_AUTH_FAILED or VAULT_LOCKED. */
export async function connectOperator(socketPath: string, key: Uint8Array, opts: ConnectOptions = {}): Promise<OperatorClient> {
  return createOperatorClient(await connectSocketTransport(socketPath, key, opts), opts);
}
