/**
 * How the frame is divided: header rows (views and badges), the view's body,
 * and the footer (a status line, two rows of keys, a message). The reducer
 * and the renderer read the same division, so a key that pages or scrolls
 * moves by what is on screen.
 */
import type { OperatorState } from './state.js';
import type { Env, UiState, ViewCtx } from './ui.js';

/** Rows kept for the footer: a status line, two rows of keys, a message. */
const FOOTER_ROWS = 4;

/** Header rows: a second row when a badge (observer, locked, shipping, test vault, connection) may not fit beside the views. */
function headerRowCount(state: OperatorState, observe: boolean): number {
  return observe || state.locked || state.shipProblem !== null || state.vaultBelowFloor || state.pageRun !== null || state.connection !== 'open' ? 2 : 1;
}

export function viewCtx(env: Env, state: OperatorState, ui: UiState): ViewCtx {
  return {
    state,
    ui,
    width: env.width,
    height: Math.max(3, env.rows - headerRowCount(state, env.observe) - FOOTER_ROWS),
    nowMs: env.wallMs,
    monoMs: env.monoMs,
    observe: env.observe,
  };
}
