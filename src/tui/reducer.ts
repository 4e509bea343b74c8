/**
 * The TUI's one reducer: `step(ui, state, key, env)` decides everything a key
 * does — the next UI state and the request, if any, the App must send on the
 * operator connection — and `settle` folds the daemon's answer back in.
 * Pure: no React, no I/O, no clock of its own (the monotonic and wall times
 * arrive in `env`), so it is tested as tables.
 *
 * Invariants: the keys of the normal mode come from the key tables
 * (keys/tables.ts) and nowhere else; the help closes on any key and that key
 * then does its own job (Esc and `?` only close it); a confirmation runs on
 * `y` only; a prompt takes typed and pasted text whole; Ctrl-C quits from
 * anywhere (asking first while calls wait: keys/tables.ts, ANYWHERE_KEYS); the focus is settled after every
 * step (focus.ts), so what the next key acts on is what the next frame shows;
 * the rows of a card's details that the next frame draws are recorded
 * (ui.coverage), and a card every row of which has been drawn is recorded as
 * seen (ui.seen) — which is what lets a card the compact view cuts be
 * approved; jumping to the end covers the end only.
 */
import { cardInView, refocus } from './focus.js';
import { complete, cover, coverageFor } from './coverage.js';
import { match, type KeyPress } from './keys/keymap.js';
import { decision, keyCtx, say, type KeyCtx } from './keys/actions.js';
import { ANYWHERE_KEYS, GLOBAL_KEYS, viewKeys } from './keys/tables.js';
import { pairDevice, pairingShown } from './pairing.js';
import { approvalsView } from './views/approvals.js';
import { viewCtx } from './layout.js';
import type { OperatorState } from './state.js';
import { sanitizeForTerminal } from '../rules/terminal-text.js';
import { omit, type ConfirmAction, type Env, type Mode, type Step, type UiRequest, type UiState } from './ui.js';

export { refocus } from './focus.js';

/** The longest deny reason (and filter) a prompt takes, in characters. */
export const REASON_MAX = 500;

const NORMAL: Mode = { kind: 'normal' };

export function step(ui: UiState, state: OperatorState, key: KeyPress, env: Env): Step {
  const out = stepMode(keyCtx(viewCtx(env, state, ui)), key);
  return { ...out, ui: noteSeen(refocus(out.ui, state, env.monoMs), state, env) };
}

/** Records the rows of the details the next frame draws; a card all of whose rows were drawn is seen. */
function noteSeen(ui: UiState, state: OperatorState, env: Env): UiState {
  if (ui.view !== 'approvals' || !ui.expanded || ui.mode.kind === 'help') return ui;
  const v = approvalsView(viewCtx(env, state, ui));
  if (v.card === null || v.drawn === null || ui.seen[v.card.id] === true) return ui;
  const d = v.drawn;
  const cov = cover(coverageFor(ui.coverage[v.card.id], d.width, d.total), d.from, d.to);
  const next = { ...ui, coverage: { ...ui.coverage, [v.card.id]: cov } };
  return complete(cov) ? { ...next, seen: { ...ui.seen, [v.card.id]: true } } : next;
}

function stepMode(c: KeyCtx, k: KeyPress): Step {
  const mode = c.ui.mode;
  const anywhere = match([ANYWHERE_KEYS], k);
  if (anywhere !== undefined) return anywhere.handler(c, k);
  switch (mode.kind) {
    case 'help': {
      const closed = cardInView({ ...c.ui, mode: NORMAL }, c.monoMs);
      if (k.name === 'esc' || k.name === '?') return { ui: closed };
      return normalKey(keyCtx({ ...c, ui: closed }), k);
    }
    case 'confirm': {
      const ui = { ...c.ui, mode: NORMAL };
      return k.name === 'y' || k.name === 'Y' ? confirmed(ui, mode.action) : { ui };
    }
    case 'filter':
    case 'reason':
    case 'pair-name':
      return promptKey(c, mode, k);
    case 'normal':
      return normalKey(c, k);
  }
}

function normalKey(c: KeyCtx, k: KeyPress): Step {
  const cc = c.ui.message === null && c.ui.pairing === null ? c : { ...c, ui: { ...c.ui, message: null, pairing: null } };
  const entry = match([viewKeys(cc.ui), GLOBAL_KEYS], k);
  return entry === undefined ? { ui: cc.ui } : entry.handler(cc, k);
}

function confirmed(ui: UiState, a: ConfirmAction): Step {
  switch (a.kind) {
    case 'quit':
      return { ui, quit: true };
    case 'catalog.accept':
      return { ui, request: { op: 'catalog.accept', params: { digest: a.digest }, done: 'catalog accepted' } };
    case 'catalog.reject':
      return { ui, request: { op: 'catalog.reject', params: { digest: a.digest }, done: 'catalog rejected' } };
  }
}

function promptKey(c: KeyCtx, mode: Extract<Mode, { kind: 'filter' | 'reason' | 'pair-name' }>, k: KeyPress): Step {
  const ui = c.ui;
  if (k.name === 'esc') return { ui: { ...ui, mode: NORMAL } };
  if (k.name === 'enter') {
    const done = { ...ui, mode: NORMAL };
    if (mode.kind === 'filter') return { ui: { ...done, filter: { ...done.filter, [done.view]: mode.draft.trim() } } };
    if (mode.kind === 'pair-name') return pairDevice(done, mode.draft);
    const card = c.state.pending.find((x) => x.id === mode.cardId);
    if (card === undefined) return say(done, 'that request is no longer waiting');
    const reason = mode.draft.trim();
    return decision(done, card, { verdict: 'deny', reason: reason === '' ? null : reason.slice(0, REASON_MAX) }, 'deny with reason');
  }
  if (k.name === 'backspace') return { ui: { ...ui, mode: { ...mode, draft: Array.from(mode.draft).slice(0, -1).join('') } } };
  if (k.text === '') return { ui };
  return { ui: { ...ui, mode: { ...mode, draft: Array.from(mode.draft + k.text).slice(0, REASON_MAX).join('') } } };
}

/** What the daemon answered to a request (`result`: the answer's data, when the request reads one). */
export type Outcome = { readonly ok: true; readonly result?: unknown } | { readonly ok: false; readonly error: unknown };

function errorText(e: unknown): string {
  if (typeof e === 'object' && e !== null) {
    const code = 'code' in e && typeof e.code === 'string' ? `${e.code}: ` : '';
    const msg = 'message' in e && typeof e.message === 'string' ? e.message : 'request failed';
    return sanitizeForTerminal(`${code}${msg}`, 300);
  }
  return 'request failed';
}

/** Folds the daemon's answer in: a decision leaves "sending…" (or shows its error on its card); the rest says done or why not. */
export function settle(ui: UiState, req: UiRequest, outcome: Outcome): UiState {
  if (req.op === 'devices.pair') {
    const shown = outcome.ok ? pairingShown(outcome.result) : null;
    return shown === null ? { ...ui, message: outcome.ok ? 'the daemon answered the pairing with nothing to show' : errorText(outcome.error) } : { ...ui, pairing: shown, message: null };
  }
  if (req.op !== 'approvals.decide') return { ...ui, message: outcome.ok ? req.done : errorText(outcome.error) };
  const id = req.params.approval_id;
  const inflight = omit(ui.inflight, id);
  if (outcome.ok) return { ...ui, inflight };
  return { ...ui, inflight, decided: omit(ui.decided, id), cardError: { ...ui.cardError, [id]: errorText(outcome.error) } };
}
