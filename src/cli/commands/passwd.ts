/** `postern passwd`: change the vault passphrase (rewraps the data key; secrets are untouched). */
import type { Command } from 'commander';
import { changePassphrase } from '../../vault/index.js';
import { contextFor } from '../context.js';

export function registerPasswd(program: Command): void {
  program
    .command('passwd')
    .description('change the vault passphrase')
    .option('--new-passphrase-file <file>', 'read the new passphrase from a file instead of asking twice')
    .action(async (o: { newPassphraseFile?: string }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const oldPass = await ctx.unlockPassphrase();
      try {
        const newPass = await ctx.newPassphrase({ file: o.newPassphraseFile, ignoreGlobalFile: true });
        try {
          await changePassphrase(ctx.paths.vault, oldPass, newPass, { clock: ctx.clock });
        } finally {
          newPass.fill(0);
        }
      } finally {
        oldPass.fill(0);
      }
      ctx.out('passphrase changed');
    });
}
