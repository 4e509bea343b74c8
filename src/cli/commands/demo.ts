/**
 * `postern demo [--headless] [--agent | --no-agent] [--keep]`: the
 * self-contained demo (src/demo), loaded only when this command runs. Ctrl-C
 * (or SIGTERM) stops it cleanly; a second one exits at once.
 */
import type { Command } from 'commander';
import { examples } from '../help.js';
import { systemClock } from '../../clock/index.js';
import { jsonEntry } from '../setup/hosts.js';
import { cliEntry, launchSpec } from '../setup/launch.js';

interface DemoOpts {
  agent?: boolean;
  headless?: boolean;
  keep?: boolean;
}

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description('a self-contained demo: a throwaway vault and catalog, HTTP and SSH targets, the daemon, and a scripted agent walking through an approval, a replay and a contract change')
    .addHelpText('after', examples(['postern demo   # nothing of your home is touched']))
    .option('--agent', 'run the scripted MCP agent through the story (the default)')
    .option('--no-agent', 'no scripted agent: serve the demo to your own agent until Ctrl-C')
    .option('--headless', 'no terminal UI: approvals decided by the script over the operator channel, exit after the story (the default without a terminal)')
    .option('--keep', 'keep the temporary home afterwards, to inspect it (postern audit)')
    .action(async (o: DemoOpts) => {
      const { runDemo, INTERRUPTED } = await import('../../demo/index.js');
      const abort = new AbortController();
      const onSignal = (): void => {
        if (abort.signal.aborted) process.exit(INTERRUPTED);
        process.stderr.write('\npostern demo: stopping…\n');
        abort.abort();
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      try {
        process.exitCode = await runDemo({
          agent: o.agent !== false,
          headless: o.headless === true || process.stdout.isTTY !== true || process.stdin.isTTY !== true,
          keep: o.keep === true,
          clock: systemClock,
          signal: abort.signal,
          write: (text) => void process.stdout.write(text),
          launch: { entry: cliEntry(), mcpServer: (home) => jsonEntry('json', launchSpec(home)) },
          ...(process.stdout.isTTY === true && process.stdout.columns > 0 ? { columns: process.stdout.columns } : {}),
        });
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
    });
}
