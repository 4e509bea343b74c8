/**
 * The agent host's own sandbox for the model's shell commands, as Postern
 * needs it (docs/sandbox.md): the settings `postern setup HOST` prints next to
 * the MCP entry, what the host's sandbox still allows with them, and the
 * judgement `postern doctor` makes of the host configuration it finds. The
 * MCP servers a host launches (`postern mcp`) run outside its sandbox, so
 * none of these settings touches the agent's tool calls. Pure: callers read
 * the files and pass their text.
 */
import { join } from 'node:path';
import type { Finding } from '../../home/host-checks.js';
import { SERVER_NAME, type Host, type Places } from './hosts.js';

/**
 * A path in Claude Code's sandbox settings: `//` marks an absolute path
 * (a leading `/` alone may be read relative to the settings file).
 */
const claudeSandboxPath = (abs: string): string => `/${abs}`;

/** The `sandbox` block of Claude Code's settings.json that keeps the shell away from `home`. */
function claudeSandboxSettings(home: string): Record<string, unknown> {
  const p = claudeSandboxPath(home);
  return {
    sandbox: {
      enabled: true,
      failIfUnavailable: true,
      allowUnsandboxedCommands: false,
      filesystem: { denyRead: [p], denyWrite: [p] },
      network: { allowLocalBinding: false, allowAllUnixSockets: false },
    },
  };
}

/** What `postern setup HOST` prints after the MCP entry: the host's sandbox settings for the shell, and what that sandbox still allows. */
export function sandboxAdvice(host: Host, home: string, p: Places): string | undefined {
  switch (host) {
    case 'claude-code':
      return [
        `# The agent's shell: Claude Code's sandbox (bubblewrap on Linux, Seatbelt on macOS), in ${join(p.userHome, '.claude', 'settings.json')}:`,
        '# the shell cannot read or write the Postern home, signal Postern, reach its sockets or bind its ports; postern mcp runs outside it.',
        JSON.stringify(claudeSandboxSettings(home), null, 2),
        '# It still allows: reading files outside the home, network to the domains you allow, and any command you list in sandbox.excludedCommands',
        '# (those run unsandboxed: keep postern out of that list). `postern doctor` checks these settings.',
      ].join('\n');
    case 'codex':
      return [
        `# The agent's shell: Codex's sandbox (Landlock and seccomp on Linux, Seatbelt on macOS), in the same config.toml, before any [table]:`,
        'sandbox_mode = "workspace-write"',
        '[sandbox_workspace_write]',
        'network_access = false',
        `# Keep ${home} out of writable_roots. The shell then cannot write the Postern home or reach the network (so not Postern's ports);`,
        '# it still allows: reading files, the Postern home\'s included (the vault is encrypted; the catalog is readable), and signalling your processes.',
        '# For a boundary around signals and reads too, run the agent in a container (docs/sandbox.md). `postern doctor` checks these settings.',
      ].join('\n');
    case 'gemini':
      return [
        `# The agent's shell: Gemini CLI's sandbox, in ${join(p.userHome, '.gemini', 'settings.json')} (or GEMINI_SANDBOX, or gemini --sandbox):`,
        JSON.stringify({ tools: { sandbox: 'docker' } }, null, 2),
        '# "docker" or "podman": the shell runs in a container that mounts the project directory only, with its own processes and loopback;',
        '# it still allows: the network, and any path you add with SANDBOX_MOUNTS (never mount the Postern home). "sandbox-exec" (macOS) reads',
        '# every file, the Postern home included. `postern doctor` checks this setting.',
      ].join('\n');
    case 'cursor':
    case 'vscode':
      return "# The agent's shell: this host has no sandbox setting Postern knows of: its terminal commands run as you (docs/threat-model.md, docs/sandbox.md).";
    case 'json':
      return undefined;
  }
}

