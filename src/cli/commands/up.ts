/**
 * `postern up` — the whole operator side in one terminal: unlock the vault
 * once, run the daemon core in a worker thread (so rendering never stalls a
 * call), and open the terminal UI on a private in-process operator port (no
 * socket on disk to authenticate to; agents still reach the daemon through
 * `postern mcp` as usual).
 *
 * Invariants: a stdin that is not a terminal is refused (TUI_NO_TTY) and a
 * running daemon is reported (DAEMON_RUNNING) before the passphrase is asked;
 * the passphrase buffer is zeroed once the worker has its copy; the daemon's
 * log goes to `<home>/run/up.log` (0600; never secret), not over the UI;
 * quitting the UI (which asks first when calls are pending), SIGTERM or
 * SIGHUP stop the daemon cleanly — the vault locked, pending calls voided,
 * journals closed — and nothing is left running.
 */
import type { Command } from 'commander';
import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { assertNoDaemon, ensureRunDir } from '../../home/daemon-lock.js';
import { startDaemonWorker } from '../../daemon/lifecycle/worker.js';
import { connectPortTransport, createOperatorClient } from '../../protocol/operator/index.js';
import { PosternError } from '../../rules/errors.js';
import { contextFor } from '../context.js';
import { examples } from '../help.js';
import { NO_TTY_MESSAGE } from './attach.js';
import { loadTui } from '../../tui/load.js';

const UP_LOG_FILE = 'up.log';

export function registerUp(program: Command): void {
  program
    .command('up')
    .description('unlock the vault once, run the daemon and open the operator terminal UI here; quitting locks the vault and stops the daemon')
    .addHelpText('after', examples(['postern up', 'postern setup claude-code   # then point your agent at this home']))
    .action(async (_o: unknown, cmd: Command) => {
      const ctx = contextFor(cmd);
      if (process.stdin.isTTY !== true || typeof process.stdin.setRawMode !== 'function') throw new PosternError('TUI_NO_TTY', NO_TTY_MESSAGE);
      await assertNoDaemon(ctx.paths);
      await ensureRunDir(ctx.paths.runDir);
      const logPath = join(ctx.paths.runDir, UP_LOG_FILE);
      const logFd = openSync(logPath, 'a', 0o600);
      const log = (line: string): void => {
        try {
          writeSync(logFd, `${ctx.clock.now().toISOString()} ${line}\n`);
        } catch {
          // a full disk must not take the daemon down
        }
      };
      const pass = await ctx.unlockPassphrase();
      let daemon: Awaited<ReturnType<typeof startDaemonWorker>>;
      try {
        daemon = await startDaemonWorker(ctx.paths.home, pass, { log, kdf: ctx.kdf });
      } finally {
        pass.fill(0);
      }
      let stopping: Promise<void> | null = null;
      const stop = (reason: string): Promise<void> => (stopping ??= daemon.stop(reason));
      const onSignal = (signal: string): void => {
        log(`${signal}: stopping`);
        void stop(signal).then(() => process.exit(0));
      };
      process.once('SIGTERM', () => onSignal('SIGTERM'));
      process.once('SIGHUP', () => onSignal('SIGHUP'));
      try {
        const client = createOperatorClient(await connectPortTransport(daemon.attach(), { role: 'operator' }));
        try {
          const { runTui } = await loadTui();
          await runTui(client, { observe: false, now: () => ctx.clock.now().getTime(), monotonicMs: () => ctx.clock.monotonicMs() });
        } finally {
          client.close();
        }
      } finally {
        await stop('operator quit');
        closeSync(logFd);
      }
      ctx.out(`postern up: the vault is locked and the daemon stopped (its log: ${logPath})`);
    });
}
