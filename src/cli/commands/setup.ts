/**
 * `postern setup claude-code|codex|cursor|gemini|vscode|json`: the MCP configuration an
 * agent host needs to launch `postern mcp` by absolute path (src/cli/setup),
 * printed; with `--write`, merged into the host's config file. A write keeps
 * every other entry, goes through a temp file and a rename (the file is
 * replaced whole or not at all), keeps the previous file beside it as
 * `<file>.postern-backup`, and refuses an existing different `postern` entry
 * unless `--force`. Each host's own sandbox settings for the agent's shell
 * follow the entry (src/cli/setup/sandbox.ts, docs/sandbox.md): printed, never
 * written. With `--write` and the daemon running, the tools are listed once
 * through the shim so a host's first session started while the daemon is
 * down still has them (src/cli/setup/remember.ts). Nothing here reads the vault.
 */
import { existsSync } from 'node:fs';
import { lstat, mkdir, readFile, realpath, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, resolve } from 'node:path';
import { Option, type Command } from 'commander';
import { atomicWriteFile } from '../../home/atomic-write.js';
import { homePaths, resolveHome } from '../../home/paths.js';
import { readListenerInfo } from '../../home/http-listener-info.js';
import { PosternError } from '../../rules/errors.js';
import { configFile, hostNote, Hosts, isHost, mergeFor, Scopes, snippet, type Host, type Places, type Scope } from '../setup/hosts.js';
import { cliEntry, launchSpec, type LaunchSpec } from '../setup/launch.js';
import { devcontainerSetup, sandboxAdvice } from '../setup/sandbox.js';
import { rememberToolsForFirstSession } from '../setup/remember.js';
import { setupSsh } from '../setup/ssh.js';
import { examples } from '../help.js';

interface SetupOpts {
  write?: boolean;
  http?: boolean;
  force?: boolean;
  home?: string;
  scope: Scope;
}

/** `setup json --http`: the entry for a client of the running HTTP listener, with its bearer token. */
async function httpSnippet(home: string): Promise<string> {
  const paths = homePaths(home);
  const info = await readListenerInfo(paths);
  if (info === null) throw new PosternError('DAEMON_UNAVAILABLE', `no HTTP listener is running for ${home}: run \`postern http enable\`, then (re)start the daemon`);
  const token = (await readFile(info.token_file, 'utf8')).trim();
  process.stderr.write(`postern: note: this entry holds the listener's bearer token (from ${info.token_file}): keep the file you paste it into private\n`);
  return JSON.stringify({ mcpServers: { postern: { type: 'http', url: info.url, headers: { Authorization: `Bearer ${token}` } } } }, null, 2);
}

