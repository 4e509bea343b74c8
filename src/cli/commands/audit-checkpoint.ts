/**
 * `postern audit checkpoint`: sign a journal checkpoint now, so that the
 * calls journaled so far can be proven (`audit export --bundle`) without
 * waiting for a periodic one or a daemon stop. With a daemon running it is
 * asked over the authenticated operator channel (the daemon holds the
 * journals); without one, the command opens the anchored journals itself
 * under the daemon lock, with the passphrase. Either way the answer names
 * the checkpoint's time and the chain heads it covers.
 */
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { takeDaemonLock } from '../../home/daemon-lock.js';
import { openAnchoredJournals } from '../../journal/anchor/index.js';
import { readCheckpoints } from '../../journal/checkpoint/file.js';
import { keyFingerprint } from '../../journal/checkpoint/signature.js';
import { isPosternError, PosternError } from '../../rules/errors.js';
import { contextFor, type CliContext } from '../context.js';
import { examples } from '../help.js';
import { anchorContext, vaultFacts, type VaultFacts } from './anchor.js';
import { withOperator } from './approvals.js';

/** Signs one through the running daemon, or here when none runs. */
async function signCheckpoint(ctx: CliContext): Promise<void> {
  let lock: Awaited<ReturnType<typeof takeDaemonLock>> | undefined;
  try {
    lock = await takeDaemonLock(ctx.paths);
  } catch (e) {
    if (!isPosternError(e, 'DAEMON_RUNNING')) throw e;
  }
  if (lock === undefined) {
    const r = await withOperator(ctx, {}, (c) => c.request('audit.checkpoint', {}));
    if (!r.signed) throw new PosternError('JOURNAL_UNAVAILABLE', 'the daemon anchored the journal but holds no checkpoint key, so nothing was signed');
    return;
  }
  let f: VaultFacts | undefined;
  try {
    if (!existsSync(ctx.paths.journalDir)) throw new PosternError('JOURNAL_UNAVAILABLE', `no journal in ${ctx.paths.journalDir} yet: nothing to checkpoint`);
    f = await vaultFacts(ctx);
    const opened = openAnchoredJournals(anchorContext(ctx, f));
    try {
      opened.keeper.checkpointNow('operator');
    } finally {
      opened.close();
    }
  } finally {
    f?.wipe();
    await lock.release();
  }
}

export function registerAuditCheckpoint(audit: Command): void {
  audit
    .command('checkpoint')
    .description('sign a journal checkpoint now, so the calls journaled so far can be exported as a proof (asks the running daemon; passphrase)')
    .option('--json', 'print JSON')
    .addHelpText('after', examples(['postern audit checkpoint && postern audit export --bundle proof.bundle']))
    .action(async (o: { json?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      await signCheckpoint(ctx);
      const last = readCheckpoints(ctx.paths.checkpoints).filter((c) => c !== 'malformed').at(-1);
      if (last === undefined) throw new PosternError('JOURNAL_UNAVAILABLE', `no checkpoint could be read back from ${ctx.paths.checkpoints}`);
      const r = last.record;
      if (o.json === true) {
        ctx.out(JSON.stringify({ at: r.at, reason: r.reason, activity_seq: r.activity.seq, sessions_seq: r.sessions.seq, key: keyFingerprint(r.public_key) }, null, 2));
        return;
      }
      ctx.out(`signed a checkpoint at ${r.at} (${r.reason})`);
      ctx.out(`  covers activity up to seq ${r.activity.seq}, sessions up to seq ${r.sessions.seq}`);
      ctx.out(`  key ${keyFingerprint(r.public_key)}`);
    });
}
