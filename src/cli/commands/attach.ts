/**
 * `postern attach [--observe]` — the operator terminal UI (src/tui) on a
 * running `postern daemon`, over the authenticated operator socket. The
 * passphrase is asked once per attachment; `--observe` connects as an
 * observer, which the daemon refuses every deciding op from, and the TUI
 * shows no deciding key.
 *
 * Invariants: a stdin that is not a terminal is refused (TUI_NO_TTY) before
 * the passphrase is asked; the TUI is loaded only by this command (ink and
 * React stay out of every other command's start-up); leaving the TUI closes
 * the connection and leaves the daemon running.
 */
import type { Command } from 'commander';
import { examples } from '../help.js';
import { PosternError } from '../../rules/errors.js';
import { contextFor } from '../context.js';
import { withOperator, type ApprovalsDeps } from './approvals.js';
import { loadTui } from '../../tui/load.js';

export const NO_TTY_MESSAGE = 'the terminal UI needs an interactive terminal (stdin is not a TTY); use `postern approvals …` instead';

export function registerAttach(program: Command, deps: ApprovalsDeps = {}): void {
  program
    .command('attach')
    .description('open the operator terminal UI on a running `postern daemon` (asks for the vault passphrase once)')
    .addHelpText('after', examples([
      'postern attach             # review and decide every waiting card with one unlock',
      'postern attach --observe   # read-only',
    ]))
    .option('--observe', 'read-only: watch approvals and activity without deciding anything')
    .action(async (o: { observe?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      if (process.stdin.isTTY !== true || typeof process.stdin.setRawMode !== 'function') throw new PosternError('TUI_NO_TTY', NO_TTY_MESSAGE);
      const observe = o.observe === true;
      const { runTui } = await loadTui();
      await withOperator(ctx, deps, (client) => runTui(client, { observe, now: () => ctx.clock.now().getTime(), monotonicMs: () => ctx.clock.monotonicMs() }), observe ? 'observer' : 'operator');
    });
}