async function readIfExists(path: string): Promise<{ text: string; mode: number } | undefined> {
  try {
    const [text, st] = await Promise.all([readFile(path, 'utf8'), stat(path)]);
    return { text, mode: st.mode & 0o777 };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new PosternError('FILE_IO', `cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}

/** The file behind a symlinked config (dotfile managers link them), so the link stays a link. */
async function target(path: string): Promise<string> {
  try {
    if ((await lstat(path)).isSymbolicLink()) return await realpath(path);
  } catch {
    // absent: written where it was asked for
  }
  return path;
}

async function writeConfig(host: Exclude<Host, 'json'>, file: string, spec: LaunchSpec, force: boolean, out: (l: string) => void): Promise<void> {
  const path = await target(file);
  const current = await readIfExists(path);
  const m = mergeFor(host, current?.text, spec, force);
  switch (m.kind) {
    case 'unchanged':
      out(`${path} already has this postern entry; nothing changed`);
      return;
    case 'unsupported':
      throw new PosternError('INPUT_INVALID', `cannot merge into ${path}: ${m.why}; add the entry by hand (postern setup ${host} prints it)`);
    case 'conflict':
      throw new PosternError('HOST_CONFIG_CONFLICT', `${path} already has a different postern entry; nothing changed (review it, then pass --force to replace it)`);
    case 'write': {
      await mkdir(dirname(path), { recursive: true, mode: 0o700 });
      const mode = current?.mode ?? 0o600;
      if (current !== undefined) await atomicWriteFile(`${path}.postern-backup`, current.text, mode);
      await atomicWriteFile(path, m.text, mode);
      out(`${m.replaced ? 'replaced the postern entry in' : 'added postern to'} ${path}${current === undefined ? '' : ` (previous file: ${path}.postern-backup)`}`);
      return;
    }
  }
}

export function registerSetup(program: Command): void {
  program
    .command('setup')
    .argument('<host>', `the agent host: ${Hosts.join(', ')}, devcontainer (the mounts and entry for an agent in a container), or ssh (the SSH gateway's client configuration)`)
    .description("print (or with --write, merge into the host's config) the MCP entry that launches `postern mcp` by absolute path")
    .option('--write', "merge the entry into the host's config file (keeps other entries, leaves a .postern-backup)")
    .option('--force', 'with --write: replace an existing, different postern entry')
    .addOption(new Option('--scope <scope>', 'claude-code, cursor, gemini, vscode: user (all projects) or project (the current directory)').choices(Scopes).default('user'))
    .option('--home <dir>', 'the Postern home the agent is connected to (default: POSTERN_HOME or ~/.postern)')
    .option('--http', 'json only: an entry for the running HTTP listener (URL and bearer token) instead of `postern mcp`')
    .addHelpText('after', examples([
      'postern setup claude-code            # prints `claude mcp add …` and the .mcp.json form',
      'postern setup codex --write          # merges [mcp_servers.postern] into ~/.codex/config.toml',
      'postern setup cursor --write --scope project',
      'postern setup gemini --write         # merges mcpServers.postern into ~/.gemini/settings.json',
      'postern setup vscode --write --scope project   # merges servers.postern into ./.vscode/mcp.json',
      'postern setup json > postern-mcp.json',
      'postern setup json --http            # the running HTTP listener: URL and bearer token',
      'postern setup devcontainer           # the agent socket mount and the entry for an agent in a container',
      'postern setup ssh                    # git and ssh through the SSH gateway: ssh_config, known_hosts, GIT_SSH_COMMAND',
    ]))
    .action(async (host: string, o: SetupOpts) => {
      if (host === 'devcontainer') {
        if (o.write === true || o.http === true) throw new PosternError('USAGE', 'devcontainer is printed only: add the mounts and the entry to the container\'s configuration');
        const home = o.home !== undefined ? resolve(o.home) : resolveHome();
        process.stdout.write(`${devcontainerSetup(homePaths(home).agentSocket, resolve(dirname(cliEntry()), '..', '..'))}\n`);
        return;
      }
      if (host === 'ssh') {
        if (o.http === true || o.force === true) throw new PosternError('USAGE', 'setup ssh takes only --home');
        process.stdout.write(`${await setupSsh(homePaths(o.home !== undefined ? resolve(o.home) : resolveHome()))}\n`);
        return;
      }
      if (!isHost(host)) throw new PosternError('USAGE', `unknown host "${host.slice(0, 40)}" (expected one of ${Hosts.join(', ')})`);
      const home = o.home !== undefined ? resolve(o.home) : resolveHome();
      const spec = launchSpec(home);
      const places: Places = { userHome: homedir(), cwd: process.cwd(), env: process.env, platform: process.platform };
      const out = (l: string): void => void process.stdout.write(`${l}\n`);
      if (o.write !== true && o.force === true) throw new PosternError('USAGE', '--force only applies with --write');
      if (o.write === true && host === 'json') throw new PosternError('USAGE', 'json has no config file to write: redirect the output instead');
      if (o.http === true) {
        if (host !== 'json' || o.write === true) throw new PosternError('USAGE', '--http applies to `postern setup json` (printed, never written)');
        out(await httpSnippet(home));
        return;
      }
      if (!existsSync(homePaths(home).vault)) process.stderr.write(`postern: note: no vault in ${home} yet: run \`postern init\` before the agent connects\n`);
      const advice = sandboxAdvice(host, home, places);
      if (o.write !== true) {
        out(snippet(host, spec, places));
        if (advice !== undefined) out(`\n${advice}`);
        return;
      }
      if (host === 'json') throw new PosternError('USAGE', 'json has no config file to write: redirect the output instead');
      const file = configFile(host, o.scope, places);
      if (file === null) throw new PosternError('INTERNAL', 'no config file for this host');
      await writeConfig(host, file, spec, o.force === true, out);
      // With the daemon running, the tools are listed once now, so even the first session started while it is down has them.
      out(await rememberToolsForFirstSession(homePaths(home).agentSocket));
      const note = hostNote(host, places);
      if (note !== undefined) out(`note: ${note}`);
      if (advice !== undefined) out(`\n${advice}`);
    });
}