/** One host configuration file as `doctor` found it. */
export interface FoundConfig {
  readonly path: string;
  readonly text: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function parseJsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** A Claude Code sandbox path as an absolute path (`//abs`, `~/rel`, `/abs` or relative to the settings file's project). */
function claudePath(entry: string, userHome: string, base: string): string {
  if (entry.startsWith('//')) return entry.slice(1);
  if (entry.startsWith('~/')) return join(userHome, entry.slice(2));
  if (entry.startsWith('/')) return entry;
  return join(base, entry);
}

const covers = (paths: readonly string[], home: string): boolean => paths.some((d) => home === d || home.startsWith(d.endsWith('/') ? d : `${d}/`));

/** Claude Code's settings files, user first then project (later ones override single values; lists add up). */
export function claudeShellFinding(files: readonly FoundConfig[], home: string, p: Places): Finding {
  const check = 'agent shell: Claude Code';
  const where = files.map((f) => f.path).join(', ');
  let enabled = false;
  let unsandboxedAllowed = true;
  let allUnixSockets = false;
  let localBinding = false;
  const denyRead: string[] = [];
  const denyWrite: string[] = [];
  const excluded: string[] = [];
  for (const f of files) {
    const s = parseJsonObject(f.text)?.['sandbox'];
    if (!isObject(s)) continue;
    const base = join(f.path, '..', '..');
    if (typeof s['enabled'] === 'boolean') enabled = s['enabled'];
    if (typeof s['allowUnsandboxedCommands'] === 'boolean') unsandboxedAllowed = s['allowUnsandboxedCommands'];
    if (Array.isArray(s['excludedCommands'])) excluded.push(...s['excludedCommands'].filter((c): c is string => typeof c === 'string'));
    const fs = s['filesystem'];
    if (isObject(fs)) {
      for (const [key, into] of [['denyRead', denyRead], ['denyWrite', denyWrite]] as const) {
        const list = fs[key];
        if (Array.isArray(list)) into.push(...list.filter((e): e is string => typeof e === 'string').map((e) => claudePath(e, p.userHome, base)));
      }
    }
    const net = s['network'];
    if (isObject(net)) {
      if (typeof net['allowAllUnixSockets'] === 'boolean') allUnixSockets = net['allowAllUnixSockets'];
      if (typeof net['allowLocalBinding'] === 'boolean') localBinding = net['allowLocalBinding'];
    }
  }
  const fixAll = `in ~/.claude/settings.json: ${JSON.stringify(claudeSandboxSettings(home))} (\`postern setup claude-code\` prints it)`;
  if (!enabled) return { status: 'warning', check, detail: `${where}: the shell is not sandboxed: it can signal the daemon, write the Postern home and bind its ports`, fix: fixAll };
  const gaps: string[] = [];
  const fixes: string[] = [];
  if (!covers(denyRead, home)) {
    gaps.push('read the Postern home (the vault\'s ciphertext) and connect to its sockets');
    fixes.push(`add "${claudeSandboxPath(home)}" to sandbox.filesystem.denyRead`);
  }
  if (!covers(denyWrite, home)) fixes.push(`add "${claudeSandboxPath(home)}" to sandbox.filesystem.denyWrite (kept out of writes even if a write rule is widened)`);
  if (unsandboxedAllowed) {
    gaps.push('run a command outside the sandbox when you approve it');
    fixes.push('set sandbox.allowUnsandboxedCommands to false');
  }
  if (allUnixSockets) {
    gaps.push('connect to any Unix socket');
    fixes.push('set sandbox.network.allowAllUnixSockets to false');
  }
  if (localBinding) {
    gaps.push('bind loopback ports');
    fixes.push('set sandbox.network.allowLocalBinding to false');
  }
  if (excluded.length > 0) gaps.push(`run ${excluded.slice(0, 5).join(', ')} unsandboxed (sandbox.excludedCommands)`);
  if (gaps.length === 0 && fixes.length === 0) return { status: 'ok', check, detail: `${where}: the shell is sandboxed and the Postern home is hidden from it; it still reads other files and reaches the domains you allow` };
  if (gaps.length === 0) return { status: 'ok', check, detail: `${where}: the shell is sandboxed and cannot read the Postern home; ${fixes.join('; ')} to be sure` };
  return { status: 'warning', check, detail: `${where}: the shell is sandboxed but can still ${gaps.join('; ')}`, fix: fixes.length > 0 ? fixes.join('; ') : 'remove those commands from sandbox.excludedCommands' };
}

/** A top-level (before any table) or `[table]` string/boolean/array value of a TOML text, read line by line: enough for these keys. */
function tomlValue(text: string, table: string | null, key: string): string | undefined {
  let current: string | null = null;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/\s+#.*$/, '').trim();
    const header = /^\[([^\]]+)\]$/.exec(line);
    if (header !== null) {
      current = header[1]!.trim();
      continue;
    }
    const kv = /^([A-Za-z0-9_.-]+)\s*=\s*(.+)$/.exec(line);
    if (kv !== null && current === table && kv[1] === key) return kv[2]!.trim();
  }
  return undefined;
}

const unquote = (v: string | undefined): string | undefined => (v === undefined ? undefined : v.replace(/^"(.*)"$/, '$1').replace(/^'(.*)'$/, '$1'));

