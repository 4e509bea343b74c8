/** `postern init`: create the home (0700) and an empty vault (0600) under a new passphrase. */
import type { Command } from 'commander';
import { createVault } from '../../vault/index.js';
import { ensurePrivateHome } from '../../home/permissions.js';
import { contextFor } from '../context.js';
import { examples } from '../help.js';

export function registerInit(program: Command): void {
  program
    .command('init')
    .description('create the Postern home and an encrypted vault (passphrase asked twice, no echo)')
    .addHelpText('after', examples(['postern init', 'POSTERN_HOME=~/work-postern postern init', 'postern init --passphrase-file ./pass   # no terminal (CI)']))
    .action(async (_o: unknown, cmd: Command) => {
      const ctx = contextFor(cmd);
      await ensurePrivateHome(ctx.paths.home);
      const pass = await ctx.newPassphrase();
      try {
        await createVault(ctx.paths.vault, pass, ctx.vault);
      } finally {
        pass.fill(0);
      }
      ctx.out(`created vault ${ctx.paths.vault}`);
      ctx.out('next: postern secret add NAME --kind KIND   (kinds: postern secret add --help)');
      ctx.out('then: postern catalog new                    (a commented starter catalog.yaml to edit)');
    });
}
