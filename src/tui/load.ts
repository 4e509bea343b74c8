/**
 * How a command opens the terminal UI: `const { runTui } = await loadTui()`.
 * ink decides when it loads whether it runs in CI (src/tui/interactive.ts):
 * `loadTui` first runs that module, which turns the detection off, and only
 * then imports the UI and ink. The order is then the program's, not the
 * module loader's or the bundler's: in the bundle that runs, a bundler may
 * order the side effects of shared chunks otherwise than the sources do.
 */
import type * as Tui from './index.js';

export async function loadTui(): Promise<typeof Tui> {
  await import('./interactive.js');
  return import('./index.js');
}
