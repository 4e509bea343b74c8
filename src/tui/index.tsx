/**
 * The entry point of the operator TUI. `runTui` renders the app on a
 * terminal for a connected OperatorClient and resolves when the operator
 * quits (or the app is unmounted); it never closes the client itself — the
 * caller owns the connection and what quitting means (`postern up` locks and
 * stops the daemon, `postern attach` just disconnects).
 *
 * Invariants: stdin that cannot be put in raw mode is refused with
 * TUI_NO_TTY before anything is drawn; ink redraws at most MAX_FPS frames a
 * second inside synchronized updates; NO_COLOR turns colours off; the bell and the terminal title are
 * written only to a TTY.
 *
 * @example
 *   await runTui(client, { observe: false, now: () => clock.now().getTime(), monotonicMs: () => clock.monotonicMs() });
 */
import './interactive.js';
import { render } from 'ink';
import { PosternError } from '../rules/errors.js';
import type { OperatorClient } from './contract.js';
import { App } from './app.js';

export type { OperatorClient } from './contract.js';

interface TuiOptions {
  readonly observe: boolean;
  /** Wall-clock milliseconds; the countdowns read it. */
  readonly now: () => number;
  /** Monotonic milliseconds; the decision pause (deciding keys wait after the card on screen changes) reads it. */
  readonly monotonicMs: () => number;
  readonly stdin?: NodeJS.ReadStream;
  readonly stdout?: NodeJS.WriteStream;
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly onQuit?: () => void;
}

const MAX_FPS = 20;

/** Terminal title and bell: OSC 0 with the pending count, BEL on a new arrival. */
function attentionWriter(out: NodeJS.WriteStream): (pending: number, ring: boolean) => void {
  return (pending, ring) => {
    if (out.isTTY !== true) return;
    out.write(`\x1b]0;postern: ${pending} pending\x07${ring ? '\x07' : ''}`);
  };
}

export async function runTui(client: OperatorClient, opts: TuiOptions): Promise<void> {
  const stdin = opts.stdin ?? process.stdin;
  const stdout = opts.stdout ?? process.stdout;
  const env = opts.env ?? process.env;
  if (stdin.isTTY !== true || typeof stdin.setRawMode !== 'function') {
    throw new PosternError('TUI_NO_TTY', 'the terminal UI needs an interactive terminal (stdin is not a TTY); use `postern approvals …` instead');
  }
  const noColor = env['NO_COLOR'] !== undefined && env['NO_COLOR'] !== '';
  let quitting = false;
  const instance = render(
    <App
      client={client}
      observe={opts.observe || client.role === 'observer'}
      now={opts.now}
      monotonicMs={opts.monotonicMs}
      noColor={noColor}
      onAttention={attentionWriter(stdout)}
      onQuit={() => {
        quitting = true;
        opts.onQuit?.();
      }}
    />,
    // Not ink's incrementalRendering: in ink 6.8 it moves the cursor one row
    // short when the frame fills the screen, and the card scrolls off the top
    // (the xterm render test shows it). Every frame is the full height and is
    // written inside a synchronized update (DEC 2026), at most MAX_FPS a second.
    { stdin, stdout, exitOnCtrlC: false, patchConsole: false, maxFps: MAX_FPS },
  );
  try {
    await instance.waitUntilExit();
  } finally {
    if (!quitting) instance.unmount();
    if (stdout.isTTY === true) stdout.write('\x1b]0;\x07');
  }
}
