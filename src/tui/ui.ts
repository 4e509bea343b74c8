/**
 * What the operator is doing in the UI, apart from what the daemon says: the
 * view, the card on screen, filters, modes and decisions in flight. Views
 * read this with the daemon's state to produce rows.
 */
import type { OperatorState } from './state.js';

export const VIEWS = ['approvals', 'activity', 'sessions', 'grants', 'catalog'] as const;
export type ViewId = (typeof VIEWS)[number];

export const VIEW_TITLES: Readonly<Record<ViewId, string>> = {
  approvals: 'Approvals',
  activity: 'Activity',
  sessions: 'Sessions',
  grants: 'Grants',
  catalog: 'Catalog',
};

export type Mode =
  | { readonly kind: 'normal' }
  | { readonly kind: 'help' }
  | { readonly kind: 'filter'; readonly draft: string }
  | { readonly kind: 'reason'; readonly cardId: string; readonly draft: string }
  | { readonly kind: 'confirm'; readonly question: string; readonly action: ConfirmAction };

export type ConfirmAction =
  | { readonly kind: 'quit' }
  | { readonly kind: 'catalog.accept'; readonly digest: string }
  | { readonly kind: 'catalog.reject'; readonly digest: string };

export interface UiState {
  readonly view: ViewId;
  readonly mode: Mode;
  /** The card on screen; it changes only when the operator moves or decides it. */
  readonly focusId: string | null;
  readonly expanded: boolean;
  readonly scroll: number;
  readonly cursor: Readonly<Record<ViewId, number>>;
  readonly filter: Readonly<Record<ViewId, string>>;
  /** Decisions sent and not yet answered, by card id. */
  readonly inflight: Readonly<Record<string, string>>;
  /** The last failure per card id (a refused or failed decision). */
  readonly cardError: Readonly<Record<string, string>>;
  readonly message: string | null;
}

export const initialUi: UiState = {
  view: 'approvals',
  mode: { kind: 'normal' },
  focusId: null,
  expanded: false,
  scroll: 0,
  cursor: { approvals: 0, activity: -1, sessions: 0, grants: 0, catalog: 0 },
  filter: { approvals: '', activity: '', sessions: '', grants: '', catalog: '' },
  inflight: {},
  cardError: {},
  message: null,
};

export interface KeyHint {
  readonly key: string;
  readonly label: string;
}

export interface ViewCtx {
  readonly state: OperatorState;
  readonly ui: UiState;
  readonly width: number;
  readonly height: number;
  readonly nowMs: number;
  readonly observe: boolean;
}
