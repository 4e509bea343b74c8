/**
 * Mounting the real TUI with ink-testing-library for a test: the fake
 * client, a fixed wall clock, a monotonic clock, and helpers that wait for a
 * frame to show something (they listen to the frames written, never sleep).
 *
 * The default monotonic clock is a patient operator's: every reading is a
 * second after the one before, so the decision pause (focus.ts) has always
 * passed by the next key. A test of the pause passes a clock it moves itself.
 */
import { render } from 'ink-testing-library';
import { App } from '../../../src/tui/app.js';
import type { FakeOperator } from './fake-client.js';

export const T0 = Date.parse('2026-01-01T00:00:30.000Z');

/** A monotonic clock that advances a second on every reading. */
export function patientClock(): () => number {
  let t = 0;
  return () => (t += 1000);
}

/** A monotonic clock the test moves: `clock()` reads it, `clock.advance(ms)` moves it. */
export function manualClock(start = 0): (() => number) & { advance(ms: number): void } {
  let t = start;
  return Object.assign(() => t, { advance: (ms: number) => void (t += ms) });
}

export interface Mounted {
  frame(): string;
  /** Every frame written so far, oldest first. */
  frames(): readonly string[];
  waitFor(pred: (frame: string) => boolean, what: string): Promise<string>;
  press(keys: string): void;
  readonly quits: number;
  /** Settles when the TUI calls onQuit. */
  readonly quitted: Promise<void>;
  unmount(): void;
}

export function mount(
  client: FakeOperator,
  opts: { observe?: boolean; now?: () => number; monotonicMs?: () => number; attention?: (n: number, ring: boolean) => void } = {},
): Mounted {
  const state = { quits: 0 };
  let quitNow!: () => void;
  const quitted = new Promise<void>((r) => (quitNow = r));
  const inst = render(
    <App
      client={client}
      observe={opts.observe ?? client.role === 'observer'}
      now={opts.now ?? (() => T0)}
      monotonicMs={opts.monotonicMs ?? patientClock()}
      noColor={true}
      onAttention={opts.attention}
      onQuit={() => {
        state.quits += 1;
        quitNow();
      }}
      tickMs={60_000}
    />,
  );
  const waiters: (() => void)[] = [];
  const write = inst.stdout.write;
  inst.stdout.write = (f: string) => {
    write(f);
    for (const w of waiters.slice()) w();
  };
  const frame = (): string => inst.lastFrame() ?? '';
  return {
    frame,
    frames: () => inst.frames,
    get quits() {
      return state.quits;
    },
    quitted,
    waitFor(pred, what) {
      if (pred(frame())) return Promise.resolve(frame());
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}; last frame:\n${frame()}`)), 5000);
        const check = (): void => {
          if (!pred(frame())) return;
          clearTimeout(timer);
          waiters.splice(waiters.indexOf(check), 1);
          resolve(frame());
        };
        waiters.push(check);
      });
    },
    press(keys) {
      inst.stdin.write(keys);
    },
    unmount() {
      inst.unmount();
      inst.cleanup();
    },
  };
}
