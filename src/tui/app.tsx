/**
 * The operator TUI's wiring: the daemon's state from the operator
 * connection, the UI state, and the frame. Every decision about a key is the
 * reducer's (reducer.ts); every row is the screen's (screen.ts); this file
 * only feeds them, sends what the reducer asks for, and draws.
 *
 * Invariants: both states live in one ref updated at once, so keys typed
 * faster than a frame (a pasted reason, then Enter) each act on the state
 * the previous one left, and the focus is settled in the same step as the
 * state that moved it; an observer's requests never leave (the reducer asks
 * for none); the frame is redrawn when the decision pause ends.
 */
import { useCallback, useEffect, useReducer, useRef, useState } from 'react';
import { Box, useApp, useInput, useStdout, type Key } from 'ink';
import type { OperatorClient } from './contract.js';
import { pauseLeft } from './views/focus.js';
import { keyOf } from './keys/keymap.js';
import { Rows } from './lines.js';
import { refocus, settle, step, type Outcome } from './reducer.js';
import { screenLines } from './screen.js';
import { initialState, reduce, type OperatorState, type StateAction } from './state.js';
import { initialUi, type Env, type UiRequest, type UiState } from './ui.js';
import { useOperatorFeed } from './use-operator.js';
import { rowWidth } from '../rules/terminal-text.js';

interface AppProps {
  readonly client: OperatorClient;
  readonly observe: boolean;
  /** Wall-clock milliseconds (the caller's injected clock): countdowns. */
  readonly now: () => number;
  /** Monotonic milliseconds (the caller's injected clock): the decision pause. */
  readonly monotonicMs: () => number;
  readonly noColor: boolean;
  /** Told the pending count on every change; `ring` when a new call arrived. */
  readonly onAttention?: (pending: number, ring: boolean) => void;
  readonly onQuit: () => void;
  readonly tickMs?: number;
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
    return () => void stdout.off('resize', onResize);
  });
  return size;
}

export function App(props: AppProps) {
  const { client, observe, onAttention } = props;
  const size = useTerminalSize();
  const model = useRef<{ state: OperatorState; ui: UiState }>({ state: initialState, ui: initialUi });
  const [, redraw] = useReducer((n: number) => n + 1, 0);
  const alive = useRef(new AbortController());
  const { exit } = useApp();
  // One row short of the screen: ink redraws the whole screen when the frame fills it (flicker);
  // rows stop ROW_MARGIN short of the last column.
  const env = (): Env => ({ observe, width: rowWidth(size.columns), rows: size.rows - 1, wallMs: props.now(), monoMs: props.monotonicMs() });

  const commit = (state: OperatorState, ui: UiState): void => {
    model.current = { state, ui };
    redraw();
  };
  useOperatorFeed(client, (a: StateAction) => {
    const state = reduce(model.current.state, a);
    commit(state, refocus(model.current.ui, state, props.monotonicMs()));
  });

  const send = (r: UiRequest): void => {
    const answered = (o: Outcome): void => commit(model.current.state, settle(model.current.ui, r, o));
    const opts = { signal: alive.current.signal };
    const sent: Promise<unknown> = client.request(r.op, r.params, opts);
    sent.then((result: unknown) => answered({ ok: true, result }), (error: unknown) => answered({ ok: false, error }));
  };
  const onKey = (input: string, key: Key): void => {
    const m = model.current;
    const out = step(m.ui, m.state, keyOf(input, key), env());
    commit(m.state, out.ui);
    if (out.request !== undefined && !observe) send(out.request);
    if (out.quit === true) {
      props.onQuit();
      exit();
    }
  };
  // The handler of the frame last drawn (the terminal size it read), called through a stable callback.
  const keyHandler = useRef(onKey);
  keyHandler.current = onKey;
  useInput(useCallback((input: string, key: Key) => keyHandler.current(input, key), []));

  useEffect(() => {
    const ac = alive.current;
    return () => ac.abort();
  }, []);
  const tickMs = props.tickMs ?? 1000;
  useEffect(() => {
    const t = setInterval(redraw, tickMs);
    return () => clearInterval(t);
  }, [tickMs]);
  const { state, ui } = model.current;
  // The bar gets its deciding keys back when the decision pause ends.
  useEffect(() => {
    const left = pauseLeft(ui, props.monotonicMs());
    if (left <= 0) return;
    const t = setTimeout(redraw, left + 1);
    return () => clearTimeout(t);
  }, [ui.pauseFrom]);

  // Attention: the bell when a new call arrives, the title with the count.
  const count = state.pending.length;
  const prevCount = useRef(0);
  useEffect(() => {
    onAttention?.(count, count > prevCount.current);
    prevCount.current = count;
  }, [count, onAttention]);

  return (
    <Box flexDirection="column" width={size.columns}>
      <Rows lines={screenLines(env(), state, ui)} width={rowWidth(size.columns)} noColor={props.noColor} />
    </Box>
  );
}
