/**
 * What each agent host expects, as data and pure functions: where its MCP
 * configuration lives, the `postern` entry in its format, the snippet to show,
 * and how to merge the entry into an existing file. Merges keep every other
 * entry and byte they can; an existing, different `postern` entry is a
 * conflict (the caller refuses it unless forced). Every JSON host keeps its
 * servers under one key: `mcpServers`, except VS Code's `servers`.
 */
import { isDeepStrictEqual } from 'node:util';
import { join } from 'node:path';
import type { LaunchSpec } from './launch.js';
import { mergeTable, tomlString, type TableMerge } from './toml-table.js';

export const Hosts = ['claude-code', 'codex', 'cursor', 'gemini', 'vscode', 'json'] as const;
export type Host = (typeof Hosts)[number];
export const isHost = (s: string): s is Host => (Hosts as readonly string[]).includes(s);

export const Scopes = ['user', 'project'] as const;
export type Scope = (typeof Scopes)[number];

export const SERVER_NAME = 'postern';
const CODEX_TABLE = ['mcp_servers', SERVER_NAME] as const;

/** Where things are looked up: the user's home, the current directory, the environment. */
export interface Places {
  readonly userHome: string;
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  /** Where VS Code keeps its user profile. */
  readonly platform: NodeJS.Platform;
}

/** VS Code's user profile folder (its `mcp.json` lives there). */
function vscodeUserDir(p: Places): string {
  if (p.platform === 'darwin') return join(p.userHome, 'Library', 'Application Support', 'Code', 'User');
  const xdg = p.env['XDG_CONFIG_HOME'];
  return join(xdg !== undefined && xdg !== '' ? xdg : join(p.userHome, '.config'), 'Code', 'User');
}

/** The key of the JSON object that holds the servers in `host`'s file. */
const serversKey = (host: Host): string => (host === 'vscode' ? 'servers' : 'mcpServers');

/** The config file `--write` merges into, or null for a host with none (json). */
export function configFile(host: Host, scope: Scope, p: Places): string | null {
  switch (host) {
    case 'claude-code':
      return scope === 'user' ? join(p.userHome, '.claude.json') : join(p.cwd, '.mcp.json');
    case 'cursor':
      return scope === 'user' ? join(p.userHome, '.cursor', 'mcp.json') : join(p.cwd, '.cursor', 'mcp.json');
    case 'gemini':
      return scope === 'user' ? join(p.userHome, '.gemini', 'settings.json') : join(p.cwd, '.gemini', 'settings.json');
    case 'vscode':
      return scope === 'user' ? join(vscodeUserDir(p), 'mcp.json') : join(p.cwd, '.vscode', 'mcp.json');
    case 'codex': {
      const codexHome = p.env['CODEX_HOME'];
      return join(codexHome !== undefined && codexHome !== '' ? codexHome : join(p.userHome, '.codex'), 'config.toml');
    }
    case 'json':
      return null;
  }
}

/** The `postern` entry of the servers object. Claude Code and VS Code record the transport type. */
export function jsonEntry(host: Host, spec: LaunchSpec): Record<string, unknown> {
  const base = { command: spec.command, args: [...spec.args], env: { ...spec.env } };
  return host === 'claude-code' || host === 'vscode' ? { type: 'stdio', ...base } : base;
}

/**
 * Why the Codex entry lets every Postern tool through: Postern is the approver
 * (its cards, its policies), and Codex's own prompt for MCP tools cannot be
 * answered in a headless run (`approval policy is never` refuses the call
 * before Postern sees it).
 */
const CODEX_APPROVAL_WHY = '# Postern asks the operator to approve its calls itself: Codex passes them through';

export function codexBlock(spec: LaunchSpec): string {
  const env = Object.entries(spec.env).map(([k, v]) => `${k} = ${tomlString(v)}`).join(', ');
  return [
    `[${CODEX_TABLE.join('.')}]`,
    `command = ${tomlString(spec.command)}`,
    `args = [${spec.args.map(tomlString).join(', ')}]`,
    `env = { ${env} }`,
    CODEX_APPROVAL_WHY,
    'default_tools_approval_mode = "approve"',
  ].join('\n');
}

