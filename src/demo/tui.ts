/**
 * The demo in a terminal: after the story (or instead of it, with
 * `--no-agent`), the operator terminal UI opens on the demo's daemon, so a
 * newcomer sees the activity the story left, the sessions and grants, and
 * can point a real agent at the demo (the snippet printed above) and approve
 * its calls by hand. Quitting the UI ends the demo.
 *
 * Invariants: used only with an interactive terminal (the caller checks);
 * the UI attaches over the same authenticated operator channel `postern
 * attach` uses, as an operator; the connection is closed when the UI ends,
 * and the caller's clean-up stops the daemon and removes the home.
 */
import { createInterface } from 'node:readline/promises';
import type { Clock } from '../clock/index.js';
import { connectOperator } from '../protocol/operator/connect.js';
import type { DemoWorld } from './world.js';
import { loadTui } from '../tui/load.js';

/** Waits for Enter (true) or the end of input / an interruption (false). */
async function enterPressed(prompt: string, signal: AbortSignal): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    await rl.question(prompt, { signal });
    return true;
  } catch {
    return false;
  } finally {
    rl.close();
  }
}

export async function operateInTui(world: DemoWorld, clock: Clock, signal: AbortSignal): Promise<void> {
  if (!(await enterPressed('Press Enter to open the operator terminal UI on this demo (q there ends the demo; Ctrl-C ends it now) ', signal))) return;
  const client = await connectOperator(world.paths.operatorSocket, world.operatorKey, { role: 'operator' });
  try {
    const { runTui } = await loadTui();
    await runTui(client, { observe: false, now: () => clock.now().getTime(), monotonicMs: () => clock.monotonicMs() });
  } finally {
    client.close();
  }
}
