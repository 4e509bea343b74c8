/**
 * `postern http enable|disable|status`: the optional Streamable HTTP listener.
 *
 * - `enable [--port N] [--max-sessions N]` (passphrase) sets `mcp_http` in
 *   config.yaml (the rest of the file is kept) and writes the MAC'd
 *   authorization for that port (src/home/http-authorization.ts): an agent
 *   that edits config.yaml alone opens nothing. The daemon reads both at start.
 * - `disable` (no passphrase: it only narrows) sets `enabled: false` and
 *   removes the authorization.
 * - `status [--json]` (no passphrase) says what config.yaml asks, whether an
 *   authorization is there (not verified without the passphrase), and the URL
 *   and token file of a running daemon's listener.
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { Document, parseDocument } from 'yaml';
import { parseConfig, MCP_HTTP_DEFAULT_PORT, type DaemonConfig } from '../../daemon/services/config.js';
import { atomicWriteFile } from '../../home/atomic-write.js';
import { readHttpAuthorization, removeHttpAuthorization, writeHttpAuthorization } from '../../home/http-authorization.js';
import type { HomePaths } from '../../home/paths.js';
import { readListenerInfo } from '../../home/http-listener-info.js';
import { PosternError } from '../../rules/errors.js';
import { sanitizeForTerminal as clean } from '../../rules/terminal-text.js';
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

/** config.yaml with `mcp_http` changed and every other byte's meaning kept; validated before it is returned. */
function withHttp(paths: HomePaths, text: string, set: Partial<DaemonConfig['mcp_http']>): string {
  parseConfig(text, paths.config); // refuse to edit a file that is already invalid
  const doc = text.trim() === '' ? new Document({}) : parseDocument(text);
  for (const [k, v] of Object.entries(set)) doc.setIn(['mcp_http', k], v);
  const next = doc.toString();
  parseConfig(next, paths.config);
  return next;
}

function parsePort(v: string, what: string, min: number, max: number): number {
  const n = Number(v);
  if (!/^\d{1,5}$/.test(v) || !Number.isInteger(n) || n < min || n > max) throw new PosternError('USAGE', `${what} must be a whole number from ${min} to ${max}`);
  return n;
}

export function registerHttp(program: Command): void {
  const http = program.command('http').description('the optional Streamable HTTP MCP listener on 127.0.0.1 (off by default): enable, disable, status').addHelpText('after', examples([
    'postern http enable    # then restart the daemon',
    'postern http status',
  ]));

  http
    .command('enable')
    .description('authorize the HTTP listener (passphrase) and enable it in config.yaml; the daemon opens it at its next start')
    .option('--port <n>', `TCP port on 127.0.0.1 (0: any free port; default: config.yaml's, else ${MCP_HTTP_DEFAULT_PORT})`)
    .option('--max-sessions <n>', 'most HTTP sessions open at once')
    .addHelpText('after', examples(['postern http enable --port 7469', 'postern http status']))
    .action(async (o: { port?: string; maxSessions?: string }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const text = await configText(ctx.paths);
      const current = parseConfig(text, ctx.paths.config).mcp_http;
      const port = o.port === undefined ? current.port : parsePort(o.port, '--port', 0, 65_535);
      const set: Partial<DaemonConfig['mcp_http']> = { enabled: true, port };
      if (o.maxSessions !== undefined) set.max_sessions = parsePort(o.maxSessions, '--max-sessions', 1, 256);
      const next = withHttp(ctx.paths, text, set);
      const pass = await ctx.unlockPassphrase();
      const vault = await openVault(ctx.paths.vault, pass, ctx.vault).finally(() => pass.fill(0));
      try {
        await writeHttpAuthorization(ctx.paths, vault.deriveKey('catalog-mac'), port, ctx.clock.now());
      } finally {
        vault.lock();
      }
      await atomicWriteFile(ctx.paths.config, next);
      const where = port === 0 ? 'on a free port of 127.0.0.1' : `on http://127.0.0.1:${port}/mcp`;
      ctx.out(`HTTP listener authorized ${where}; (re)start the daemon to open it. Clients send Authorization: Bearer <the token in ${clean(ctx.paths.mcpHttpToken)}> (made at the first start).`);
    });

  http
    .command('disable')
    .description('disable the HTTP listener in config.yaml and remove its authorization (no passphrase); the daemon closes it at its next start')
    .action(async (_o: unknown, cmd: Command) => {
      const ctx = contextFor(cmd);
      const text = await configText(ctx.paths);
      const next = withHttp(ctx.paths, text, { enabled: false });
      await atomicWriteFile(ctx.paths.config, next);
      const removed = await removeHttpAuthorization(ctx.paths);
      ctx.out(`HTTP listener disabled${removed ? ' and its authorization removed' : ''}; a running daemon closes it when it restarts.`);
    });

  http
    .command('status')
    .description('what config.yaml asks for, whether it is authorized, and the URL and token file of a running listener')
    .option('--json', 'one JSON object')
    .action(async (o: { json?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const c = parseConfig(await configText(ctx.paths), ctx.paths.config).mcp_http;
      const auth = await readHttpAuthorization(ctx.paths);
      const authorization = auth.kind === 'stored' ? (auth.stored.record.port === c.port ? 'present' : `for port ${auth.stored.record.port}`) : auth.kind;
      const running = await readListenerInfo(ctx.paths);
      if (o.json === true) {
        ctx.out(JSON.stringify({ enabled: c.enabled, port: c.port, max_sessions: c.max_sessions, authorization, running: running === null ? null : { url: running.url, token_file: running.token_file } }));
        return;
      }
      ctx.out(`config.yaml: ${c.enabled ? `enabled, port ${c.port === 0 ? '0 (any free port)' : c.port}, at most ${c.max_sessions} sessions` : 'disabled (the default)'}`);
      ctx.out(`authorization: ${authorization === 'present' ? 'present (verified by the daemon with the vault key at start)' : authorization === 'none' ? 'none (run `postern http enable`)' : `${authorization} (run \`postern http enable\`)`}`);
      if (running === null) ctx.out('listener: not running');
      else {
        ctx.out(`listener: ${clean(running.url)}`);
        ctx.out(`token file: ${clean(running.token_file)} (send Authorization: Bearer <its content>)`);
      }
    });
}