/** Codex's config.toml: the sandbox mode, network, and writable roots. */
export function codexShellFinding(file: FoundConfig, home: string): Finding {
  const check = 'agent shell: Codex';
  const mode = unquote(tomlValue(file.text, null, 'sandbox_mode'));
  const fix = `in ${file.path}, before any [table]: sandbox_mode = "workspace-write", and under [sandbox_workspace_write]: network_access = false (\`postern setup codex\` prints it)`;
  if (mode === 'danger-full-access') return { status: 'warning', check, detail: `${file.path}: sandbox_mode = "danger-full-access": the shell is not sandboxed: it can signal the daemon, write the Postern home and bind its ports`, fix };
  if (mode === undefined) return { status: 'ok', check, detail: `${file.path}: no sandbox_mode: Codex's default sandbox applies (read-only or workspace-write, per how it is started); run Codex without --dangerously-bypass-approvals-and-sandbox. It can still read the Postern home and signal your processes` };
  const gaps: string[] = ['read the Postern home (the vault is encrypted)', 'signal your processes'];
  const fixes: string[] = [];
  if (mode === 'workspace-write') {
    const network = tomlValue(file.text, 'sandbox_workspace_write', 'network_access');
    if (network === 'true') {
      gaps.push('reach the network and loopback ports');
      fixes.push('set network_access = false under [sandbox_workspace_write]');
    }
    const roots = tomlValue(file.text, 'sandbox_workspace_write', 'writable_roots') ?? '';
    const rooted = [...roots.matchAll(/"([^"]*)"|'([^']*)'/g)].map((m) => m[1] ?? m[2] ?? '');
    if (covers(rooted, home)) {
      gaps.push('write the Postern home (it is in writable_roots)');
      fixes.push(`remove ${home} from writable_roots`);
    }
  }
  if (fixes.length > 0) return { status: 'warning', check, detail: `${file.path}: sandbox_mode = "${mode}", but the shell can ${gaps.join('; ')}`, fix: fixes.join('; ') };
  return { status: 'ok', check, detail: `${file.path}: sandbox_mode = "${mode}": the shell cannot write the Postern home or bind its ports; it can still ${gaps.join(' and ')} (a container closes those: docs/sandbox.md)` };
}

/** Gemini CLI's settings.json (`tools.sandbox`, or the older top-level `sandbox`), or GEMINI_SANDBOX. */
export function geminiShellFinding(file: FoundConfig, env: NodeJS.ProcessEnv): Finding {
  const check = 'agent shell: Gemini CLI';
  const doc = parseJsonObject(file.text) ?? {};
  const tools = doc['tools'];
  const fromFile = isObject(tools) && tools['sandbox'] !== undefined ? tools['sandbox'] : doc['sandbox'];
  const fromEnv = env['GEMINI_SANDBOX'];
  const value = fromEnv !== undefined && fromEnv !== '' ? fromEnv : fromFile;
  const fix = `in ${file.path}: "tools": { "sandbox": "docker" } (or "podman"), or start gemini with --sandbox`;
  if (value === undefined || value === false || value === 'false' || value === '') {
    return { status: 'warning', check, detail: `${file.path}: no sandbox: the shell runs as you: it can signal the daemon, write the Postern home and bind its ports`, fix };
  }
  if (value === 'sandbox-exec') return { status: 'ok', check, detail: `${file.path}: sandbox-exec (macOS): writes outside the project are refused; the shell can still read the Postern home and reach the network` };
  return { status: 'ok', check, detail: `${file.path}: sandbox ${JSON.stringify(value)}: the shell runs in a container with the project directory only (never add the Postern home to SANDBOX_MOUNTS); it can still reach the network` };
}

/** Where a container sees the Postern home (only its agent socket is there) and the Postern checkout. */
const CONTAINER_HOME = '/run/postern/home';
const CONTAINER_CHECKOUT = '/opt/postern';

/**
 * `postern setup devcontainer`: the two bind mounts (the agent socket, and the
 * Postern checkout read-only so the container's node runs the same shim) and
 * the MCP entry for an agent host inside the container. Nothing else of the
 * home goes in: no vault, no records, no operator socket.
 */
export function devcontainerSetup(agentSocket: string, checkout: string): string {
  const socketTarget = `${CONTAINER_HOME}/run/agent.sock`;
  const entry = { mcpServers: { [SERVER_NAME]: { command: 'node', args: [`${CONTAINER_CHECKOUT}/dist/cli/main.js`, 'mcp'], env: { POSTERN_HOME: CONTAINER_HOME } } } };
  return [
    '# A container (devcontainer.json): the agent socket and the Postern checkout (read-only), nothing else of the home:',
    JSON.stringify({ mounts: [`source=${agentSocket},target=${socketTarget},type=bind`, `source=${checkout},target=${CONTAINER_CHECKOUT},type=bind,readonly`], containerEnv: { POSTERN_HOME: CONTAINER_HOME } }, null, 2),
    `# or with docker run: --mount type=bind,source=${agentSocket},target=${socketTarget} --mount type=bind,source=${checkout},target=${CONTAINER_CHECKOUT},readonly`,
    "# The MCP entry for the agent host inside the container (the container's node, 20.19 or newer, on its PATH):",
    JSON.stringify(entry, null, 2),
    '# The container runs with your uid (the socket is yours), its own processes and network: it cannot signal the daemon, bind its ports on',
    '# this machine, or read the home. The mount names the socket file: after the daemon restarts, restart the container.',
  ].join('\n');
}
