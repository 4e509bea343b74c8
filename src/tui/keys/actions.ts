/**
 * What the keys do: pure functions from what is on screen (a KeyCtx) to the
 * next UI state and, for a deciding key, the request the App must send. The
 * key tables (tables.ts) point at these; nothing here reads a clock, a
 * socket or React.
 *
 * Invariants: a deciding key acts only on the card on screen, names it by id
 * and call digest, and only when `offers` (views/approvals.ts) allows it; a
 * deciding key refused by the decision pause starts the pause again; Esc
 * only ever goes back — quitting is `q` (from any view) or Ctrl-C, and asks
 * first while calls are waiting.
 */
import type { ApprovalCard, OperatorVerdict } from '../contract.js';
import { cardInView, moveFocus } from '../views/focus.js';
import { pairDevice } from '../pairing.js';
import { sanitizeForTerminal } from '../../rules/terminal-text.js';
import { VIEWS, omit, type ConfirmAction, type Mode, type Step, type UiState, type ViewCtx, type ViewId } from '../ui.js';
import { LOCKED_REASON, approvalsView, type ApprovalsView, type Offers } from '../views/approvals.js';
import { visibleActivity } from '../views/activity.js';
import { acceptBlocked } from '../views/catalog.js';
import { visibleGrants } from '../views/grants.js';
import { visibleSessions } from '../views/sessions.js';

/** What a key handler reads: the view's context and, in the approvals view, what it shows. */
export interface KeyCtx extends ViewCtx {
  readonly approvals: ApprovalsView | null;
}

export function keyCtx(v: ViewCtx): KeyCtx {
  return { ...v, approvals: v.ui.view === 'approvals' && v.ui.mode.kind !== 'help' ? approvalsView(v) : null };
}

export function say(ui: UiState, message: string | null): Step {
  return { ui: { ...ui, message } };
}

export function showView(c: KeyCtx, v: ViewId | undefined): Step {
  if (v === undefined || v === c.ui.view) return { ui: { ...c.ui, message: null } };
  return { ui: cardInView({ ...c.ui, view: v, message: null }, c.monoMs) };
}

export function cycleView(c: KeyCtx, delta: 1 | -1): Step {
  const i = VIEWS.indexOf(c.ui.view);
  return showView(c, VIEWS[(i + VIEWS.length + delta) % VIEWS.length]);
}

export function openHelp(c: KeyCtx): Step {
  return { ui: { ...c.ui, mode: { kind: 'help' } } };
}

/** Where Esc goes back to: details → the compact card, a filter → none, a view → approvals; null at the top. */
function backFrom(c: Pick<KeyCtx, 'ui' | 'monoMs'>): UiState | null {
  const { ui } = c;
  if (ui.view === 'approvals' && ui.expanded) return { ...ui, expanded: false, scroll: 0 };
  if (ui.filter[ui.view] !== '') return { ...ui, filter: { ...ui.filter, [ui.view]: '' } };
  if (ui.view !== 'approvals') return cardInView({ ...ui, view: 'approvals' }, c.monoMs);
  return null;
}

/** Esc: back, and nothing else — never a quit, never a lock. */
export function escape(c: KeyCtx): Step {
  const back = backFrom(c);
  return back === null ? say(c.ui, 'Esc goes back; q quits') : { ui: back };
}

/** Quits, or asks first while calls are waiting for this operator. */
/** Ctrl-C, in any mode: asks (as `q` does), and quits when it is the question already asked. */
export function quitAnywhere(c: KeyCtx): Step {
  return c.ui.mode.kind === 'confirm' && c.ui.mode.action.kind === 'quit' ? { ui: c.ui, quit: true } : askQuit(c);
}

export function askQuit(c: KeyCtx): Step {
  const n = c.state.pending.length;
  if (c.observe || n === 0 || c.state.connection !== 'open') return { ui: c.ui, quit: true };
  const question = `${n} call${n === 1 ? ' is' : 's are'} waiting for a decision. Quit anyway?`;
  return { ui: { ...c.ui, mode: { kind: 'confirm', question, action: { kind: 'quit' } } } };
}

