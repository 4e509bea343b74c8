/**
 * The frame as rows: the header (views and badges), the current view's body,
 * and the footer (why a key is not offered, the key bar, a message, or the
 * prompt of the mode). A pure function of the daemon's state, the UI state
 * and the screen; the key bar is read from the same key tables the reducer
 * runs, so it shows exactly the keys that act.
 *
 * Invariants: the frame has exactly `env.rows` rows and none is wider than
 * `env.width`; every string from the daemon or an agent is sanitized.
 */
import { hintsOf } from './keys/keymap.js';
import { REASON_MAX, keyCtx, type KeyCtx } from './keys/actions.js';
import { GLOBAL_KEYS, viewKeys } from './keys/tables.js';
import { viewCtx } from './layout.js';
import { line, type Line, type Seg } from './lines.js';
import type { OperatorState } from './state.js';
import { cells, clipCells, foldCells } from './text.js';
import { pairingRows } from './pairing.js';
import { sanitizeForTerminal } from '../rules/terminal-text.js';
import { VIEWS, VIEW_TITLES, type Env, type KeyHint, type UiState, type ViewCtx } from './ui.js';
import { activityView } from './views/activity.js';
import { catalogView } from './views/catalog.js';
import { grantsView } from './views/grants.js';
import { helpLines } from './keys/help.js';
import { sessionsView } from './views/sessions.js';

/** Key rows under the view. */
const HINT_ROWS = 2;
/**
 * Hints left off first when the keys do not fit their rows, in this order:
 * what the help (`?`) and the other views offer anyway. Deciding keys,
 * moving, the details and `q` are never left off for these.
 */
const DROPPED_FIRST: readonly string[] = ['1-5', 'o', 'P', '/', 'G', 'n/p', 'p/k/↑', 'j/k', '?'];

/** The hints that fit in HINT_ROWS rows of `width`, low-priority ones left off first; the order is kept. */
function fittingHints(hints: readonly KeyHint[], width: number): KeyHint[] {
  let kept = [...hints];
  for (const key of DROPPED_FIRST) {
    if (layHints(kept, width).length <= HINT_ROWS) break;
    kept = kept.filter((h) => h.key !== key);
  }
  return kept;
}

function hintRows(hints: readonly KeyHint[], width: number): Line[] {
  return layHints(fittingHints(hints, width), width).slice(0, HINT_ROWS);
}

/** Lays key hints out in rows no wider than `width`. */
function layHints(hints: readonly KeyHint[], width: number): Line[] {
  const rows: Line[] = [];
  let row: Seg[] = [];
  let used = 0;
  for (const h of hints) {
    const w = cells(h.key) + 1 + cells(h.label) + 2;
    if (used + w > width && row.length > 0) {
      rows.push(row);
      row = [];
      used = 0;
    }
    row.push({ text: h.key, tone: 'key' }, { text: ` ${clipCells(h.label, Math.max(1, width - cells(h.key) - 3))}  ` });
    used += w;
  }
  if (row.length > 0) rows.push(row);
  return rows;
}

function headerRows(state: OperatorState, ui: UiState, env: Env): Line[] {
  const header: Seg[] = [{ text: 'Postern ', tone: 'title' }];
  VIEWS.forEach((v, i) => {
    const label = `${i + 1} ${VIEW_TITLES[v]}${v === 'approvals' ? ` (${state.pending.length})` : v === 'catalog' && state.catalog !== null ? ' (!)' : ''}`;
    header.push({ text: ` ${label} `, tone: v === ui.view ? 'selected' : 'dim' });
  });
  const badges: Seg[] = [];
  if (env.observe) badges.push({ text: ' observer (read-only) ', tone: 'badge' });
  if (state.locked) badges.push({ text: ' daemon locked ', tone: 'danger' });
  if (state.shipProblem !== null) badges.push({ text: ' journal shipping failing ', tone: 'warn' });
  if (state.vaultBelowFloor) badges.push({ text: ' TEST VAULT: key derivation below the production floor ', tone: 'danger' });
  if (state.pageRun !== null) badges.push({ text: ` page run ${sanitizeForTerminal(state.pageRun, 16)} `, tone: 'badge' });
  if (state.connection === 'closed') badges.push({ text: ' disconnected ', tone: 'danger' });
  if (state.connection === 'connecting') badges.push({ text: ' connecting… ', tone: 'warn' });
  if (badges.length === 0) return [header];
  const width = (segs: Seg[]): number => segs.reduce((n, s) => n + cells(s.text), 0);
  return width(header) + 1 + width(badges) <= env.width ? [[...header, { text: ' ' }, ...badges]] : [header, badges];
}

