/**
 * What the operator is doing in the UI, apart from what the daemon says: the
 * view, the card on screen, filters, modes and decisions in flight, and what
 * a key asks the App to do. Views read this with the daemon's state to
 * produce rows; the reducer (reducer.ts) is the only thing that changes it.
 */
import type { OperatorVerdict } from './contract.js';
import type { Coverage } from './coverage.js';
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
  | { readonly kind: 'pair-name'; readonly draft: string }
  | { readonly kind: 'confirm'; readonly question: string; readonly action: ConfirmAction };

export type ConfirmAction =
  | { readonly kind: 'quit' }
  | { readonly kind: 'catalog.accept'; readonly digest: string }
  | { readonly kind: 'catalog.reject'; readonly digest: string };

export interface UiState {
  readonly view: ViewId;
  readonly mode: Mode;
  /** The card on screen; it changes only when the operator moves or decides it (focus.ts). */
  readonly focusId: string | null;
  /** Where the card on screen stood in the queue, so the next one takes its place. */
  readonly focusIndex: number;
  /** Monotonic ms when the card on screen last changed or came into view; deciding keys wait from here. */
  readonly pauseFrom: number | null;
  /** Cards the operator decided here, until the focus moves off them. */
  readonly decided: Readonly<Record<string, true>>;
  /** Cards every row of whose details has been on screen: approving them is offered although the compact card cuts them. */
  readonly seen: Readonly<Record<string, true>>;
  /** Which rows of each card's details have been on screen (coverage.ts). */
  readonly coverage: Readonly<Record<string, Coverage>>;
  /** The approvals queue goes session by session (each session's oldest first) instead of oldest first. */
  readonly bySession: boolean;
  readonly expanded: boolean;
  readonly scroll: number;
  readonly cursor: Readonly<Record<ViewId, number>>;
  readonly filter: Readonly<Record<ViewId, string>>;
  /** Decisions sent and not yet answered, by card id. */
  readonly inflight: Readonly<Record<string, string>>;
  /** The last failure per card id (a refused or failed decision). */
  readonly cardError: Readonly<Record<string, string>>;
  readonly message: string | null;
  /** A pairing code just opened (P), shown in the footer until the next key. */
  readonly pairing: PairingShown | null;
}

export const initialUi: UiState = {
  view: 'approvals',
  mode: { kind: 'normal' },
  focusId: null,
  focusIndex: 0,
  pauseFrom: null,
  decided: {},
  seen: {},
  coverage: {},
  bySession: false,
  expanded: false,
  scroll: 0,
  cursor: { approvals: 0, activity: -1, sessions: 0, grants: 0, catalog: 0 },
  filter: { approvals: '', activity: '', sessions: '', grants: '', catalog: '' },
  inflight: {},
  cardError: {},
  message: null,
  pairing: null,
};

/** What the App must send on the operator connection; `label`/`done` is what the UI says meanwhile / after. */
export type UiRequest =
  | { readonly op: 'approvals.decide'; readonly params: { readonly approval_id: string; readonly verdict: OperatorVerdict }; readonly label: string }
  | { readonly op: 'grants.revoke'; readonly params: { readonly id: string }; readonly done: string }
  | { readonly op: 'catalog.accept' | 'catalog.reject'; readonly params: { readonly digest: string }; readonly done: string }
  | { readonly op: 'devices.pair'; readonly params: { readonly name: string }; readonly done: string };

/** A pairing the daemon opened for the approval page, shown until the next key: the code, the link and its end. */
export interface PairingShown {
  readonly name: string;
  readonly code: string;
  readonly link: string;
  readonly expiresAt: string;
  readonly tlsSha256: string | null;
}

/** The reducer's answer to a key: the next UI state, and what the App must do. */
export interface Step {
  readonly ui: UiState;
  readonly request?: UiRequest;
  /** The operator quit: the App ends the TUI (what that means is the caller's: `up` locks, `attach` disconnects). */
  readonly quit?: true;
}

export interface KeyHint {
  readonly key: string;
  readonly label: string;
}

/** What the reducer is told besides the two states: who is at the keys, the screen, and the injected clocks. */
export interface Env {
  readonly observe: boolean;
  readonly width: number;
  /** Rows of the frame (one short of the terminal). */
  readonly rows: number;
  /** Wall-clock ms (countdowns, expiry). */
  readonly wallMs: number;
  /** Monotonic ms (the decision pause). */
  readonly monoMs: number;
}

export interface ViewCtx {
  readonly state: OperatorState;
  readonly ui: UiState;
  readonly width: number;
  /** Rows for the view's body. */
  readonly height: number;
  readonly nowMs: number;
  readonly monoMs: number;
  readonly observe: boolean;
}

export function omit<V>(r: Readonly<Record<string, V>>, key: string): Record<string, V> {
  const { [key]: _drop, ...rest } = r;
  return rest;
}