function listLength(c: KeyCtx): number {
  switch (c.ui.view) {
    case 'approvals':
      return 0;
    case 'activity':
      return visibleActivity(c).length;
    case 'sessions':
      return visibleSessions(c).length;
    case 'grants':
      return visibleGrants(c).length;
    case 'catalog':
      return c.state.catalog?.changes.length ?? 0;
  }
}

export function moveCursor(c: KeyCtx, delta: 1 | -1): Step {
  const v = c.ui.view;
  const n = listLength(c);
  const base = c.ui.cursor[v] < 0 ? n - 1 : c.ui.cursor[v];
  return { ui: { ...c.ui, cursor: { ...c.ui.cursor, [v]: Math.max(0, Math.min(n - 1, base + delta)) } } };
}

export function followTail(c: KeyCtx): Step {
  return { ui: { ...c.ui, cursor: { ...c.ui.cursor, activity: -1 } } };
}

export function openFilter(c: KeyCtx): Step {
  return { ui: { ...c.ui, mode: { kind: 'filter', draft: c.ui.filter[c.ui.view] } } };
}

export function moveCard(c: KeyCtx, delta: 1 | -1): Step {
  return { ui: moveFocus(c.ui, c.state, delta, c.monoMs) };
}

export function toggleDetails(c: KeyCtx): Step {
  return { ui: { ...c.ui, expanded: !c.ui.expanded, scroll: 0 } };
}

export function toggleOrder(c: KeyCtx): Step {
  return { ui: { ...c.ui, bySession: !c.ui.bySession } };
}

/** Scrolls the details to `to(at, max, page)`, clamped. */
export function scroll(c: KeyCtx, to: (at: number, max: number, page: number) => number): Step {
  const max = c.approvals?.maxScroll ?? 0;
  const page = Math.max(1, c.height - 4);
  const at = Math.min(c.ui.scroll, max);
  return { ui: { ...c.ui, scroll: Math.max(0, Math.min(max, to(at, max, page))) } };
}

/**
 * A deciding key: `then` runs with the card on screen when `offers` allows
 * `what`; otherwise the reason is said — and a key refused by the decision
 * pause starts the pause again, so a held or repeated key never gets through.
 */
export function gate(c: KeyCtx, what: keyof Offers, key: string, then: (card: ApprovalCard) => Step): Step {
  const card = c.approvals?.card ?? null;
  const offer = c.approvals?.offers[what];
  if (card === null || offer === undefined) return say(c.ui, 'no card on screen');
  if (offer.ok) return then(card);
  if (offer.pause === true) return say({ ...c.ui, pauseFrom: c.monoMs }, `${key} ignored: the card on screen just changed; read it, then press ${key} again`);
  return say(c.ui, offer.reason);
}

/** Sends a decision for `card`; the card shows it as in flight until the daemon answers. */
export function decision(ui: UiState, card: ApprovalCard, verdict: OperatorVerdict, label: string): Step {
  return {
    ui: { ...ui, inflight: { ...ui.inflight, [card.id]: label }, decided: { ...ui.decided, [card.id]: true }, cardError: omit(ui.cardError, card.id), message: null },
    request: { op: 'approvals.decide', params: { approval_id: card.id, verdict }, label },
  };
}

export function startReason(c: KeyCtx, card: ApprovalCard): Step {
  return { ui: { ...c.ui, mode: { kind: 'reason', cardId: card.id, draft: '' } } };
}

export function revokeGrant(c: KeyCtx): Step {
  if (c.observe) return say(c.ui, 'observer (read-only): revoking is disabled');
  if (c.state.locked) return say(c.ui, LOCKED_REASON);
  const list = visibleGrants(c);
  const g = list[Math.min(Math.max(0, c.ui.cursor.grants), list.length - 1)];
  if (g === undefined) return { ui: c.ui };
  return { ui: c.ui, request: { op: 'grants.revoke', params: { id: g.id }, done: `revoked the grant of ${sanitizeForTerminal(g.tool, 60)}` } };
}

