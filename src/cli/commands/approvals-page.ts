/**
 * `postern approvals page enable|disable|status`, `approvals pair` and
 * `approvals devices [revoke ID]`: the approval page (docs/approval-page.md).
 *
 * - `page enable [--port N] [--bind ADDR] [--webhook URL] [--webhook-arguments]`
 *   (passphrase) writes the MAC'd authorization that is the page's whole
 *   configuration (src/home/approval-page-authorization.ts); the daemon
 *   opens the page at its next start. `disable` (no passphrase: it only
 *   narrows) removes it. `--bind` (an address other than 127.0.0.1) makes a
 *   self-signed certificate for it, keeps its key in the vault
 *   (src/home/approval-page-tls.ts) and prints the fingerprint. `status` says what is authorized and running.
 * - `pair --name NAME` (passphrase, on the operator channel) opens a one-time
 *   code for a new device and prints it, the URL to open, and a QR code of
 *   that URL on a terminal.
 * - `devices` lists the paired devices; `devices revoke ID` revokes one,
 *   refused by the page from its next request on.
 *
 * Invariants: the webhook is an http(s) URL without credentials in it;
 * every string from the daemon is printed through sanitizeForTerminal.
 */
import type { Command } from 'commander';
import { qrcode } from '../../libraries.js';
import { APPROVAL_PAGE_TLS_CREDENTIAL, makePageCertificate } from '../../home/approval-page-tls.js';
import { writeVault } from '../../home/vault-write.js';
import { APPROVAL_PAGE_DEFAULT_PORT, LOOPBACK, readApprovalPageAuthorization, removeApprovalPageAuthorization, writeApprovalPageAuthorization } from '../../home/approval-page-authorization.js';
import { isPosternError, PosternError } from '../../rules/errors.js';
import { pairingLink } from '../../protocol/operator/index.js';
import { jsonForTerminal, sanitizeForTerminal as clean } from '../../rules/terminal-text.js';
import { openVault } from '../../vault/index.js';
import { contextFor, type CliContext } from '../context.js';
import { examples } from '../help.js';
import { renderTable } from '../table.js';
import type { OperatorClient, PageStatusView } from '../../protocol/operator/index.js';

/** An authenticated operator connection for one command (approvals.ts's withOperator, handed in). */
type WithOperator = <T>(ctx: CliContext, fn: (c: OperatorClient) => Promise<T>) => Promise<T>;

function parsePort(v: string): number {
  const n = Number(v);
  if (!/^\d{1,5}$/.test(v) || n > 65_535) throw new PosternError('USAGE', '--port must be a whole number from 0 to 65535');
  return n;
}

function parseWebhook(v: string): string {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new PosternError('USAGE', '--webhook must be an http:// or https:// URL');
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new PosternError('USAGE', '--webhook must be an http:// or https:// URL');
  if (u.username !== '' || u.password !== '') throw new PosternError('USAGE', '--webhook must not carry a user name or password');
  return u.toString();
}

/** The running page as the daemon reports it over the operator channel: never from a file in the home, which an agent can write. */
async function runningPage(ctx: CliContext, withOperator: WithOperator): Promise<{ daemon: boolean; page: PageStatusView | null }> {
  try {
    return { daemon: true, page: await withOperator(ctx, (c) => c.request('page.status', {})) };
  } catch (e) {
    if (isPosternError(e) && e.code === 'DAEMON_UNAVAILABLE') return { daemon: false, page: null };
    throw e;
  }
}

