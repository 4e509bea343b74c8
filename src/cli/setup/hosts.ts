/**
 * What each agent host expects, as data and pure functions: where its MCP
 * configuration lives, the `postern` entry in its format, the snippet to show,
 * and how to merge the entry into an existing file. Merges keep every other
 * entry and byte they can; an existing, different `postern` entry is a
 * conflict (the caller refuses it unless forced).
 */
import { isDeepStrictEqual } from 'node:util';
import { join } from 'node:path';
import type { LaunchSpec } from './launch.js';
import { mergeTable, tomlString, type TableMerge } from './toml-table.js';

export const Hosts = ['claude-code', 'codex', 'cursor', 'json'] as const;
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
}

/** The config file `--write` merges into, or null for a host with none (json). */
export function configFile(host: Host, scope: Scope, p: Places): string | null {
  switch (host) {
    case 'claude-code':
      return scope === 'user' ? join(p.userHome, '.claude.json') : join(p.cwd, '.mcp.json');
    case 'cursor':
      return scope === 'user' ? join(p.userHome, '.cursor', 'mcp.json') : join(p.cwd, '.cursor', 'mcp.json');
    case 'codex': {
      const codexHome = p.env['CODEX_HOME'];
      return join(codexHome !== undefined && codexHome !== '' ? codexHome : join(p.userHome, '.codex'), 'config.toml');
    }
    case 'json':
      return null;
  }
}

/** The `postern` entry of an `mcpServers` object. Claude Code records the transport type. */
export function jsonEntry(host: Host, spec: LaunchSpec): Record<string, unknown> {
  const base = { command: spec.command, args: [...spec.args], env: { ...spec.env } };
  return host === 'claude-code' ? { type: 'stdio', ...base } : base;
}

export function codexBlock(spec: LaunchSpec): string {
  const env = Object.entries(spec.env).map(([k, v]) => `${k} = ${tomlString(v)}`).join(', ');
  return [
    `[${CODEX_TABLE.join('.')}]`,
    `command = ${tomlString(spec.command)}`,
    `args = [${spec.args.map(tomlString).join(', ')}]`,
    `env = { ${env} }`,
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

const mcpServersJson = (host: Host, spec: LaunchSpec): string => JSON.stringify({ mcpServers: { [SERVER_NAME]: jsonEntry(host, spec) } }, null, 2);

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
    case 'json':
      return mcpServersJson(host, spec);
  }
}

/** Merges the `postern` entry into the text of an `mcpServers` JSON file. */
export function mergeJson(text: string | undefined, entry: Record<string, unknown>, force: boolean): TableMerge {
  if (text === undefined || text.trim() === '') return { kind: 'write', text: `${JSON.stringify({ mcpServers: { [SERVER_NAME]: entry } }, null, 2)}\n`, replaced: false };
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return { kind: 'unsupported', why: 'it is not valid JSON' };
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return { kind: 'unsupported', why: 'it is not a JSON object' };
  const root = doc as Record<string, unknown>;
  const servers = root['mcpServers'] ?? {};
  if (typeof servers !== 'object' || servers === null || Array.isArray(servers)) return { kind: 'unsupported', why: '"mcpServers" is not an object' };
  const existing = (servers as Record<string, unknown>)[SERVER_NAME];
  if (existing !== undefined) {
    if (isDeepStrictEqual(existing, entry)) return { kind: 'unchanged' };
    if (!force) return { kind: 'conflict', existing: JSON.stringify(existing, null, 2) };
  }
  root['mcpServers'] = { ...(servers as Record<string, unknown>), [SERVER_NAME]: entry };
  const indent = /^[{[]\r?\n([ \t]+)/.exec(text)?.[1] ?? '  ';
  return { kind: 'write', text: `${JSON.stringify(root, null, indent)}\n`, replaced: existing !== undefined };
}

/** The merge of `host`'s entry into its config file's current text. */
export function mergeFor(host: Exclude<Host, 'json'>, text: string | undefined, spec: LaunchSpec, force: boolean): TableMerge {
  switch (host) {
    case 'claude-code':
    case 'cursor':
      return mergeJson(text, jsonEntry(host, spec), force);
    case 'codex':
      return mergeTable(text, CODEX_TABLE, codexBlock(spec), force);
  }
}
