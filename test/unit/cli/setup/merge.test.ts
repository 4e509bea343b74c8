/**
 * Merging the postern entry into agent host config files: other entries and
 * bytes survive, the same entry is a no-op, a different one is a conflict
 * unless forced, and TOML forms the line merge cannot handle are refused.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { codexBlock, configFile, jsonEntry, mergeFor, mergeJson, claudeAddCommand, shellWord, type Places } from '../../../../src/cli/setup/hosts.js';
import { keyParts, mergeTable } from '../../../../src/cli/setup/toml-table.js';
import { launchSpec } from '../../../../src/cli/setup/launch.js';

const spec = launchSpec('/home/ann/.postern', { node: '/usr/bin/node', entry: '/opt/postern/dist/cli/main.js' });
const other = launchSpec('/home/ann/other', { node: '/usr/bin/node', entry: '/opt/postern/dist/cli/main.js' });
const TABLE = ['mcp_servers', 'postern'];

describe('JSON (Claude Code, Cursor)', () => {
  it('creates the file, keeps other servers and keys, and is idempotent', () => {
    const created = mergeJson(undefined, jsonEntry('cursor', spec), false);
    assert.equal(created.kind, 'write');
    const existing = JSON.stringify({ theme: 'dark', mcpServers: { github: { command: 'gh-mcp' } } }, null, 4);
    const m = mergeFor('claude-code', existing, spec, false);
    assert.equal(m.kind, 'write');
    if (m.kind !== 'write') return;
    const doc = JSON.parse(m.text) as { theme: string; mcpServers: Record<string, unknown> };
    assert.equal(doc.theme, 'dark');
    assert.deepEqual(doc.mcpServers['github'], { command: 'gh-mcp' });
    assert.deepEqual(doc.mcpServers['postern'], { type: 'stdio', command: '/usr/bin/node', args: ['/opt/postern/dist/cli/main.js', 'mcp'], env: { POSTERN_HOME: '/home/ann/.postern' } });
    assert.ok(m.text.startsWith('{\n    "theme"'), 'the file keeps its indentation');
    assert.equal(mergeFor('claude-code', m.text, spec, false).kind, 'unchanged');
  });

  it('refuses a different postern entry unless forced, and text that is not a JSON object', () => {
    const first = mergeFor('cursor', undefined, spec, false);
    assert.equal(first.kind, 'write');
    if (first.kind !== 'write') return;
    assert.equal(mergeFor('cursor', first.text, other, false).kind, 'conflict');
    const forced = mergeFor('cursor', first.text, other, true);
    assert.equal(forced.kind, 'write');
    if (forced.kind === 'write') assert.equal(forced.replaced, true);
    assert.equal(mergeJson('{ "mcpServers": [] }', jsonEntry('cursor', spec), false).kind, 'unsupported');
    assert.equal(mergeJson('{ not json', jsonEntry('cursor', spec), false).kind, 'unsupported');
    assert.equal(mergeJson('[1]', jsonEntry('cursor', spec), false).kind, 'unsupported');
  });
});

describe('JSON (Gemini CLI, VS Code)', () => {
  const places = (platform: NodeJS.Platform, env: NodeJS.ProcessEnv = {}): Places => ({ userHome: '/home/ann', cwd: '/work/app', env, platform });

  it('Gemini: mcpServers.postern in ~/.gemini/settings.json or .gemini/settings.json, other settings kept, idempotent', () => {
    assert.equal(configFile('gemini', 'user', places('linux')), '/home/ann/.gemini/settings.json');
    assert.equal(configFile('gemini', 'project', places('linux')), '/work/app/.gemini/settings.json');
    const existing = JSON.stringify({ security: { folderTrust: { enabled: true } }, mcpServers: { github: { httpUrl: 'https://x' } } }, null, 2);
    const m = mergeFor('gemini', existing, spec, false);
    assert.equal(m.kind, 'write');
    if (m.kind !== 'write') return;
    const doc = JSON.parse(m.text) as { security: unknown; mcpServers: Record<string, unknown> };
    assert.deepEqual(doc.security, { folderTrust: { enabled: true } });
    assert.deepEqual(doc.mcpServers['github'], { httpUrl: 'https://x' });
    assert.deepEqual(doc.mcpServers['postern'], { command: '/usr/bin/node', args: ['/opt/postern/dist/cli/main.js', 'mcp'], env: { POSTERN_HOME: '/home/ann/.postern' } });
    assert.equal(mergeFor('gemini', m.text, spec, false).kind, 'unchanged');
    assert.equal(mergeFor('gemini', m.text, other, false).kind, 'conflict');
  });

  it('VS Code: servers.postern (not mcpServers) with type stdio, in .vscode/mcp.json or the profile\'s mcp.json', () => {
    assert.equal(configFile('vscode', 'project', places('linux')), '/work/app/.vscode/mcp.json');
    assert.equal(configFile('vscode', 'user', places('linux')), '/home/ann/.config/Code/User/mcp.json');
    assert.equal(configFile('vscode', 'user', places('linux', { XDG_CONFIG_HOME: '/cfg' })), '/cfg/Code/User/mcp.json');
    assert.equal(configFile('vscode', 'user', places('darwin')), '/home/ann/Library/Application Support/Code/User/mcp.json');
    const existing = JSON.stringify({ inputs: [{ id: 'k', type: 'promptString' }], servers: { github: { type: 'http', url: 'https://x' } } });
    const m = mergeFor('vscode', existing, spec, false);
    assert.equal(m.kind, 'write');
    if (m.kind !== 'write') return;
    const doc = JSON.parse(m.text) as Record<string, unknown> & { servers: Record<string, unknown> };
    assert.deepEqual(Object.keys(doc), ['inputs', 'servers'], 'no mcpServers key is added');
    assert.deepEqual(Object.keys(doc.servers), ['github', 'postern']);
    assert.deepEqual(doc.servers['postern'], { type: 'stdio', command: '/usr/bin/node', args: ['/opt/postern/dist/cli/main.js', 'mcp'], env: { POSTERN_HOME: '/home/ann/.postern' } });
    assert.equal(mergeFor('vscode', m.text, spec, false).kind, 'unchanged');
    const created = mergeFor('vscode', undefined, spec, false);
    assert.ok(created.kind === 'write' && Object.keys(JSON.parse(created.text) as object).join() === 'servers');
    assert.equal(mergeFor('vscode', '{ "servers": [] }', spec, false).kind, 'unsupported');
  });
});

describe('TOML (Codex)', () => {
  const block = codexBlock(spec);

  it('the block is the table Codex reads: command, args, env, and Postern\'s calls passed through to Postern\'s own approval', () => {
    assert.equal(block, [
      '[mcp_servers.postern]',
      'command = "/usr/bin/node"',
      'args = ["/opt/postern/dist/cli/main.js", "mcp"]',
      'env = { POSTERN_HOME = "/home/ann/.postern" }',
      '# Postern asks the operator to approve its calls itself: Codex passes them through',
      'default_tools_approval_mode = "approve"',
    ].join('\n'));
    // TOML basic strings escape like JSON; a path with a quote and a backslash stays one string.
    const odd = codexBlock(launchSpec('/home/a "b"\\c', { node: '/n', entry: '/e' }));
    assert.ok(odd.includes('POSTERN_HOME = "/home/a \\"b\\"\\\\c"'), odd);
  });

  it('appends to a file, keeping every other byte, and is idempotent', () => {
    const text = '# my settings\nmodel = "o3"\n\n[mcp_servers.github]\ncommand = "gh"\nargs = ["mcp"]\n';
    const m = mergeTable(text, TABLE, block, false);
    assert.equal(m.kind, 'write');
    if (m.kind !== 'write') return;
    assert.ok(m.text.startsWith(text), 'the old text is kept as it was');
    assert.ok(m.text.endsWith(`${block}\n`));
    assert.equal(mergeTable(m.text, TABLE, block, false).kind, 'unchanged');
    assert.equal(mergeTable(m.text, TABLE, codexBlock(other), false).kind, 'conflict');
  });

  it('replaces only the postern table and its sub-tables when forced', () => {
    const text = [
      'model = "o3"',
      '',
      '[mcp_servers.postern]',
      'command = "npx"',
      'args = ["postern", "mcp"]',
      '',
      '[mcp_servers.postern.env]',
      'POSTERN_HOME = "/old"',
      '',
      '# the next server',
      '[mcp_servers.github]',
      'command = "gh"',
      '',
    ].join('\n');
    assert.equal(mergeTable(text, TABLE, block, false).kind, 'conflict');
    const m = mergeTable(text, TABLE, block, true);
    assert.equal(m.kind, 'write');
    if (m.kind !== 'write') return;
    assert.equal(m.text, ['model = "o3"', '', block, '', '# the next server', '[mcp_servers.github]', 'command = "gh"', ''].join('\n'));
  });

  it('a header inside a multi-line string is not a table', () => {
    const text = 'notes = """\n[mcp_servers.postern]\ncommand = "fake"\n"""\n';
    const m = mergeTable(text, TABLE, block, false);
    assert.equal(m.kind, 'write');
    if (m.kind === 'write') assert.ok(m.text.startsWith(text) && m.text.endsWith(`${block}\n`));
  });

  it('refuses postern defined as an inline table or by dotted keys, and a split table', () => {
    for (const text of [
      'mcp_servers.postern = { command = "x" }\n',
      '[mcp_servers]\npostern = { command = "x" }\n',
      '[mcp_servers]\npostern.command = "x"\n',
      'mcp_servers = { postern = { command = "x" } }\n',
      '[mcp_servers."postern"]\ncommand = "x"\n[other]\na = 1\n[mcp_servers.postern.env]\nA = "b"\n',
    ]) {
      assert.equal(mergeTable(text, TABLE, block, true).kind, 'unsupported', text);
    }
    assert.deepEqual(keyParts('mcp_servers . "post.ern"'), ['mcp_servers', 'post.ern']);
  });

  it('keeps CRLF line ends', () => {
    const m = mergeTable('a = 1\r\n', TABLE, block, false);
    assert.equal(m.kind, 'write');
    if (m.kind === 'write') assert.ok(m.text.includes('[mcp_servers.postern]\r\ncommand'));
  });
});

describe('the claude mcp add line', () => {
  it('quotes what a shell would split, and puts the server after --', () => {
    const s = launchSpec("/home/o'neil/my home", { node: '/usr/bin/node', entry: '/opt/p/main.js' });
    assert.equal(
      claudeAddCommand(s, 'user'),
      `claude mcp add --transport stdio --scope user --env 'POSTERN_HOME=/home/o'\\''neil/my home' postern -- /usr/bin/node /opt/p/main.js mcp`,
    );
    assert.equal(shellWord('/a/b'), '/a/b');
  });

  it('refuses paths with control characters', () => {
    assert.throws(() => launchSpec('/home/a\nb', { node: '/n', entry: '/e' }), /control characters/);
  });
});
