/**
 * `postern status`: this home at a glance without the passphrase — the
 * journals' heads and journal shipping (its state, lag and last error).
 */
import type { Command } from 'commander';
import { examples } from '../help.js';
import { contextFor } from '../context.js';
import { describeShipping, readShipReport } from '../ship-status.js';

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description('the journals and journal shipping (state, lag, last error); no passphrase')
    .addHelpText('after', examples(['postern status', 'postern status --json']))
    .option('--json', 'print JSON')
    .action((o: { json?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const r = readShipReport(ctx.paths);
      if (o.json === true) {
        ctx.out(JSON.stringify({ journal: r.local, shipping: r.status === null ? null : { ...r.status, lag: r.lag } }, null, 2));
        return;
      }
      ctx.out(r.local === null ? 'journal: none yet' : `journal: activity seq ${r.local.activity}, sessions seq ${r.local.sessions}`);
      ctx.out(`shipping: ${describeShipping(r)}`);
    });
}
