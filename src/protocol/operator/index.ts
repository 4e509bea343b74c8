/**
 * The operator protocol, version 2 — the seam between the daemon and every
 * operator front end (the CLI's `postern approvals …`, `postern approvals
 * watch`, the TUI of `postern up` / `postern attach`). Front ends import only
 * this folder (and the rest of src/protocol).
 *
 *   wire.ts            socket handshake + sealed frames, the in-process port's attach lines, roles
 *   views.ts           SessionView, GrantView, ActivityView, CatalogPendingView, StatusView,
 *                      CredentialStateView
 *   messages.ts        events + envelope, ops (params/result), snapshot, server messages
 *   transport.ts       OperatorTransport (JSON text in/out, role, close, closed, backlog)
 *   client.ts          OperatorClient (request / subscribe / close / closed)
 *   crypto.ts          HKDF proofs, session key, FrameCodec (shared by both ends)
 *   socket-transport.ts  connectSocketTransport(path, key, {role}) — MAC'd Unix socket
 *   port-transport.ts    connectPortTransport(port, {role}) — private MessagePort (postern up)
 *   operator-client.ts   createOperatorClient(transport)
 *   connect.ts           connectOperator(path, key, opts) — the socket transport and the client, joined
 *   presentation.ts      a card's whole presentation, its digest, and the "seen" rule the daemon checks
 *
 * The approval card and verdict are ../approvals.ts; what a card shows (its
 * rows, sanitized and folded) is display logic, ../display/card-view.ts.
 */
export * from './wire.js';
export * from './views.js';
export * from './messages.js';
export type * from './transport.js';
export type * from './client.js';
export * from './presentation.js';
export { createOperatorClient, fromWire, type OperatorClientOptions } from './operator-client.js';
export { connectSocketTransport, NO_DAEMON_MESSAGE, type SocketTransportOptions } from './socket-transport.js';
export { connectPortTransport, acceptPortTransport, type PortTransportOptions } from './port-transport.js';