export function registerApprovalPage(approvals: Command, withOperator: WithOperator): void {
  const page = approvals.command('page').description('the approval page for a paired browser (off by default): enable, disable, status');

  page
    .command('enable')
    .description('authorize the approval page on 127.0.0.1 (or, with --bind, a LAN address over TLS) (passphrase); the daemon opens it at its next start')
    .option('--port <n>', `TCP port (0: any free port; default ${APPROVAL_PAGE_DEFAULT_PORT})`)
    .option('--bind <address>', 'an IP address of this machine other than 127.0.0.1 (a LAN address): the page is then served over TLS, with a self-signed certificate made now (its key in the vault) whose fingerprint is printed')
    .option('--webhook <url>', 'also POST a notice to this URL (ntfy-style: the tool name and a link) when a call waits')
    .option('--webhook-arguments', "include the call's normalized arguments in the webhook's notice (off: never)")
    .addHelpText('after', examples(['postern approvals page enable', 'postern approvals page enable --webhook https://ntfy.sh/my-topic', 'ssh -L 7470:127.0.0.1:7470 this-host   # then open http://127.0.0.1:7470/']))
    .action(async (o: { port?: string; bind?: string; webhook?: string; webhookArguments?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const port = o.port === undefined ? APPROVAL_PAGE_DEFAULT_PORT : parsePort(o.port);
      if (o.webhookArguments === true && o.webhook === undefined) throw new PosternError('USAGE', '--webhook-arguments needs --webhook');
      const webhook = o.webhook === undefined ? null : { url: parseWebhook(o.webhook), arguments: o.webhookArguments === true };
      const bind = o.bind ?? LOOPBACK;
      const cert = bind === LOOPBACK ? null : await makePageCertificate(bind);
      const pass = await ctx.unlockPassphrase();
      let key: Uint8Array | undefined;
      try {
        if (cert === null) {
          const vault = await openVault(ctx.paths.vault, pass, ctx.vault);
          key = Uint8Array.from(vault.deriveKey('catalog-mac'));
          vault.lock();
        } else {
          // The key goes into the vault (a new one replaces the last, which stays remembered for redaction).
          await writeVault(ctx, pass, (v) => {
            const secret = { private_key: Uint8Array.from(cert.keyPem) };
            const fields = { certificate: cert.certDer.toString('base64') };
            if (v.get(APPROVAL_PAGE_TLS_CREDENTIAL) === undefined) v.add({ name: APPROVAL_PAGE_TLS_CREDENTIAL, kind: 'tls_key', fields, secret });
            else v.rotate(APPROVAL_PAGE_TLS_CREDENTIAL, secret, fields);
            key = Uint8Array.from(v.deriveKey('catalog-mac'));
          });
          cert.keyPem.fill(0);
        }
        if (key === undefined) throw new PosternError('INTERNAL', 'the vault gave no key');
        await writeApprovalPageAuthorization(ctx.paths, key, { port, bind, tls_sha256: cert?.sha256 ?? null, webhook }, ctx.clock.now());
      } finally {
        pass.fill(0);
        key?.fill(0);
      }
      const where = cert === null ? `http://127.0.0.1:${port === 0 ? 'PORT' : port}/` : `https://${bind}:${port === 0 ? 'PORT' : port}/`;
      ctx.out(`approval page authorized on ${where}${port === 0 ? ' (any free port: the daemon says which)' : ''}; (re)start the daemon to open it, then pair a browser with \`postern approvals pair --name NAME\`.`);
      if (cert !== null) ctx.out(`TLS certificate SHA-256 (check it in the browser before pairing): ${cert.sha256}`);
      if (webhook !== null) ctx.out(`webhook: ${clean(webhook.url, 200)} (${webhook.arguments ? 'with the normalized arguments' : 'the tool name and a link, never the arguments'})`);
    });

  page
    .command('disable')
    .description('remove the approval page\'s authorization (no passphrase); the daemon closes it at its next start')
    .action(async (_o: unknown, cmd: Command) => {
      const ctx = contextFor(cmd);
      const removed = await removeApprovalPageAuthorization(ctx.paths);
      ctx.out(removed ? 'approval page authorization removed; a running daemon closes the page when it restarts.' : 'the approval page was not authorized.');
    });

  page
    .command('status')
    .description("what the authorization file says (not verified here), and the running page as the daemon reports it: its URL and run fingerprint (passphrase)")
    .option('--json', 'one JSON object')
    .action(async (o: { json?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const found = await readApprovalPageAuthorization(ctx.paths);
      const running = await runningPage(ctx, withOperator);
      const record = found.kind === 'stored' ? found.stored.record : null;
      if (o.json === true) {
        ctx.out(jsonForTerminal({ authorization: found.kind === 'stored' ? 'present' : found.kind, port: record?.port ?? null, bind: record?.bind ?? null, tls_sha256: record?.tls_sha256 ?? null, webhook: record?.webhook ?? null, daemon: running.daemon, running: running.page }));
        return;
      }
      ctx.out(`authorization file: ${record === null ? `${found.kind} (run \`postern approvals page enable\`)` : `present, ${clean(record.bind, 64)} port ${record.port}${record.tls_sha256 === null ? '' : `, TLS certificate SHA-256 ${record.tls_sha256}`}${record.webhook === null ? '' : `, webhook ${clean(record.webhook.url, 200)}${record.webhook.arguments ? ' (with arguments)' : ''}`} (not verified here: the daemon verifies it with the vault key at start)`}`);
      const p = running.page;
      ctx.out(`page: ${!running.daemon ? 'no daemon is running' : p === null ? 'not running (the daemon did not open it: see its log)' : `${clean(p.url, 200)} (as the daemon reports it), run ${clean(p.run_fingerprint, 16)}${p.tls_sha256 === null ? '' : `, TLS certificate SHA-256 ${clean(p.tls_sha256, 64)}`}`}`);
    });

  approvals
    .command('pair')
    .description('pair a browser with the approval page: a one-time code and a QR code of the URL (needs the vault passphrase)')
    .requiredOption('--name <name>', 'what to call the device in `postern approvals devices` (printable ASCII, at most 64)')
    .option('--qr', 'print the QR code even when the output is not a terminal')
    .action(async (o: { name: string; qr?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const p = await withOperator(ctx, (c) => c.request('devices.pair', { name: o.name }));
      const link = pairingLink(p);
      ctx.out(`pairing code for ${clean(p.name, 64)}: ${clean(p.code, 32)} (single use, until ${clean(p.expires_at, 40)})`);
      ctx.out('open (the link is on the next line, whole):');
      ctx.link(clean(link, 2000));
      ctx.out(`page key ${clean(p.page_key, 16)}, run ${clean(p.run_fingerprint, 16)} (the page shows the run once the daemon proved itself)`);
      if (p.tls_sha256 !== null) ctx.out(`certificate SHA-256 (check it in the browser): ${clean(p.tls_sha256, 64)}`);
      ctx.out('from another machine: ssh -L PORT:127.0.0.1:PORT this-host, then open the same URL there');
      if (o.qr === true || process.stdout.isTTY) ctx.out(await (await qrcode()).toString(link, { type: 'terminal', small: true }));
    });

  const devices = approvals
    .command('devices')
    .description('list the devices paired with the approval page; `devices revoke ID` revokes one')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const list = await withOperator(ctx, (c) => c.request('devices.list', {}));
      if (o.json === true) ctx.out(jsonForTerminal(list));
      else if (list.length === 0) ctx.out('no paired devices');
      else ctx.out(renderTable(['ID', 'NAME', 'PAIRED', 'STATE'], list.map((d) => [clean(d.id, 32), clean(d.name, 64), clean(d.paired_at, 40), d.revoked_at === null ? 'active' : `revoked ${clean(d.revoked_at, 40)}`])));
    });
  devices
    .command('revoke <id>')
    .description('revoke a paired device (id or unique prefix): the page refuses it from its next request on')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const ctx = contextFor(cmd);
      const d = await withOperator(ctx, (c) => c.request('devices.revoke', { id }));
      ctx.out(`revoked device ${clean(d.revoked.id, 32)} (${clean(d.revoked.name, 64)})`);
    });
}