/** One word for a POSIX shell, quoted only when it must be. */
export function shellWord(s: string): string {
  return /^[A-Za-z0-9_/.,:=+@%-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

export function claudeAddCommand(spec: LaunchSpec, scope: Scope): string {
  const env = Object.entries(spec.env).map(([k, v]) => `--env ${shellWord(`${k}=${v}`)}`);
  return ['claude mcp add --transport stdio', `--scope ${scope}`, ...env, SERVER_NAME, '--', shellWord(spec.command), ...spec.args.map(shellWord)].join(' ');
}

const mcpServersJson = (host: Host, spec: LaunchSpec): string => JSON.stringify({ [serversKey(host)]: { [SERVER_NAME]: jsonEntry(host, spec) } }, null, 2);

/** What the operator must still do in the host once its entry is in place, if anything. */
export function hostNote(host: Host, p?: { readonly userHome: string; readonly cwd: string }): string | undefined {
  switch (host) {
    case 'gemini': {
      // Gemini CLI's trust file: a JSON object from absolute folder paths to TRUST_FOLDER, TRUST_PARENT or DO_NOT_TRUST.
      const file = p === undefined ? '~/.gemini/trustedFolders.json' : join(p.userHome, '.gemini', 'trustedFolders.json');
      const entry = JSON.stringify({ [p?.cwd ?? '/abs/path/of/project']: 'TRUST_FOLDER' });
      return `Gemini CLI shows the server "Disabled" in a folder it does not trust: trust the folder (/permissions in Gemini CLI, or in ${file}, a JSON object of absolute paths, e.g. ${entry}; TRUST_PARENT trusts the folder's parent), then restart it.`;
    }
    case 'vscode':
      return 'VS Code asks to trust the server the first time: start it from the code lens in mcp.json, or "MCP: List Servers".';
    case 'claude-code':
    case 'codex':
    case 'cursor':
    case 'json':
      return undefined;
  }
}

/** What `postern setup HOST` prints: the snippet, with a line saying where it goes. */
export function snippet(host: Host, spec: LaunchSpec, p: Places): string {
  switch (host) {
    case 'claude-code':
      return [
        '# Claude Code, for all your projects (user scope):',
        claudeAddCommand(spec, 'user'),
        '',
        `# or for one project: this entry in its .mcp.json (\`postern setup claude-code --write --scope project\` merges it)`,
        mcpServersJson(host, spec),
      ].join('\n');
    case 'codex':
      return [`# Codex: add to ${configFile('codex', 'user', p)} (\`postern setup codex --write\` merges it)`, codexBlock(spec)].join('\n');
    case 'cursor':
      return [
        `# Cursor: ${configFile('cursor', 'user', p)} (all projects) or .cursor/mcp.json in a project (\`postern setup cursor --write [--scope project]\` merges it)`,
        mcpServersJson(host, spec),
      ].join('\n');
    case 'gemini':
      return [
        `# Gemini CLI: ${configFile('gemini', 'user', p)} (all projects) or .gemini/settings.json in a project (\`postern setup gemini --write [--scope project]\` merges it)`,
        `# ${hostNote(host, p)}`,
        mcpServersJson(host, spec),
      ].join('\n');
    case 'vscode':
      return [
        `# VS Code: .vscode/mcp.json in a workspace, or ${configFile('vscode', 'user', p)} for your profile (\`postern setup vscode --write [--scope project]\` merges it)`,
        `# ${hostNote(host)}`,
        mcpServersJson(host, spec),
      ].join('\n');
    case 'json':
      return mcpServersJson(host, spec);
  }
}

/** Merges the `postern` entry into the text of a JSON file that keeps its servers under `key` (`mcpServers`, or VS Code's `servers`). */
export function mergeJson(text: string | undefined, entry: Record<string, unknown>, force: boolean, key = 'mcpServers'): TableMerge {
  if (text === undefined || text.trim() === '') return { kind: 'write', text: `${JSON.stringify({ [key]: { [SERVER_NAME]: entry } }, null, 2)}\n`, replaced: false };
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return { kind: 'unsupported', why: 'it is not valid JSON' };
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return { kind: 'unsupported', why: 'it is not a JSON object' };
  const root = doc as Record<string, unknown>;
  const servers = root[key] ?? {};
  if (typeof servers !== 'object' || servers === null || Array.isArray(servers)) return { kind: 'unsupported', why: `"${key}" is not an object` };
  const existing = (servers as Record<string, unknown>)[SERVER_NAME];
  if (existing !== undefined) {
    if (isDeepStrictEqual(existing, entry)) return { kind: 'unchanged' };
    if (!force) return { kind: 'conflict', existing: JSON.stringify(existing, null, 2) };
  }
  root[key] = { ...(servers as Record<string, unknown>), [SERVER_NAME]: entry };
  const indent = /^[{[]\r?\n([ \t]+)/.exec(text)?.[1] ?? '  ';
  return { kind: 'write', text: `${JSON.stringify(root, null, indent)}\n`, replaced: existing !== undefined };
}

/** The merge of `host`'s entry into its config file's current text. */
export function mergeFor(host: Exclude<Host, 'json'>, text: string | undefined, spec: LaunchSpec, force: boolean): TableMerge {
  switch (host) {
    case 'claude-code':
    case 'cursor':
    case 'gemini':
    case 'vscode':
      return mergeJson(text, jsonEntry(host, spec), force, serversKey(host));
    case 'codex':
      return mergeTable(text, CODEX_TABLE, codexBlock(spec), force);
  }
}
