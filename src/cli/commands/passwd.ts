/**
 * `postern passwd`: a new passphrase and a new data key, so the change is a
 * revocation. The vault is re-sealed under a fresh data key; every artefact
 * MAC'd with a vault-derived key is re-authenticated (src/home/rekey.ts), in
 * one home change with the vault (src/home/change-record.ts), so a kill at
 * any point leaves a home keyed by exactly one of the two passphrases;
 * and a running daemon, which still holds the old keys in memory and would
 * accept the old passphrase's operator proof, is locked over the operator
 * channel with the old operator-auth key. It serves nothing until it is
 * restarted with the new passphrase; if it cannot be reached, the output
 * says so loudly.
 */
import type { Command } from 'commander';
import { HomeChange } from '../../home/change-record.js';
import { prepareReauthentication } from '../../home/rekey.js';
import type { HomePaths } from '../../home/paths.js';
import { isPosternError } from '../../rules/errors.js';
import { changePassphrase } from '../../vault/index.js';
import { connectOperator } from '../../protocol/operator/connect.js';
import { contextFor, unlockingNotice } from '../context.js';
import { examples } from '../help.js';

type DaemonAfterRekey = { readonly kind: 'not_running' } | { readonly kind: 'locked' } | { readonly kind: 'already_locked' } | { readonly kind: 'unreachable'; readonly why: string };

/** Locks a daemon that proves the OLD operator key (it is the one that must stop serving). */
async function lockRunningDaemon(paths: HomePaths, oldOperatorKey: Uint8Array): Promise<DaemonAfterRekey> {
  try {
    const conn = await connectOperator(paths.operatorSocket, oldOperatorKey);
    try {
      await conn.request('lock', {});
      return { kind: 'locked' };
    } finally {
      conn.close();
    }
  } catch (e) {
    if (isPosternError(e, 'DAEMON_UNAVAILABLE') && e.message.includes('no daemon is running')) return { kind: 'not_running' };
    if (isPosternError(e, 'VAULT_LOCKED')) return { kind: 'already_locked' };
    return { kind: 'unreachable', why: isPosternError(e) ? `${e.code}: ${e.message}` : 'unexpected failure' };
  }
}

export function registerPasswd(program: Command): void {
  program
    .command('passwd')
    .description('change the vault passphrase (new data key: the old passphrase and old vault copies stop authenticating anything)')
    .option('--new-passphrase-file <file>', 'read the new passphrase from a file instead of asking twice')
    .addHelpText('after', examples(['postern passwd', 'postern passwd --passphrase-file old.txt --new-passphrase-file new.txt']))
    .action(async (o: { newPassphraseFile?: string }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const oldPass = await ctx.unlockPassphrase({ notice: false });
      let result: { summaries: string[]; daemon: DaemonAfterRekey } | undefined;
      try {
        const newPass = await ctx.newPassphrase({ file: o.newPassphraseFile, ignoreGlobalFile: true });
        unlockingNotice();
        try {
          const change = new HomeChange(ctx.paths, 'passwd');
          result = await changePassphrase(ctx.paths.vault, oldPass, newPass, { ...ctx.vault, stage: change.vaultStage() }, async (keys) => {
            const stage = await prepareReauthentication(ctx.paths, keys);
            const oldOperatorKey = Uint8Array.from(keys.old('operator-auth'));
            return async () => {
              try {
                // Lock first: a daemon that saw the re-MAC'd record before would only log a false alarm.
                const daemon = await lockRunningDaemon(ctx.paths, oldOperatorKey);
                const summaries = stage(change);
                await change.commit();
                return { summaries, daemon };
              } finally {
                oldOperatorKey.fill(0);
              }
            };
          });
        } finally {
          newPass.fill(0);
        }
      } finally {
        oldPass.fill(0);
      }
      ctx.out('passphrase changed, with a new data key: the old passphrase opens only old copies of the vault, whose keys no longer authenticate this home');
      for (const s of result?.summaries ?? []) ctx.out(`  ${s}`);
      const d = result?.daemon ?? { kind: 'not_running' };
      switch (d.kind) {
        case 'not_running':
          break;
        case 'locked':
          ctx.out('the running daemon held the old keys: it was locked and serves nothing until you restart it (stop it, then `postern daemon` with the new passphrase)');
          break;
        case 'already_locked':
          ctx.out('the running daemon was already locked: restart it (stop it, then `postern daemon` with the new passphrase)');
          break;
        case 'unreachable':
          ctx.out(`WARNING: a daemon may still be running with the old keys and could not be locked (${d.why}).`);
          ctx.out('Stop and restart it now: until then it accepts the old passphrase for approvals.');
          process.exitCode = 1;
          break;
      }
    });
}
