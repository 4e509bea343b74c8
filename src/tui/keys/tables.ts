/**
 * Every key of the TUI, as data: one list per view (the approvals view has
 * two, the compact card and the details), one for everywhere, and one per
 * pop-up mode (MODE_KEYS: the help, a question, the prompts), each with what
 * any other key does there. The key bar shows the entries whose `shown`
 * holds, the `?` screen lists the views' and everywhere's (an observer's
 * leaves out the deciding ones), and the reducer runs `modeStep`: the first
 * entry that answers to a key — ANYWHERE_KEYS, then the mode's (in the
 * normal mode, the view's before everywhere) — else the mode's `otherwise`.
 */
import { presentation, type ApprovalCard, type Seen } from '../contract.js';
import { acceptBlocked } from '../views/catalog.js';
import { visibleGrants } from '../views/grants.js';
import { VIEWS, type Mode, type Step, type UiState, type ViewId } from '../ui.js';
import { always, match, never, type KeyEntry, type KeyPress } from './keymap.js';
import {
  askQuit,
  closeHelp,
  closeMode,
  confirmed,
  erase,
  confirmCatalog,
  cycleView,
  decision,
  escape,
  followTail,
  gate,
  moveCard,
  moveCursor,
  openFilter,
  openHelp,
  quitAnywhere,
  revokeGrant,
  say,
  scroll,
  showView,
  startPairing,
  startReason,
  submitPrompt,
  toggleDetails,
  toggleOrder,
  typeInto,
  keyCtx,
  type KeyCtx,
  type Prompt,
} from './actions.js';

export type Entry = KeyEntry<KeyCtx, Step>;

/** What an approval sent from here says was seen: the card's presentation (a deciding key runs only once `offers` holds it seen). */
const seenOf = (card: ApprovalCard): Seen => ({ presentation: presentation(card).digest });

const offered = (what: 'approveOnce' | 'approveSession' | 'deny') => (c: KeyCtx): boolean => !c.observe && c.approvals?.offers[what].ok === true;

const FILTER_HINT: Readonly<Partial<Record<ViewId, string>>> = { activity: 'filter (session: tool: status: decision: error)' };

/** The keys that answer in every mode — a prompt, a question, the help — before the mode's own (the reducer reads them first). */
export const ANYWHERE_KEYS: readonly Entry[] = [
  { keys: ['ctrl-c'], key: 'Ctrl-C', description: 'quit', help: 'quit (asks when calls are waiting)', shown: never, handler: quitAnywhere },
];

export const GLOBAL_KEYS: readonly Entry[] = [
  {
    keys: ['/'], key: '/', description: (c) => FILTER_HINT[c.ui.view] ?? 'filter', help: 'filter: words or field:value (Enter applies, Esc cancels)',
    shown: (c) => c.ui.view !== 'catalog', handler: (c) => (c.ui.view === 'catalog' ? say(c.ui, 'the catalog view has no filter') : openFilter(c)),
  },
  {
    keys: ['1', '2', '3', '4', '5', 'tab', 'shift-tab'], key: '1-5', description: 'views', help: 'switch view; Tab / Shift-Tab: the next / previous one', shown: always,
    handler: (c, k) => (k.name === 'tab' || k.name === 'shift-tab' ? cycleView(c, k.name === 'tab' ? 1 : -1) : showView(c, VIEWS[Number(k.name) - 1])),
  },
  { keys: ['?'], key: '?', description: 'help', help: 'this help', shown: always, handler: openHelp },
  {
    keys: ['P'], key: 'P', description: 'pair a device', help: 'pair a browser with the approval page: name it, then a one-time code and link (the page must be enabled)', decides: true,
    shown: never, handler: startPairing,
  },
  { keys: ['q'], key: 'q', description: 'quit', help: 'quit, from any view (asks when calls are waiting); Esc goes back', shown: always, handler: askQuit },
  { keys: ['esc'], key: 'Esc', description: 'back', help: 'back (details, a filter, a view); never quits', shown: never, handler: escape },
  ...ANYWHERE_KEYS,
];

const DECIDE_KEYS: readonly Entry[] = [
  {
    keys: ['a'], key: 'a', description: 'approve once', help: 'approve this call once', decides: true, shown: offered('approveOnce'),
    handler: (c) => gate(c, 'approveOnce', 'a', (card) => decision(c.ui, card, { verdict: 'approve', scope: 'once', call_digest: card.call_digest, seen: seenOf(card) }, 'approve once')),
  },
  {
    keys: ['s'], key: 's', description: 'approve for session', help: 'approve for the session (not widening or part-shown cards)', decides: true, shown: offered('approveSession'),
    handler: (c) => gate(c, 'approveSession', 's', (card) => decision(c.ui, card, { verdict: 'approve', scope: 'session', call_digest: card.call_digest, seen: seenOf(card) }, 'approve for session')),
  },
  {
    keys: ['d'], key: 'd', description: 'deny', help: 'deny', decides: true, shown: offered('deny'),
    handler: (c) => gate(c, 'deny', 'd', (card) => decision(c.ui, card, { verdict: 'deny', reason: null }, 'deny')),
  },
  {
    keys: ['r'], key: 'r', description: 'deny with reason', help: 'deny with a reason (type it, Enter sends, Esc cancels)', decides: true, shown: offered('deny'),
    handler: (c) => gate(c, 'deny', 'r', (card) => startReason(c, card)),
  },
];

