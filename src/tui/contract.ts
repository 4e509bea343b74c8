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
  CardRow,
  CardView,
} from '../protocol/operator/index.js';
export type { Presentation } from '../protocol/operator/index.js';
export { cardView, presentation, CARD_VALUE_MAX, DEVICE_NAME, PairingViewSchema, pairingLink, SUMMARY_LABEL } from '../protocol/operator/index.js';
