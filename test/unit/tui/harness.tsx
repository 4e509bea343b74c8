/**
 * Mounting the real TUI with ink-testing-library for a test: the fake
 * client, a fixed clock, and helpers that wait for a frame to show
 * something (they listen to the frames written, never sleep).
 */
import { render } from 'ink-testing-library';
import { App } from '../../../src/tui/app.js';
import type { FakeOperator } from './fake-client.js';

export const T0 = Date.parse('2026-01-01T00:00:30.000Z');

export interface Mounted {
  frame(): string;
  waitFor(pred: (frame: string) => boolean, what: string): Promise<string>;
  press(keys: string): void;
  readonly quits: number;
  /** Settles when the TUI calls onQuit. */
  readonly quitted: Promise<void>;
  unmount(): void;
}

export function mount(client: FakeOperator, opts: { observe?: boolean; now?: () => number; attention?: (n: number, ring: boolean) => void } = {}): Mounted {
  const state = { quits: 0 };
  let quitNow!: () => void;
  const quitted = new Promise<void>((r) => (quitNow = r));
  const inst = render(
    <App
      client={client}
      observe={opts.observe ?? client.role === 'observer'}
      now={opts.now ?? (() => T0)}
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
