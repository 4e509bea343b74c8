/**
 * The operator TUI: a header with the views and badges, the current view's
 * rows, and a footer with the key-help bar. Everything shown is a function of
 * the daemon's state (fed by the OperatorClient's subscription) and the UI
 * state; everything decided goes back through `client.request(...)`.
 *
 * Invariants: a deciding key acts on the card on screen and names it by id
 * and call digest, so each card gets its own decision whatever arrives
 * meanwhile; a new card never moves the operator off the one on screen; an
 * observer sends no request at all; rows never exceed the terminal width.
 */
import { useCallback, useEffect, useRef, useState } from 'react';
import { Box, useApp, useInput, useStdout, type Key } from 'ink';
import type { ApprovalCard, OperatorClient, OperatorOp, OperatorParams, OperatorVerdict } from './contract.js';
import { Rows, line, type Line, type Seg } from './lines.js';
import { cells, clipCells } from './text.js';
import { useOperatorState } from './use-operator.js';
import { VIEWS, VIEW_TITLES, initialUi, type KeyHint, type UiState, type ViewCtx, type ViewId, type ConfirmAction, type Mode } from './ui.js';
import { approvalsView, focusIndex, focusedCard } from './views/approvals.js';
import { activityView, visibleActivity } from './views/activity.js';
import { sessionsView, visibleSessions } from './views/sessions.js';
import { grantsView, visibleGrants } from './views/grants.js';
import { acceptBlocked, catalogView } from './views/catalog.js';
import { helpLines } from './views/help.js';
import { sanitizeForTerminal } from '../rules/terminal-text.js';

export interface AppProps {
  readonly client: OperatorClient;
  readonly observe: boolean;
  /** Wall-clock milliseconds (the caller's injected clock). */
  readonly now: () => number;
  readonly noColor: boolean;
  /** Told the pending count on every change; `ring` when a new call arrived. */
  readonly onAttention?: (pending: number, ring: boolean) => void;
  readonly onQuit: () => void;
  readonly tickMs?: number;
}

const REASON_MAX = 500;
/** Rows kept for the footer: a status line, two rows of keys, a message. */
const FOOTER_ROWS = 4;

function errorText(e: unknown): string {
  if (typeof e === 'object' && e !== null) {
    const code = 'code' in e && typeof e.code === 'string' ? `${e.code}: ` : '';
    const msg = 'message' in e && typeof e.message === 'string' ? e.message : 'request failed';
    return sanitizeForTerminal(`${code}${msg}`, 300);
  }
  return 'request failed';
}

function useTerminalSize(): { columns: number; rows: number } {
  const { stdout } = useStdout();
  const read = (): { columns: number; rows: number } => ({
    columns: Math.max(20, stdout.columns > 0 ? stdout.columns : 80),
    rows: Math.max(10, typeof stdout.rows === 'number' && stdout.rows > 0 ? stdout.rows : 24),
  });
  const [size, setSize] = useState(read);
  useEffect(() => {
    const onResize = (): void => setSize(read());
    stdout.on('resize', onResize);
    return () => {
      stdout.off('resize', onResize);
    };
  });
  return size;
}

