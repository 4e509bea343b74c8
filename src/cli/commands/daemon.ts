/**
 * `postern daemon` (the daemon without a TUI, for a terminal or a user
 * service) and `postern mcp` (the stdio endpoint an agent host launches).
 * The daemon logs one line per event to stderr; stdout stays unused so it can
 * never carry a secret by accident. SIGTERM / SIGINT stop it cleanly.
 */
import type { Command } from 'commander';
import { startDaemon } from '../../daemon/run.js';
import { assertNoDaemon } from '../../home/daemon-lock.js';
import { runMcp } from '../mcp-entry.js';
import { contextFor } from '../context.js';
import { examples } from '../help.js';

export function registerDaemon(program: Command): void {
  program
    .command('daemon')
    .description('run the daemon without a TUI: unlock the vault, serve agents, wait for approvals from `postern approvals`')
    .option('--unattended', 'no human approver: pre-approval rules of the accepted catalog approve at once, anything else needing approval is refused (APPROVAL_UNAVAILABLE); a run report is written at a clean stop')
    .addHelpText('after', examples(['postern daemon', 'postern daemon --passphrase-file ./pass   # a user service', 'postern daemon --unattended --passphrase-file ./pass   # CI: rules decide, the report lands in run-report.json']))
    .action(async (o: { unattended?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      await assertNoDaemon(ctx.paths); // before the passphrase; startDaemon takes the lock for real
      const pass = await ctx.unlockPassphrase();
      const log = (line: string): void => {
        process.stderr.write(`postern daemon: ${line}\n`);
      };
      // Listening before the daemon is ready: a signal right after "daemon ready" must stop it cleanly, not kill it.
      let stopSignal: ((signal: string) => void) | undefined;
      let early: string | undefined;
      const onSignal = (signal: string): void => {
        if (stopSignal !== undefined) stopSignal(signal);
        else early ??= signal;
      };
      process.once('SIGTERM', () => onSignal('SIGTERM'));
      process.once('SIGINT', () => onSignal('SIGINT'));
      const handle = await startDaemon(ctx.paths, pass, { clock: ctx.clock, kdf: ctx.kdf, log, unattended: o.unattended === true }).finally(() => pass.fill(0));
      await new Promise<void>((resolve) => {
        stopSignal = (signal: string): void => {
          log(`${signal}: stopping`);
          void handle.close(signal).then(resolve);
        };
        if (early !== undefined) stopSignal(early);
      });
      log('stopped');
    });

  program
    .command('mcp')
    .description('the MCP server for agent hosts (stdio); relays to the running daemon and holds no secrets')
    .addHelpText('after', examples(['postern setup claude-code   # prints the host config that runs this command by absolute path']))
    .action(runMcp);
}