/**
 * Why a key is not offered, folded at spaces so its end (the key that helps)
 * is not cut: two rows when no message needs the footer's last row.
 */
function statusRows(reason: string, width: number, most: number): Line[] {
  const rows = foldCells(reason, width, '', { atSpaces: true });
  const kept = rows.length <= most ? rows : [...rows.slice(0, most - 1), clipCells(rows.slice(most - 1).join(' '), width)];
  return kept.map((r) => line(r, 'warn'));
}

/** The view's rows and why a key is not offered. */
function body(c: KeyCtx): { lines: Line[]; disabled: string[] } {
  switch (c.ui.view) {
    case 'approvals':
      return c.approvals ?? { lines: [], disabled: [] };
    case 'activity':
      return { ...activityView(c), disabled: [] };
    case 'sessions':
      return { ...sessionsView(c), disabled: [] };
    case 'grants':
      return { ...grantsView(c), disabled: [] };
    case 'catalog':
      return catalogView(c);
  }
}

function footerRows(v: ViewCtx, disabled: readonly string[], hints: readonly KeyHint[]): Line[] {
  const { state, ui, width } = v;
  const mode = ui.mode;
  switch (mode.kind) {
    case 'help':
      return [];
    case 'normal': {
      const out: Line[] = [];
      if (state.connection === 'closed') out.push(line(clipCells(`disconnected: ${sanitizeForTerminal(state.closedReason ?? '', 120)} (q quits)`, width), 'danger'));
      else for (const d of disabled.slice(0, 1)) out.push(...statusRows(d, width, ui.message === null ? 2 : 1));
      out.push(...hintRows(hints, width));
      if (ui.message !== null) out.push(line(clipCells(ui.message, width), 'warn'));
      if (ui.pairing !== null) for (const row of pairingRows(ui.pairing)) out.push(...foldCells(row, width).map((r) => line(r, 'key')));
      return out;
    }
    case 'filter':
      return [
        [{ text: 'filter: ', tone: 'key' }, { text: clipCells(sanitizeForTerminal(mode.draft, 400), Math.max(1, width - 10)) }, { text: '▏' }],
        line('Enter applies · Esc cancels · empty clears', 'dim'),
      ];
    case 'reason':
      return [
        [{ text: 'deny reason: ', tone: 'key' }, { text: clipCells(sanitizeForTerminal(mode.draft, REASON_MAX), Math.max(1, width - 16)) }, { text: '▏' }],
        line('Enter denies with this reason · Esc cancels', 'dim'),
      ];
    case 'pair-name':
      return [
        [{ text: 'pair a device named: ', tone: 'key' }, { text: clipCells(sanitizeForTerminal(mode.draft, 64), Math.max(1, width - 24)) }, { text: '▏' }],
        line('Enter opens a one-time pairing code for the approval page · Esc cancels', 'dim'),
      ];
    case 'confirm':
      return [line(clipCells(`${mode.question} y/N`, width), 'warn')];
  }
}

/** Every row of the frame, top to bottom. */
export function screenLines(env: Env, state: OperatorState, ui: UiState): Line[] {
  const head = headerRows(state, ui, env);
  let lines: Line[];
  let foot: Line[];
  if (ui.mode.kind === 'help') {
    lines = helpLines(env.width, env.observe);
    foot = [];
  } else {
    const c = keyCtx(viewCtx(env, state, ui));
    const b = body(c);
    lines = b.lines;
    foot = footerRows(c, b.disabled, hintsOf([viewKeys(ui), GLOBAL_KEYS], c));
  }
  const room = Math.max(1, env.rows - head.length - foot.length);
  const shown = lines.slice(0, room);
  while (shown.length < room) shown.push([]);
  return [...head, ...shown, ...foot];
}