/** Lays key hints out in rows no wider than `width`. */
function hintRows(hints: readonly KeyHint[], width: number): Line[] {
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

export function App(props: AppProps) {
  const { client, observe } = props;
  const state = useOperatorState(client);
  const [ui, setUi] = useState<UiState>(initialUi);
  const size = useTerminalSize();
  const width = size.columns;
  // One row short of the screen: ink redraws the whole screen when the frame fills it (flicker).
  const height = size.rows - 1;
  const [, setTick] = useState(0);
  const mine = useRef(new Set<string>());
  const lastIndex = useRef(0);
  const alive = useRef(new AbortController());
  const { exit } = useApp();

  useEffect(() => {
    const t = setInterval(() => setTick((n) => n + 1), props.tickMs ?? 1000);
    return () => clearInterval(t);
  }, [props.tickMs]);
  useEffect(() => {
    const ac = alive.current;
    return () => ac.abort();
  }, []);

  // Attention: bell when a new call arrives, title with the count.
  const prevCount = useRef(0);
  const count = state.pending.length;
  const { onAttention } = props;
  useEffect(() => {
    onAttention?.(count, count > prevCount.current);
    prevCount.current = count;
  }, [count, onAttention]);

  // Focus: the first card when nothing is on screen; the next one after the
  // operator's own decision; a card resolved elsewhere stays named until the operator moves.
  useEffect(() => {
    const idx = state.pending.findIndex((c) => c.id === ui.focusId);
    if (idx >= 0) {
      lastIndex.current = idx;
      return;
    }
    const first = state.pending[0];
    if (ui.focusId === null) {
      if (first !== undefined) setUi((u) => ({ ...u, focusId: first.id, scroll: 0 }));
      return;
    }
    const decidedHere = mine.current.has(ui.focusId);
    const unknown = state.resolved[ui.focusId] === undefined;
    if (decidedHere || unknown) {
      mine.current.delete(ui.focusId);
      const next = state.pending[Math.min(lastIndex.current, state.pending.length - 1)];
      setUi((u) => ({ ...u, focusId: next?.id ?? null, scroll: 0 }));
    }
  }, [state.pending, state.resolved, ui.focusId]);

  const nowMs = props.now();
  const ctx: ViewCtx = { state, ui, width, height, nowMs, observe };

  // The mode is read by the key handler from this ref, updated at once, so
  // keys typed faster than a frame (a pasted reason, then Enter) all land.
  const modeRef = useRef<Mode>(ui.mode);
  const setMode = useCallback((mode: Mode) => {
    modeRef.current = mode;
    setUi((u) => ({ ...u, mode }));
  }, []);

  const say = useCallback((message: string | null) => setUi((u) => ({ ...u, message })), []);

  const decide = useCallback(
    (card: ApprovalCard, verdict: OperatorVerdict, label: string) => {
      if (observe) return;
      mine.current.add(card.id);
      setUi((u) => ({ ...u, inflight: { ...u.inflight, [card.id]: label }, cardError: omit(u.cardError, card.id), message: null }));
      client.request('approvals.decide', { approval_id: card.id, verdict }, { signal: alive.current.signal }).then(
        () => setUi((u) => ({ ...u, inflight: omit(u.inflight, card.id) })),
        (e: unknown) => {
          mine.current.delete(card.id);
          setUi((u) => ({ ...u, inflight: omit(u.inflight, card.id), cardError: { ...u.cardError, [card.id]: errorText(e) } }));
        },
      );
    },
    [client, observe],
  );

  const send = useCallback(
    <O extends OperatorOp>(op: O, params: OperatorParams<O>, done: string) => {
      if (observe) return;
      client.request(op, params, { signal: alive.current.signal }).then(
        () => say(done),
        (e: unknown) => say(errorText(e)),
      );
    },
    [client, observe, say],
  );

  const quit = useCallback(() => {
    props.onQuit();
    exit();
  }, [props, exit]);

  const askQuit = (): void => {
    if (!observe && state.pending.length > 0 && state.connection === 'open') {
      const n = state.pending.length;
      setMode({ kind: 'confirm', question: `${n} call${n === 1 ? ' is' : 's are'} waiting for a decision. Quit anyway?`, action: { kind: 'quit' } });
    } else quit();
  };

  const runConfirmed = (a: ConfirmAction): void => {
    switch (a.kind) {
      case 'quit':
        quit();
        return;
      case 'catalog.accept':
        send('catalog.accept', { digest: a.digest }, 'catalog accepted');
        return;
      case 'catalog.reject':
        send('catalog.reject', { digest: a.digest }, 'catalog rejected');
        return;
    }
  };

  const listLength = (v: ViewId): number => {
    switch (v) {
      case 'approvals':
        return state.pending.length;
      case 'activity':
        return visibleActivity(ctx).length;
      case 'sessions':
        return visibleSessions(ctx).length;
      case 'grants':
        return visibleGrants(ctx).length;
      case 'catalog':
        return state.catalog?.changes.length ?? 0;
    }
  };

  const moveCursor = (delta: number): void => {
    const v = ui.view;
    const n = listLength(v);
    setUi((u) => {
      const base = u.cursor[v] < 0 ? n - 1 : u.cursor[v];
      return { ...u, cursor: { ...u.cursor, [v]: Math.max(0, Math.min(n - 1, base + delta)) } };
    });
  };

  const moveCard = (delta: number): void => {
    const pending = state.pending;
    if (pending.length === 0) return;
    const cur = focusIndex(ctx);
    const base = cur >= 0 ? cur : Math.min(lastIndex.current, pending.length) - (delta > 0 ? 1 : 0);
    const next = pending[Math.max(0, Math.min(pending.length - 1, base + delta))];
    if (next !== undefined) setUi((u) => ({ ...u, focusId: next.id, scroll: 0, message: null }));
  };

  const view = ui.view;
  const headerRowsCount = observe || state.locked || state.vaultBelowFloor || state.connection !== 'open' ? 2 : 1;
  const vctx: ViewCtx = { ...ctx, height: Math.max(3, height - headerRowsCount - FOOTER_ROWS) };
  const approvals = view === 'approvals' ? approvalsView(vctx) : null;

  const onNormalKey = (input: string, key: Key): void => {
    if (input === '?') return setMode({ kind: 'help' });
    if (input === 'q' || key.escape) {
      if (view === 'approvals' && ui.expanded) return setUi((u) => ({ ...u, expanded: false, scroll: 0 }));
      if (ui.filter[view] !== '' && key.escape) return setUi((u) => ({ ...u, filter: { ...u.filter, [view]: '' } }));
      if (view !== 'approvals') return setUi((u) => ({ ...u, view: 'approvals' }));
      return askQuit();
    }
    const digit = Number.parseInt(input, 10);
    if (input.length === 1 && digit >= 1 && digit <= VIEWS.length) {
      const v = VIEWS[digit - 1];
      if (v !== undefined) setUi((u) => ({ ...u, view: v, message: null }));
      return;
    }
    if (key.tab) {
      const i = VIEWS.indexOf(view);
      const v = VIEWS[(i + (key.shift ? VIEWS.length - 1 : 1)) % VIEWS.length];
      if (v !== undefined) setUi((u) => ({ ...u, view: v, message: null }));
      return;
    }
    if (input === '/' && view !== 'approvals') return setMode({ kind: 'filter', draft: ui.filter[view] });
    const down = input === 'j' || key.downArrow;
    const up = input === 'k' || key.upArrow;
    switch (view) {
      case 'approvals':
        return onApprovalsKey(input, key, down, up);
      case 'activity':
        if (input === 'G') return setUi((u) => ({ ...u, cursor: { ...u.cursor, activity: -1 } }));
        if (down || up) moveCursor(down ? 1 : -1);
        return;
      case 'sessions':
      case 'catalog':
        if (down || up) moveCursor(down ? 1 : -1);
        if (view === 'catalog' && !observe && state.catalog !== null && (input === 'A' || input === 'R')) {
          const digest = state.catalog.digest;
          const accept = input === 'A';
          const blocked = accept ? acceptBlocked(state.catalog) : null;
          if (blocked !== null) return say(blocked);
          if (state.locked) return say('daemon locked: nothing can be decided until it is unlocked');
          const question = `${accept ? 'Accept' : 'Reject'} catalog ${sanitizeForTerminal(digest, 24)}?`;
          setMode({ kind: 'confirm', question, action: { kind: accept ? 'catalog.accept' : 'catalog.reject', digest } });
        }
        return;
      case 'grants': {
        if (down || up) return moveCursor(down ? 1 : -1);
        if (input === 'r' && !observe) {
          if (state.locked) return say('daemon locked: nothing can be decided until it is unlocked');
          const list = visibleGrants(ctx);
          const g = list[Math.min(Math.max(0, ui.cursor.grants), list.length - 1)];
          if (g !== undefined) send('grants.revoke', { id: g.id }, `revoked the grant of ${sanitizeForTerminal(g.tool, 60)}`);
        }
        return;
      }
    }
  };

  const onApprovalsKey = (input: string, key: Key, down: boolean, up: boolean): void => {
    if (input === 'x' || key.return) return setUi((u) => ({ ...u, expanded: !u.expanded, scroll: 0 }));
    if (ui.expanded) {
      const max = approvals?.maxScroll ?? 0;
      const page = Math.max(1, vctx.height - 4);
      const to = (n: number): void => setUi((u) => ({ ...u, scroll: Math.max(0, Math.min(max, n)) }));
      const at = Math.min(ui.scroll, max);
      if (down || up) return to(at + (down ? 1 : -1));
      if (key.pageDown || input === ' ') return to(at + page);
      if (key.pageUp) return to(at - page);
      if (input === 'G') return to(max);
      if (input === 'g') return to(0);
    }
    if (input === 'n' || key.rightArrow || down) return moveCard(1);
    if (input === 'p' || key.leftArrow || up) return moveCard(-1);
    if (observe || approvals === null) {
      if ('asdr'.includes(input) && input !== '') say('observer (read-only): deciding is disabled');
      return;
    }
    const card = focusedCard(ctx);
    const o = approvals.offers;
    const refuse = (r: string | null): void => say(r);
    switch (input) {
      case 'a':
        if (card === null || !o.approveOnce.ok) return refuse(o.approveOnce.reason);
        return decide(card, { verdict: 'approve', scope: 'once', call_digest: card.call_digest }, 'approve once');
      case 's':
        if (card === null || !o.approveSession.ok) return refuse(o.approveSession.reason);
        return decide(card, { verdict: 'approve', scope: 'session', call_digest: card.call_digest }, 'approve for session');
      case 'd':
        if (card === null || !o.deny.ok) return refuse(o.deny.reason);
        return decide(card, { verdict: 'deny', reason: null }, 'deny');
      case 'r':
        if (card === null || !o.deny.ok) return refuse(o.deny.reason);
        return setMode({ kind: 'reason', cardId: card.id, draft: '' });
    }
  };

  // The handler of the frame last drawn: React runs effects after ink has
  // written a frame, so a handler registered by effect could still be the one
  // of the frame before — a key must act on what is on screen.
  const onKey = (input: string, key: Key): void => {
    const mode = modeRef.current;
    if (key.ctrl && input === 'c') {
      if (mode.kind === 'confirm' && mode.action.kind === 'quit') return quit();
      return askQuit();
    }
    switch (mode.kind) {
      case 'help':
        return setMode({ kind: 'normal' });
      case 'confirm':
        setMode({ kind: 'normal' });
        if (input === 'y' || input === 'Y') runConfirmed(mode.action);
        return;
      case 'filter':
      case 'reason': {
        if (key.escape) return setMode({ kind: 'normal' });
        if (key.return) {
          setMode({ kind: 'normal' });
          if (mode.kind === 'filter') return setUi((u) => ({ ...u, filter: { ...u.filter, [u.view]: mode.draft.trim() } }));
          const card = state.pending.find((c) => c.id === mode.cardId);
          if (card === undefined) return say('that request is no longer waiting');
          const reason = mode.draft.trim();
          return decide(card, { verdict: 'deny', reason: reason === '' ? null : reason.slice(0, REASON_MAX) }, 'deny with reason');
        }
        if (key.backspace || key.delete) return setMode({ ...mode, draft: Array.from(mode.draft).slice(0, -1).join('') });
        if (key.ctrl || key.meta || input === '') return;
        return setMode({ ...mode, draft: Array.from(mode.draft + input).slice(0, REASON_MAX).join('') });
      }
      case 'normal':
        if (ui.message !== null) setUi((u) => ({ ...u, message: null }));
        return onNormalKey(input, key);
    }
  };
  const keyHandler = useRef(onKey);
  keyHandler.current = onKey;
  useInput(useCallback((input: string, key: Key) => keyHandler.current(input, key), []));

  // Header: views, badges.
  const header: Seg[] = [{ text: 'Postern ', tone: 'title' }];
  VIEWS.forEach((v, i) => {
    const label = `${i + 1} ${VIEW_TITLES[v]}${v === 'approvals' ? ` (${count})` : v === 'catalog' && state.catalog !== null ? ' (!)' : ''}`;
    header.push({ text: ` ${label} `, tone: v === view ? 'selected' : 'dim' });
  });
  const badges: Seg[] = [];
  if (observe) badges.push({ text: ' observer (read-only) ', tone: 'badge' });
  if (state.locked) badges.push({ text: ' daemon locked ', tone: 'danger' });
  if (state.vaultBelowFloor) badges.push({ text: ' TEST VAULT: key derivation below the production floor ', tone: 'danger' });
  if (state.connection === 'closed') badges.push({ text: ' disconnected ', tone: 'danger' });
  if (state.connection === 'connecting') badges.push({ text: ' connecting… ', tone: 'warn' });
  const headerRows: Line[] = [header];
  const headerWidth = header.reduce((n, s) => n + cells(s.text), 0);
  const badgeWidth = badges.reduce((n, s) => n + cells(s.text), 0);
  if (badges.length > 0) {
    if (headerWidth + 1 + badgeWidth <= width) headerRows[0] = [...header, { text: ' ' }, ...badges];
    else headerRows.push(badges);
  }

  // Footer: the mode's prompt, or why keys are disabled and the key bar.
  const footer: Line[] = [];
  const mode = ui.mode;
  const globalHints: KeyHint[] = [
    { key: '1-5', label: 'views' },
    { key: '?', label: 'help' },
    { key: 'q', label: view === 'approvals' && !ui.expanded ? 'quit' : 'back' },
  ];
  let body: Line[];
  if (mode.kind === 'help') {
    body = helpLines(width, observe);
  } else {
    let hints: KeyHint[] = [];
    let disabled: string[] = [];
    switch (view) {
      case 'approvals': {
        const a = approvals ?? approvalsView(vctx);
        body = a.lines;
        hints = a.hints;
        disabled = a.disabled;
        break;
      }
      case 'activity': {
        const a = activityView(vctx);
        body = a.lines;
        hints = a.hints;
        break;
      }
      case 'sessions': {
        const a = sessionsView(vctx);
        body = a.lines;
        hints = a.hints;
        break;
      }
      case 'grants': {
        const a = grantsView(vctx);
        body = a.lines;
        hints = a.hints;
        break;
      }
      case 'catalog': {
        const a = catalogView(vctx);
        body = a.lines;
        hints = a.hints;
        disabled = a.disabled;
        break;
      }
    }
    switch (mode.kind) {
      case 'normal':
        if (state.connection === 'closed') footer.push(line(clipCells(`disconnected: ${sanitizeForTerminal(state.closedReason ?? '', 120)} (q quits)`, width), 'danger'));
        else for (const d of disabled.slice(0, 1)) footer.push(line(clipCells(d, width), 'warn'));
        footer.push(...hintRows([...hints, ...globalHints], width).slice(0, 2));
        if (ui.message !== null) footer.push(line(clipCells(ui.message, width), 'warn'));
        break;
      case 'filter':
        footer.push([{ text: 'filter: ', tone: 'key' }, { text: clipCells(sanitizeForTerminal(mode.draft, 400), Math.max(1, width - 10)) }, { text: '▏' }]);
        footer.push(line('Enter applies · Esc cancels · empty clears', 'dim'));
        break;
      case 'reason':
        footer.push([{ text: 'deny reason: ', tone: 'key' }, { text: clipCells(sanitizeForTerminal(mode.draft, REASON_MAX), Math.max(1, width - 16)) }, { text: '▏' }]);
        footer.push(line('Enter denies with this reason · Esc cancels', 'dim'));
        break;
      case 'confirm':
        footer.push(line(clipCells(`${mode.question} y/N`, width), 'warn'));
        break;
    }
  }
  const room = Math.max(1, height - headerRows.length - footer.length);
  const shown = body.slice(0, room);
  while (shown.length < room) shown.push([]);
  return (
    <Box flexDirection="column" width={width}>
      <Rows lines={[...headerRows, ...shown, ...footer]} width={width} noColor={props.noColor} />
    </Box>
  );
}

function omit<V>(r: Readonly<Record<string, V>>, key: string): Record<string, V> {
  const { [key]: _drop, ...rest } = r;
  return rest;
}