const DETAILS_TOGGLE: Entry = {
  keys: ['x', 'enter'], key: 'x', description: (c) => (c.ui.expanded ? 'compact' : 'details'), help: 'details: the whole card; again: the compact card (Enter too)', shown: always, handler: toggleDetails,
};

export const CARD_KEYS: readonly Entry[] = [
  ...DECIDE_KEYS,
  { keys: ['n', 'j', 'down', 'right'], key: 'n/j/↓', description: 'next', help: 'next waiting call (→ too)', shown: always, handler: (c) => moveCard(c, 1) },
  { keys: ['p', 'k', 'up', 'left'], key: 'p/k/↑', description: 'previous', help: 'previous waiting call (← too)', shown: always, handler: (c) => moveCard(c, -1) },
  DETAILS_TOGGLE,
  { keys: ['o'], key: 'o', description: (c) => (c.ui.bySession ? 'oldest first' : 'by session'), help: 'order the queue session by session, or oldest first', shown: never, handler: toggleOrder },
];

const SCROLL: Readonly<Record<string, (at: number, max: number, page: number) => number>> = {
  j: (at) => at + 1,
  down: (at) => at + 1,
  k: (at) => at - 1,
  up: (at) => at - 1,
  space: (at, _max, page) => at + page,
  pgdn: (at, _max, page) => at + page,
  pgup: (at, _max, page) => at - page,
  g: () => 0,
  G: (_at, max) => max,
};

export const DETAILS_KEYS: readonly Entry[] = [
  ...DECIDE_KEYS,
  { keys: ['n', 'right', 'p', 'left'], key: 'n/p', description: 'next/previous', help: 'next / previous waiting call (→/← too)', shown: always, handler: (c, k) => moveCard(c, k.name === 'n' || k.name === 'right' ? 1 : -1) },
  { keys: Object.keys(SCROLL), key: 'j/k', description: 'scroll', help: 'scroll: j/k a row, Space/PgDn/PgUp a page, g/G top/bottom', shown: always, handler: (c, k) => scroll(c, SCROLL[k.name] ?? ((at) => at)) },
  DETAILS_TOGGLE,
];

/** Moves the cursor of every list (the catalog's only when a catalog is waiting). */
const MOVE: Entry = {
  keys: ['j', 'down', 'k', 'up'], key: 'j/k', description: 'move', help: 'move down/up in a list (↓/↑ too)', shown: (c) => c.ui.view !== 'catalog' || c.state.catalog !== null,
  handler: (c, k) => moveCursor(c, k.name === 'j' || k.name === 'down' ? 1 : -1),
};

const ACTIVITY_KEYS: readonly Entry[] = [MOVE, { keys: ['G'], key: 'G', description: 'follow tail', help: 'follow the tail', shown: always, handler: followTail }];

const SESSIONS_KEYS: readonly Entry[] = [MOVE];

const GRANTS_KEYS: readonly Entry[] = [
  MOVE,
  { keys: ['r'], key: 'r', description: 'revoke', help: 'revoke the selected grant', decides: true, shown: (c) => !c.observe && !c.state.locked && visibleGrants(c).length > 0, handler: revokeGrant },
];

const catalogOpen = (c: KeyCtx): boolean => !c.observe && !c.state.locked && c.state.catalog !== null;
const CATALOG_KEYS: readonly Entry[] = [
  MOVE,
  { keys: ['A'], key: 'A', description: 'accept', help: 'accept the pending catalog (asks first)', decides: true, shown: (c) => catalogOpen(c) && c.state.catalog !== null && acceptBlocked(c.state.catalog) === null, handler: (c) => confirmCatalog(c, true) },
  { keys: ['R'], key: 'R', description: 'reject', help: 'reject the pending catalog (asks first)', decides: true, shown: catalogOpen, handler: (c) => confirmCatalog(c, false) },
];

/** The current view's keys (the approvals view: the compact card's or the details'). */
export function viewKeys(ui: UiState): readonly Entry[] {
  switch (ui.view) {
    case 'approvals':
      return ui.expanded ? DETAILS_KEYS : CARD_KEYS;
    case 'activity':
      return ACTIVITY_KEYS;
    case 'sessions':
      return SESSIONS_KEYS;
    case 'grants':
      return GRANTS_KEYS;
    case 'catalog':
      return CATALOG_KEYS;
  }
}

