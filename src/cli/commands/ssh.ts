/**
 * `postern ssh trust TARGET`: pins the host key of an SSH target.
 *
 *   read catalog.yaml → probe the host (the handshake stops at the host key:
 *   no credential is sent, nothing runs) → show the offered fingerprint →
 *   the operator confirms (typed "y" on the terminal, or `--fingerprint F`
 *   checked out of band) → write `host_key` into catalog.yaml → accept the
 *   catalog (passphrase), so the daemon adopts the pin.
 *
 * Invariants: no trust on first use — without a terminal the only way to
 * confirm is an expected fingerprint that must equal the offered one; a key
 * that differs from the current pin is shown as a warning, never replaced
 * silently; the file is rewritten atomically with its comments kept. The
 * catalog is accepted only when its authenticated state (MAC'd record that
 * agrees with the vault) is `accepted` and the new file is exactly that
 * catalog plus this pin; otherwise — other pending edits, a missing, forged
 * or rolled-back record, a first catalog — the pin is written but nothing is
 * accepted, and `postern catalog accept` shows every change together.
 */
import type { Command } from 'commander';
import { examples } from '../help.js';
import { catalogDigest, parseCatalog, withHostKeyPin, type SshTarget } from '../../contracts/index.js';
import { probeHostKey } from '../../executors/ssh/index.js';
import { readCatalogFile } from '../../home/catalog-store.js';
import { atomicWriteFile } from '../../home/atomic-write.js';
import { PosternError } from '../../rules/errors.js';
import { contextFor, type CliContext } from '../context.js';
import { sanitizeForTerminal as clean } from '../../rules/terminal-text.js';
import { canPrompt, confirm } from '../tty.js';
import { acceptCatalog } from './catalog-accept.js';

interface TrustOpts {
  fingerprint?: string;
  yes?: boolean;
  accept?: boolean;
  timeout?: string;
}

const unpadded = (f: string): string => f.trim().replace(/=+$/, '');

async function sshTarget(ctx: CliContext, name: string): Promise<{ target: SshTarget; text: string; digest: string }> {
  const file = await readCatalogFile(ctx.paths.catalog);
  if (file === undefined) throw new PosternError('CATALOG_NOT_FOUND', `no catalog at ${ctx.paths.catalog}`);
  const target = parseCatalog(file.text, ctx.paths.catalog).targets.get(name);
  if (target?.kind !== 'ssh') throw new PosternError('INPUT_INVALID', `catalog.yaml has no SSH target named "${clean(name.slice(0, 64))}"`);
  return { target, text: file.text, digest: file.digest };
}

/** The operator's confirmation: an expected fingerprint, or a "y" typed on the terminal. */
function confirmed(ctx: CliContext, offered: string, o: TrustOpts): boolean {
  if (o.fingerprint !== undefined) {
    if (unpadded(o.fingerprint) !== offered) {
      throw new PosternError('HOST_KEY_MISMATCH', `the server offered ${offered}, not the expected ${clean(o.fingerprint.slice(0, 80))}; nothing was recorded`);
    }
    return true;
  }
  if (o.yes === true) throw new PosternError('USAGE', '--yes needs --fingerprint: a host key is trusted only after someone compared it');
  if (!canPrompt()) throw new PosternError('USAGE', 'no terminal to confirm: compare the fingerprint out of band and pass --fingerprint');
  ctx.out('Compare it with the server’s own: ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub (run on the server).');
  return confirm(`Trust ${offered}?`);
}

export function registerSsh(program: Command): void {
  const ssh = program.command('ssh').description('SSH targets: pin host keys').addHelpText('after', examples([
    'postern ssh trust preview   # shows the offered host key of target preview; pins it after you say yes',
  ]));
  ssh
    .command('trust <target>')
    .description('show the host key an SSH target offers and pin it after you confirm (then accept the catalog)')
    .option('--fingerprint <SHA256:...>', 'the fingerprint you expect (checked out of band); required without a terminal')
    .option('-y, --yes', 'do not ask (only together with --fingerprint)')
    .option('--no-accept', 'only write the pin into catalog.yaml; accept later with `postern catalog accept`')
    .option('--timeout <ms>', 'how long to wait for the server', '10000')
    .action(async (name: string, o: TrustOpts, cmd: Command) => {
      const ctx = contextFor(cmd);
      const timeoutMs = Number(o.timeout);
      if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) throw new PosternError('USAGE', '--timeout must be a positive number of milliseconds');
      const { target, text, digest } = await sshTarget(ctx, name);
      const where = `${target.user}@${target.host}:${target.port}`;
      const offered = await probeHostKey(target.host, target.port, timeoutMs);
      ctx.out(`${name} (${where}) offers host key ${offered}`);
      const pinned = target.hostKey.state === 'pinned' ? unpadded(target.hostKey.fingerprint) : undefined;
      if (pinned === offered) {
        ctx.out('this key is already pinned; nothing changed');
        return;
      }
      if (pinned !== undefined) {
        ctx.out(`WARNING: this differs from the pinned ${pinned}.`);
        ctx.out('Someone may be intercepting the connection. Continue only if you know the server’s key was changed.');
      }
      if (!confirmed(ctx, offered, o)) {
        ctx.out('nothing recorded');
        return;
      }
      const now = await readCatalogFile(ctx.paths.catalog);
      if (now?.digest !== digest) throw new PosternError('CATALOG_PENDING', `${ctx.paths.catalog} changed while the host was asked; nothing was recorded, run the command again`);
      const next = withHostKeyPin(text, name, offered);
      await atomicWriteFile(ctx.paths.catalog, next);
      ctx.out(`pinned ${offered} for ${name} in ${ctx.paths.catalog}`);
      if (o.accept === false) {
        ctx.out('not accepted yet: run `postern catalog accept` so the daemon uses it');
        return;
      }
      const outcome = await acceptCatalog(ctx, { expectDigest: catalogDigest(next), pinOnly: { target: name, fingerprint: offered } });
      if (outcome.kind === 'not_pin_only') {
        throw new PosternError('CATALOG_PENDING', `nothing was accepted: ${outcome.reason}; review every change with \`postern catalog accept\``);
      }
    });
}
