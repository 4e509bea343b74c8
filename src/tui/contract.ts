/**
 * The operator contract as the TUI uses it: the client it is handed, the
 * snapshot it starts from, the events that move it, and the card view. All
 * of it is src/protocol (the only layer the TUI shares with the daemon); the
 * TUI imports these names from here so what it depends on is listed once.
 */
export type { ApprovalCard, ApprovalDecision, OperatorVerdict, Seen } from '../protocol/approvals.js';
export type {
  ActivityView,
  CatalogChangeView,
  CatalogPendingView,
  GrantView,
  OperatorClient,
  OperatorEvent,
  OperatorOp,
  OperatorParams,
  OperatorEventEnvelope as EventEnvelope,
  OperatorSnapshot,
  SessionView,
  StatusView,
} from '../protocol/operator/index.js';
export type { CardRow, CardView } from '../protocol/display/card-view.js';
export type { Presentation } from '../protocol/operator/index.js';
export { cardView, CARD_VALUE_MAX, SUMMARY_LABEL } from '../protocol/display/card-view.js';
export { presentation, DEVICE_NAME, PairingViewSchema, pairingLink } from '../protocol/operator/index.js';
