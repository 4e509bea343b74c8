/**
 * The card on screen, and when a deciding key may act on it.
 *
 * The queue the operator steps through is the daemon's pending cards, oldest
 * first (or session by session), narrowed by the approvals filter. The card
 * on screen is one of them, or a card resolved elsewhere that stays named
 * until the operator moves.
 *
 * Invariants: a new arrival never moves the card on screen; when nothing is
 * on screen the oldest waiting card is shown at once (in the same step as
 * the state that brought it); after the operator's own decision the card
 * that takes its place in the queue is shown. Whenever the card on screen
 * changes or comes back into view, deciding keys wait DECISION_PAUSE_MS on
 * the injected monotonic clock, and a deciding key pressed meanwhile starts
 * the wait again — so a double-pressed or held key never decides a card the
 * operator has not seen.
 */
import type { ApprovalCard } from '../contract.js';
import type { OperatorState } from '../state.js';
import { omit, type UiState } from '../ui.js';
import { matches, parseFilter } from './list.js';

export const DECISION_PAUSE_MS = 600;

/** The pending cards in the order the operator steps through them, narrowed by the filter. */
export function queue(state: OperatorState, ui: Pick<UiState, 'filter' | 'bySession'>): readonly ApprovalCard[] {
  const f = parseFilter(ui.filter.approvals);
  const list = state.pending.filter((c) =>
    matches(f, { session: c.session.id, client: c.session.client_name ?? '', tool: c.tool, credential: c.credential ?? '', id: c.id }),
  );
  if (!ui.bySession) return list;
  const groups = new Map<string, ApprovalCard[]>();
  for (const c of list) groups.set(c.session.id, [...(groups.get(c.session.id) ?? []), c]);
  return [...groups.values()].flat();
}

export function focusedCard(state: OperatorState, ui: UiState): ApprovalCard | null {
  const id = ui.focusId;
  return id === null ? null : (queue(state, ui).find((c) => c.id === id) ?? null);
}

/** True while deciding keys wait (the card on screen changed less than DECISION_PAUSE_MS ago). */
export function paused(ui: Pick<UiState, 'pauseFrom'>, monoMs: number): boolean {
  return ui.pauseFrom !== null && monoMs - ui.pauseFrom < DECISION_PAUSE_MS;
}

/** Milliseconds until deciding keys act again (0 when they do). */
export function pauseLeft(ui: Pick<UiState, 'pauseFrom'>, monoMs: number): number {
  return ui.pauseFrom === null ? 0 : Math.max(0, ui.pauseFrom + DECISION_PAUSE_MS - monoMs);
}

/** The card on screen came into view again (the approvals view, the help closed): deciding waits. */
export function cardInView(ui: UiState, monoMs: number): UiState {
  return ui.view === 'approvals' && ui.focusId !== null ? { ...ui, pauseFrom: monoMs } : ui;
}

function focusOn(ui: UiState, next: ApprovalCard | undefined, index: number, monoMs: number): UiState {
  const id = next?.id ?? null;
  if (id === ui.focusId) return ui.focusIndex === index ? ui : { ...ui, focusIndex: index };
  return { ...ui, focusId: id, focusIndex: index, scroll: 0, pauseFrom: id === null ? ui.pauseFrom : monoMs };
}

/** Forgets the decisions made here for cards that left the queue, once the focus is off them. */
function forget(ui: UiState, state: OperatorState): UiState {
  const gone = Object.keys(ui.decided).filter((id) => id !== ui.focusId && !state.pending.some((c) => c.id === id));
  return gone.length === 0 ? ui : { ...ui, decided: gone.reduce((d, id) => omit(d, id), ui.decided) };
}

/**
 * The focus after the daemon's state or the queue's order changed: kept when
 * the card is still queued, or resolved elsewhere; otherwise the card at its
 * place (the oldest when nothing was on screen).
 */
export function refocus(ui: UiState, state: OperatorState, monoMs: number): UiState {
  return forget(settleFocus(ui, state, monoMs), state);
}

function settleFocus(ui: UiState, state: OperatorState, monoMs: number): UiState {
  const q = queue(state, ui);
  const at = q.findIndex((c) => c.id === ui.focusId);
  if (at >= 0) return focusOn(ui, q[at], at, monoMs);
  const id = ui.focusId;
  const stillPending = id !== null && state.pending.some((c) => c.id === id);
  const resolvedElsewhere = id !== null && !stillPending && ui.decided[id] === undefined && state.resolved[id] !== undefined;
  if (resolvedElsewhere) return ui;
  const index = id === null || stillPending ? 0 : Math.min(ui.focusIndex, q.length - 1);
  return focusOn(ui, q[Math.max(0, index)], Math.max(0, index), monoMs);
}

/** n / p: the next or previous card of the queue (from a card resolved elsewhere, the one at its place). */
export function moveFocus(ui: UiState, state: OperatorState, delta: 1 | -1, monoMs: number): UiState {
  const q = queue(state, ui);
  if (q.length === 0) return ui;
  const cur = q.findIndex((c) => c.id === ui.focusId);
  const base = cur >= 0 ? cur : Math.min(ui.focusIndex, q.length) - (delta > 0 ? 1 : 0);
  const index = Math.max(0, Math.min(q.length - 1, base + delta));
  const moved = focusOn(ui, q[index], index, monoMs);
  return moved === ui ? ui : { ...moved, message: null };
}