/** P: names the device to pair with the approval page (the prompt; Enter asks the daemon for a code). */
export function startPairing(c: KeyCtx): Step {
  if (c.observe) return say(c.ui, 'observer (read-only): pairing a device is disabled');
  if (c.state.locked) return say(c.ui, LOCKED_REASON);
  return { ui: { ...c.ui, mode: { kind: 'pair-name', draft: '' } } };
}

/** A or R: asks first, naming the digest; accepting is refused while the gate fails. */
export function confirmCatalog(c: KeyCtx, accept: boolean): Step {
  const p = c.state.catalog;
  if (c.observe) return say(c.ui, 'observer (read-only): the catalog cannot be changed from here');
  if (p === null) return { ui: c.ui };
  const blocked = accept ? acceptBlocked(p) : null;
  if (blocked !== null) return say(c.ui, blocked);
  if (c.state.locked) return say(c.ui, LOCKED_REASON);
  const question = `${accept ? 'Accept' : 'Reject'} catalog ${sanitizeForTerminal(p.digest, 24)}?`;
  return { ui: { ...c.ui, mode: { kind: 'confirm', question, action: { kind: accept ? 'catalog.accept' : 'catalog.reject', digest: p.digest } } } };
}

/** The longest deny reason (and filter) a prompt takes, in characters. */
export const REASON_MAX = 500;

const NORMAL: Mode = { kind: 'normal' };

/** Leaves a pop-up mode (a prompt, a question) for the normal one, doing nothing else. */
export function closeMode(c: KeyCtx): Step {
  return { ui: { ...c.ui, mode: NORMAL } };
}

/** Closes the help; the card on screen is settled again as the help leaves it. */
export function closeHelp(c: KeyCtx): UiState {
  return cardInView({ ...c.ui, mode: NORMAL }, c.monoMs);
}

/** `y` to a question: what it asked for. */
export function confirmed(c: KeyCtx, a: ConfirmAction): Step {
  const ui = { ...c.ui, mode: NORMAL };
  switch (a.kind) {
    case 'quit':
      return { ui, quit: true };
    case 'catalog.accept':
      return { ui, request: { op: 'catalog.accept', params: { digest: a.digest }, done: 'catalog accepted' } };
    case 'catalog.reject':
      return { ui, request: { op: 'catalog.reject', params: { digest: a.digest }, done: 'catalog rejected' } };
  }
}

export type Prompt = Extract<Mode, { kind: 'filter' | 'reason' | 'pair-name' }>;

/** Enter in a prompt: the filter applies, the device is paired, the card on screen is denied with the reason. */
export function submitPrompt(c: KeyCtx, mode: Prompt): Step {
  const done = { ...c.ui, mode: NORMAL };
  if (mode.kind === 'filter') return { ui: { ...done, filter: { ...done.filter, [done.view]: mode.draft.trim() } } };
  if (mode.kind === 'pair-name') return pairDevice(done, mode.draft);
  const card = c.state.pending.find((x) => x.id === mode.cardId);
  if (card === undefined) return say(done, 'that request is no longer waiting');
  const reason = mode.draft.trim();
  return decision(done, card, { verdict: 'deny', reason: reason === '' ? null : reason.slice(0, REASON_MAX) }, 'deny with reason');
}

/** Backspace in a prompt: the last character goes. */
export function erase(c: KeyCtx, mode: Prompt): Step {
  return { ui: { ...c.ui, mode: { ...mode, draft: Array.from(mode.draft).slice(0, -1).join('') } } };
}

/** Any other key in a prompt: what it types (typed or pasted text, whole) is added; a key that types nothing does nothing. */
export function typeInto(c: KeyCtx, mode: Prompt, text: string): Step {
  if (text === '') return { ui: c.ui };
  return { ui: { ...c.ui, mode: { ...mode, draft: Array.from(mode.draft + text).slice(0, REASON_MAX).join('') } } };
}
