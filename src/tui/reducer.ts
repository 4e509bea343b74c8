/**
 * The TUI's one reducer: `step(ui, state, key, env)` decides everything a key
 * does — the next UI state and the request, if any, the App must send on the
 * operator connection — and `settle` folds the daemon's answer back in.
 * Pure: no React, no I/O, no clock of its own (the monotonic and wall times
 * arrive in `env`), so it is tested as tables.
 *
 * Invariants: what every key does, in every mode, comes from the key tables
 * (keys/tables.ts: the views', everywhere's, and MODE_KEYS for the help, a
 * question and the prompts) and nowhere else — there, the help closes on any
 * key and that key then does its own job (Esc and `?` only close it); a
 * confirmation runs on `y` only; a prompt takes typed and pasted text whole;
 * Ctrl-C quits from anywhere (asking first while calls wait: ANYWHERE_KEYS); the focus is settled after every
 * step (focus.ts), so what the next key acts on is what the next frame shows;
 * the rows of a card's details that the next frame draws are recorded
 * (ui.coverage), and a card every row of which has been drawn is recorded as
 * seen (ui.seen) — which is what lets a card the compact view cuts be
 * approved; jumping to the end covers the end only.
 */
import { refocus } from './views/focus.js';
import { complete, cover, coverageFor } from './coverage.js';
import type { KeyPress } from './keys/keymap.js';
import { keyCtx } from './keys/actions.js';
import { modeStep } from './keys/tables.js';
import { pairingShown } from './pairing.js';
import { approvalsView } from './views/approvals.js';
import { viewCtx } from './layout.js';
import type { OperatorState } from './state.js';
import { sanitizeForTerminal } from '../rules/terminal-text.js';
import { omit, type Env, type Step, type UiRequest, type UiState } from './ui.js';

export { refocus } from './views/focus.js';

export function step(ui: UiState, state: OperatorState, key: KeyPress, env: Env): Step {
  const out = modeStep(keyCtx(viewCtx(env, state, ui)), key);
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