/** The `?` screen's sections: every list, each entry under the first view that has it. */
export const KEY_SECTIONS: ReadonlyArray<{ readonly title: string; readonly keys: readonly Entry[] }> = (() => {
  const seen = new Set<Entry>();
  const once = (list: readonly Entry[]): Entry[] => list.filter((e) => !seen.has(e) && seen.add(e) !== undefined);
  return [
    { title: 'Everywhere', keys: once(GLOBAL_KEYS) },
    { title: 'Approvals', keys: once(CARD_KEYS) },
    { title: 'Details', keys: once(DETAILS_KEYS) },
    { title: 'Activity', keys: once(ACTIVITY_KEYS) },
    { title: 'Sessions', keys: once(SESSIONS_KEYS) },
    { title: 'Grants', keys: once(GRANTS_KEYS) },
    { title: 'Catalog', keys: once(CATALOG_KEYS) },
  ];
})();

type ModeOf<K extends Mode['kind']> = Extract<Mode, { kind: K }>;

/** What a mode's keys read: the key context and the mode on screen, narrowed. */
interface ModeCtx<M extends Mode> extends KeyCtx {
  readonly mode: M;
}

/** A mode's keys: its entries (read after ANYWHERE_KEYS), and what any key none of them answers does. */
interface ModeKeys<M extends Mode> {
  readonly entries: ReadonlyArray<KeyEntry<ModeCtx<M>, Step>>;
  readonly otherwise: (c: ModeCtx<M>, k: KeyPress) => Step;
}

/** The normal mode's keys: the view's, then everywhere's; any key first clears the message and the pairing code shown. */
function normalKey(c: KeyCtx, k: KeyPress): Step {
  const cc = c.ui.message === null && c.ui.pairing === null ? c : { ...c, ui: { ...c.ui, message: null, pairing: null } };
  const entry = match([viewKeys(cc.ui), GLOBAL_KEYS], k);
  return entry === undefined ? { ui: cc.ui } : entry.handler(cc, k);
}

const PROMPT_ENTER: Readonly<Record<Prompt['kind'], string>> = { filter: 'applies', reason: 'denies with this reason', 'pair-name': 'opens a pairing code' };

/** The pop-up modes' keys, and the normal mode's (the view tables above). */
export const MODE_KEYS: { readonly [K in Mode['kind']]: ModeKeys<K extends Prompt['kind'] ? Prompt : ModeOf<K>> } = (() => {
  const prompt: ModeKeys<Prompt> = {
    entries: [
      { keys: ['esc'], key: 'Esc', description: 'cancels', shown: always, handler: closeMode },
      { keys: ['enter'], key: 'Enter', description: (c) => PROMPT_ENTER[c.mode.kind], shown: always, handler: (c) => submitPrompt(c, c.mode) },
      { keys: ['backspace'], key: 'Backspace', description: 'erases', shown: never, handler: (c) => erase(c, c.mode) },
    ],
    // Typed and pasted text is taken whole; a key that types nothing does nothing.
    otherwise: (c, k) => typeInto(c, c.mode, k.text),
  };
  return {
    normal: { entries: [], otherwise: normalKey },
    help: {
      entries: [{ keys: ['esc', '?'], key: 'Esc/?', description: 'close', help: 'close the help; any other key closes it and then does its job', shown: always, handler: (c) => ({ ui: closeHelp(c) }) }],
      otherwise: (c, k) => normalKey(keyCtx({ ...c, ui: closeHelp(c) }), k),
    },
    // A question is answered yes by `y` only; any other key is no.
    confirm: {
      entries: [{ keys: ['y', 'Y'], key: 'y', description: 'yes', shown: always, handler: (c) => confirmed(c, c.mode.action) }],
      otherwise: closeMode,
    },
    filter: prompt,
    reason: prompt,
    'pair-name': prompt,
  };
})();

function run<M extends Mode>(keys: ModeKeys<M>, c: KeyCtx, mode: M, k: KeyPress): Step {
  const mc: ModeCtx<M> = { ...c, mode };
  const entry = match<ModeCtx<M>, Step>([ANYWHERE_KEYS, keys.entries], k);
  return entry === undefined ? keys.otherwise(mc, k) : entry.handler(mc, k);
}

/** What a key does in the mode on screen: the first entry of ANYWHERE_KEYS and the mode's that answers to it, else the mode's `otherwise`. */
export function modeStep(c: KeyCtx, k: KeyPress): Step {
  const mode = c.ui.mode;
  switch (mode.kind) {
    case 'normal':
      return run(MODE_KEYS.normal, c, mode, k);
    case 'help':
      return run(MODE_KEYS.help, c, mode, k);
    case 'confirm':
      return run(MODE_KEYS.confirm, c, mode, k);
    case 'filter':
    case 'reason':
    case 'pair-name':
      return run(MODE_KEYS[mode.kind], c, mode, k);
  }
}
