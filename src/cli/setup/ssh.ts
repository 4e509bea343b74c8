/**
 * `postern setup ssh`: the client side of the SSH gateway. It writes, in the
 * home, `ssh-gateway/known_hosts` (the gateway's host key pinned under the
 * alias `postern-gateway`) and `ssh-gateway/ssh_config` (one `Host` entry per
 * catalog target with a `gateway:` entry, matching both the target's host
 * name and the target's own name), and prints how to use them: an `Include`
 * line for ~/.ssh/config, or `GIT_SSH_COMMAND` for git alone. Nothing secret
 * is printed or written here: the client key file is named, never shown.
 *
 * The catalog read is the accepted copy, unauthenticated: this only prints a
 * client configuration; what runs is decided by the daemon.
 */
import { readFile } from 'node:fs/promises';
import { parseCatalog, type SshTarget } from '../../contracts/index.js';
import { parseConfig } from '../../daemon/services/config.js';
import { atomicWriteFile } from '../../home/atomic-write.js';
import type { HomePaths } from '../../home/paths.js';
import { GATEWAY_HOST_ALIAS, gatewayPaths, readGatewayInfo, readGatewayKeys, type GatewayKeys } from '../../home/ssh-gateway-files.js';
import { PosternError } from '../../rules/errors.js';

async function textOr(file: string, fallback: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return fallback;
    throw new PosternError('FILE_IO', `cannot read ${file}`);
  }
}

async function gatewayTargets(paths: HomePaths): Promise<SshTarget[]> {
  const text = await textOr(paths.acceptedCatalog, '');
  if (text === '') return [];
  const catalog = parseCatalog(text, paths.acceptedCatalog);
  return [...catalog.targets.values()].filter((t): t is SshTarget => t.kind === 'ssh' && t.gateway !== undefined);
}

/** A path as ssh_config reads it (quoted when it holds a space). */
const cfgPath = (p: string): string => (/\s/.test(p) ? `"${p}"` : p);

/** The `Host` entry of one target. */
function hostEntry(t: SshTarget, port: number, g: ReturnType<typeof gatewayPaths>): string {
  const names = t.host === t.name ? t.host : `${t.host} ${t.name}`;
  return [
    `Host ${names}`,
    '  HostName 127.0.0.1',
    `  Port ${port}`,
    `  SetEnv POSTERN_TARGET=${t.name}`,
    `  IdentityFile ${cfgPath(g.clientKey)}`,
    '  IdentitiesOnly yes',
    '  IdentityAgent none',
    `  HostKeyAlias ${GATEWAY_HOST_ALIAS}`,
    `  UserKnownHostsFile ${cfgPath(g.knownHosts)}`,
    '  StrictHostKeyChecking yes',
    '  ForwardAgent no',
    '  ForwardX11 no',
    '  ClearAllForwardings yes',
    '  RequestTTY no',
  ].join('\n');
}

interface SshSetup {
  readonly knownHostsLine: string;
  readonly config: string;
  readonly targets: readonly string[];
  readonly port: number;
}

function sshSetupFor(targets: readonly SshTarget[], port: number, keys: GatewayKeys, g: ReturnType<typeof gatewayPaths>): SshSetup {
  const header = '# Written by `postern setup ssh`: these hosts are reached through Postern\'s SSH gateway (docs/ssh-gateway.md).\n';
  return {
    knownHostsLine: `${GATEWAY_HOST_ALIAS} ${keys.hostPublic}`,
    config: `${header}\n${targets.map((t) => hostEntry(t, port, g)).join('\n\n')}\n`,
    targets: targets.map((t) => t.name),
    port,
  };
}

/** Writes the client files and returns what to print. */
export async function setupSsh(paths: HomePaths): Promise<string> {
  const keys = await readGatewayKeys(paths);
  if (keys === null) throw new PosternError('USAGE', 'the SSH gateway has no keys yet: run `postern ssh-gateway enable` first');
  const running = await readGatewayInfo(paths);
  const port = running?.port ?? parseConfig(await textOr(paths.config, ''), paths.config).ssh_gateway.port;
  if (port === 0) throw new PosternError('USAGE', 'config.yaml names port 0 (any free port) and no gateway is running: start the daemon first, then run this again');
  const g = gatewayPaths(paths);
  const targets = await gatewayTargets(paths);
  const s = sshSetupFor(targets, port, keys, g);
  await atomicWriteFile(g.knownHosts, `${s.knownHostsLine}\n`);
  await atomicWriteFile(g.sshConfig, s.config);
  const lines = [
    `wrote ${g.sshConfig} (${s.targets.length === 0 ? 'no target has a gateway: entry in the accepted catalog yet' : `targets: ${s.targets.join(', ')}`}) and ${g.knownHosts}`,
    '',
    'Either add this line at the top of ~/.ssh/config (every ssh and git of this user goes through the gateway for those hosts):',
    `  Include ${cfgPath(g.sshConfig)}`,
    '',
    'or, for git alone:',
    `  export GIT_SSH_COMMAND='ssh -F ${g.sshConfig}'`,
    '',
    `The gateway's host key, pinned in ${g.knownHosts}:`,
    `  ${s.knownHostsLine}`,
  ];
  if (s.targets.length > 0) lines.push('', ...s.targets.map((t) => `e.g. git clone ${t}:org/repo.git   (or the target's own host name, as in your existing remotes)`).slice(0, 1));
  return lines.join('\n');
}
