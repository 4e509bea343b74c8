/**
 * `postern ssh-gateway enable|disable|status`: the optional local SSH gateway
 * (docs/ssh-gateway.md).
 *
 * - `enable [--port N]` (passphrase) makes the gateway's keys if needed, sets
 *   `ssh_gateway` in config.yaml (the rest of the file kept) and writes the
 *   MAC'd authorization for that port and those keys
 *   (src/home/ssh-gateway-files.ts). The daemon reads both at start.
 * - `disable` (no passphrase: it only narrows) sets `enabled: false` and
 *   removes the authorization.
 * - `status` says what config.yaml asks, whether an authorization is there,
 *   and the port of a running gateway.
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { Document, parseDocument } from 'yaml';
import { parseConfig, type DaemonConfig } from '../../daemon/services/config.js';
import { atomicWriteFile } from '../../home/atomic-write.js';
import type { HomePaths } from '../../home/paths.js';
import { ensureGatewayKeys, readGatewayAuthorization, readGatewayInfo, removeGatewayAuthorization, writeGatewayAuthorization } from '../../home/ssh-gateway-files.js';
import { PosternError } from '../../rules/errors.js';
import { openVault } from '../../vault/index.js';
import { contextFor } from '../context.js';
import { examples } from '../help.js';

async function configText(paths: HomePaths): Promise<string> {
  try {
    return await readFile(paths.config, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw new PosternError('FILE_IO', `cannot read ${paths.config}`);
  }
}

/** config.yaml with `ssh_gateway` changed and every other byte's meaning kept; validated before it is returned. */
function withGateway(paths: HomePaths, text: string, set: Partial<DaemonConfig['ssh_gateway']>): string {
  parseConfig(text, paths.config);
  const doc = text.trim() === '' ? new Document({}) : parseDocument(text);
  for (const [k, v] of Object.entries(set)) doc.setIn(['ssh_gateway', k], v);
  const next = doc.toString();
  parseConfig(next, paths.config);
  return next;
}

function parsePort(v: string): number {
  const n = Number(v);
  if (!/^\d{1,5}$/.test(v) || !Number.isInteger(n) || n > 65_535) throw new PosternError('USAGE', '--port must be a whole number from 0 to 65535');
  return n;
}

export function registerSshGateway(program: Command): void {
  const gw = program
    .command('ssh-gateway')
    .description('the optional local SSH gateway on 127.0.0.1 (off by default): git and ssh through the vault\'s keys, approved per repository and command')
    .addHelpText('after', examples(['postern ssh-gateway enable    # then restart the daemon, and run `postern setup ssh`', 'postern ssh-gateway status']));

  gw.command('enable')
    .description('authorize the SSH gateway (passphrase) and enable it in config.yaml; the daemon opens it at its next start')
    .option('--port <n>', "TCP port on 127.0.0.1 (0: any free port; default: config.yaml's, else 7470)")
    .action(async (o: { port?: string }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const text = await configText(ctx.paths);
      const current = parseConfig(text, ctx.paths.config).ssh_gateway;
      const port = o.port === undefined ? current.port : parsePort(o.port);
      const next = withGateway(ctx.paths, text, { enabled: true, port });
      const pass = await ctx.unlockPassphrase();
      const vault = await openVault(ctx.paths.vault, pass, ctx.vault).finally(() => pass.fill(0));
      try {
        const keys = await ensureGatewayKeys(ctx.paths);
        await writeGatewayAuthorization(ctx.paths, vault.deriveKey('catalog-mac'), port, keys, ctx.clock.now());
      } finally {
        vault.lock();
      }
      await atomicWriteFile(ctx.paths.config, next);
      ctx.out(`SSH gateway authorized on 127.0.0.1:${port === 0 ? '(any free port)' : port}; (re)start the daemon to open it, then run \`postern setup ssh\`.`);
    });

  gw.command('disable')
    .description('disable the SSH gateway in config.yaml and remove its authorization (no passphrase); the daemon closes it at its next start')
    .action(async (_o: unknown, cmd: Command) => {
      const ctx = contextFor(cmd);
      const next = withGateway(ctx.paths, await configText(ctx.paths), { enabled: false });
      await atomicWriteFile(ctx.paths.config, next);
      const removed = await removeGatewayAuthorization(ctx.paths);
      ctx.out(`SSH gateway disabled${removed ? ' and its authorization removed' : ''}; a running daemon closes it when it restarts.`);
    });

  gw.command('status')
    .description('what config.yaml asks for, whether it is authorized, and the port of a running gateway')
    .option('--json', 'one JSON object')
    .action(async (o: { json?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const c = parseConfig(await configText(ctx.paths), ctx.paths.config).ssh_gateway;
      const auth = await readGatewayAuthorization(ctx.paths);
      const authorization = auth.kind === 'stored' ? (auth.stored.record.port === c.port ? 'present' : `for port ${auth.stored.record.port}`) : auth.kind;
      const running = await readGatewayInfo(ctx.paths);
      if (o.json === true) {
        ctx.out(JSON.stringify({ enabled: c.enabled, port: c.port, authorization, running: running === null ? null : { port: running.port } }));
        return;
      }
      ctx.out(`config.yaml: ${c.enabled ? `enabled, port ${c.port === 0 ? '0 (any free port)' : c.port}` : 'disabled (the default)'}`);
      ctx.out(`authorization: ${authorization === 'present' ? 'present (verified by the daemon with the vault key at start)' : `${authorization} (run \`postern ssh-gateway enable\`)`}`);
      ctx.out(running === null ? 'gateway: not running' : `gateway: 127.0.0.1:${running.port}`);
    });
}
