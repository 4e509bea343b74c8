/**
 * The CLI's way into catalog acceptance (src/home/catalog-accept.ts): the
 * command's context, and a terminal to confirm on when there is one.
 */
import { acceptCatalog as acceptWith, type AcceptOpts, type AcceptOutcome } from '../../home/catalog-accept.js';
import type { CliContext } from '../context.js';
import { canPrompt, confirm } from '../tty.js';

export type { AcceptOpts, AcceptOutcome } from '../../home/catalog-accept.js';

export function acceptCatalog(ctx: CliContext, o: AcceptOpts): Promise<AcceptOutcome> {
  return acceptWith({ paths: ctx.paths, clock: ctx.clock, vault: ctx.vault, out: (l) => ctx.out(l), unlockPassphrase: () => ctx.unlockPassphrase(), ask: canPrompt() ? confirm : undefined }, o);
}
