/**
 * Agent hosts connect by absolute path (DESIGN §12): `postern setup` prints
 * and merges configs whose command is an absolute node and script, never a
 * name resolved through PATH or npx; the entry it prints works from another
 * directory with no node on PATH. While the daemon is down, three real
 * clients (SDK 1.x, SDK 2.x, the Inspector CLI) see one tool, postern_status,
 * that says what the operator must run, and the initialize instructions say
 * the same; once the daemon is up, the session is told the list changed.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { childEnv, CLI, cliSandbox, type CliSandbox } from '../helpers/cli.js';
import { install } from '../helpers/daemon.js';

const INSPECTOR = join(process.cwd(), 'node_modules', '@modelcontextprotocol', 'inspector', 'cli', 'build', 'cli.js');
type Entry = { command: string; args: string[]; env: Record<string, string> };

describe('postern setup', () => {
  let sb: CliSandbox;
  let userHome: string;
  const env = (): Record<string, string> => ({ HOME: userHome });
  before(async () => {
    sb = await cliSandbox();
    userHome = join(sb.dir, 'user');
    await mkdir(userHome);
  });
  after(() => sb.cleanup());

  it('prints configs with absolute paths for every host, never npx', async () => {
    for (const host of ['claude-code', 'codex', 'cursor', 'gemini', 'vscode', 'json']) {
      const r = await sb.run(['setup', host], { env: env() });
      assert.equal(r.code, 0, r.stderr);
      assert.ok(!/\bnpx\b/.test(r.stdout), `${host}: ${r.stdout}`);
      assert.ok(r.stdout.includes(realpathSync(CLI)), `${host} names the CLI's own script`);
      assert.ok(r.stdout.includes(sb.home), `${host} names POSTERN_HOME`);
    }
    const claude = await sb.run(['setup', 'claude-code'], { env: env() });
    assert.match(claude.stdout, new RegExp(`claude mcp add --transport stdio --scope user --env POSTERN_HOME=${sb.home} postern -- ${process.execPath} ${realpathSync(CLI)} mcp`));
    const entry = (JSON.parse((await sb.run(['setup', 'json'], { env: env() })).stdout) as { mcpServers: { postern: Entry } }).mcpServers.postern;
    assert.ok(isAbsolute(entry.command) && isAbsolute(entry.args[0]!));
    assert.deepEqual(entry.env, { POSTERN_HOME: sb.home });
  });

  it('the printed entry starts postern mcp from another directory with no node on PATH', async () => {
    const r = await sb.run(['setup', 'json'], { env: env() });
    const entry = (JSON.parse(r.stdout) as { mcpServers: { postern: Entry } }).mcpServers.postern;
    const elsewhere = await mkdtemp(join(tmpdir(), 'postern-elsewhere-'));
    const client = new Client({ name: 'host', version: '1' });
    try {
      await client.connect(new StdioClientTransport({ command: entry.command, args: entry.args, env: { ...entry.env, PATH: '/nonexistent' }, cwd: elsewhere, stderr: 'pipe' }));
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name), ['postern_status']);
    } finally {
      await client.close();
      await rm(elsewhere, { recursive: true, force: true });
    }
  });

  it('--write merges into Codex, Cursor and Claude Code files, keeps a backup, and refuses a different entry without --force', async () => {
    const codex = join(userHome, '.codex', 'config.toml');
    await mkdir(join(userHome, '.codex'));
    const before = 'model = "o3"\n\n[mcp_servers.github]\ncommand = "gh"\n';
    await writeFile(codex, before);
    const cursor = join(userHome, '.cursor', 'mcp.json');
    await mkdir(join(userHome, '.cursor'));
    await writeFile(cursor, JSON.stringify({ mcpServers: { github: { command: 'gh' } } }));
    const claude = join(userHome, '.claude.json');
    await writeFile(claude, JSON.stringify({ numStartups: 3 }));
    for (const [host, file] of [['codex', codex], ['cursor', cursor], ['claude-code', claude]] as const) {
      const w = await sb.run(['setup', host, '--write'], { env: env() });
      assert.equal(w.code, 0, w.stderr);
      assert.match(w.stdout, /added postern to/);
      assert.ok(existsSync(`${file}.postern-backup`));
      const again = await sb.run(['setup', host, '--write'], { env: env() });
      assert.match(again.stdout, /already has this postern entry; nothing changed/);
      const moved = await sb.run(['setup', host, '--write', '--home', join(sb.dir, 'other-home')], { env: env() });
      assert.equal(moved.code, 1);
      assert.match(moved.stderr, /^postern: HOST_CONFIG_CONFLICT: .* already has a different postern entry/m);
      const forced = await sb.run(['setup', host, '--write', '--force', '--home', join(sb.dir, 'other-home')], { env: env() });
      assert.equal(forced.code, 0, forced.stderr);
      assert.match(forced.stdout, /replaced the postern entry/);
    }
    const toml = await readFile(codex, 'utf8');
    assert.ok(toml.startsWith(before));
    assert.match(toml, /\[mcp_servers\.postern\]\ncommand = ".*"\nargs = \[".*main\.js", "mcp"\]\nenv = \{ POSTERN_HOME = ".*other-home" \}\n# Postern asks .*\ndefault_tools_approval_mode = "approve"\n$/);
    const c = JSON.parse(await readFile(cursor, 'utf8')) as { mcpServers: Record<string, unknown> };
    assert.deepEqual(Object.keys(c.mcpServers), ['github', 'postern']);
    const cc = JSON.parse(await readFile(claude, 'utf8')) as { numStartups: number; mcpServers: { postern: { type: string } } };
    assert.equal(cc.numStartups, 3);
    assert.equal(cc.mcpServers.postern.type, 'stdio');
    const json = await sb.run(['setup', 'json', '--write'], { env: env() });
    assert.equal(json.code, 2);
    assert.match(json.stderr, /^postern: USAGE: /);
  });

  it('--write merges into Gemini CLI settings and VS Code mcp.json (user and project), keeps other entries, is idempotent, and says what the host still needs', async () => {
    const project = join(sb.dir, 'project');
    await mkdir(join(project, '.vscode'), { recursive: true });
    const gemini = join(userHome, '.gemini', 'settings.json');
    await mkdir(join(userHome, '.gemini'));
    await writeFile(gemini, JSON.stringify({ theme: 'Default', mcpServers: { github: { command: 'gh' } } }, null, 2));
    const vscodeProject = join(project, '.vscode', 'mcp.json');
    await writeFile(vscodeProject, JSON.stringify({ servers: { github: { type: 'http', url: 'https://api.githubcopilot.com/mcp/' } } }, null, '\t'));
    const vscodeUser = join(userHome, '.config', 'Code', 'User', 'mcp.json');
    const runIn = (args: string[]) => sb.run(['setup', ...args], { env: { ...env(), XDG_CONFIG_HOME: join(userHome, '.config') }, cwd: project });
    for (const [args, file, key, note] of [
      [['gemini', '--write'], gemini, 'mcpServers', /note: Gemini CLI shows the server "Disabled" in a folder it does not trust: trust the folder/],
      [['gemini', '--write', '--scope', 'project'], join(project, '.gemini', 'settings.json'), 'mcpServers', /Disabled/],
      [['vscode', '--write', '--scope', 'project'], vscodeProject, 'servers', /note: VS Code asks to trust the server/],
      [['vscode', '--write'], vscodeUser, 'servers', /MCP: List Servers/],
    ] as const) {
      const w = await runIn([...args]);
      assert.equal(w.code, 0, w.stderr);
      assert.match(w.stdout, new RegExp(`added postern to ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
      assert.match(w.stdout, note);
      const doc = JSON.parse(await readFile(file, 'utf8')) as Record<string, Record<string, Entry & { type?: string }>>;
      const entry = doc[key]!['postern']!;
      assert.ok(isAbsolute(entry.command) && entry.args[0] === realpathSync(CLI), `${args.join(' ')}: ${JSON.stringify(entry)}`);
      assert.deepEqual(entry.env, { POSTERN_HOME: sb.home });
      assert.equal(entry.type, key === 'servers' ? 'stdio' : undefined);
      const again = await runIn([...args]);
      assert.match(again.stdout, /already has this postern entry; nothing changed/);
      const moved = await runIn([...args, '--home', join(sb.dir, 'other-home')]);
      assert.equal(moved.code, 1);
      assert.match(moved.stderr, /HOST_CONFIG_CONFLICT/);
    }
    const g = JSON.parse(await readFile(gemini, 'utf8')) as { theme: string; mcpServers: Record<string, unknown> };
    assert.equal(g.theme, 'Default');
    assert.deepEqual(Object.keys(g.mcpServers), ['github', 'postern']);
    const v = JSON.parse(await readFile(vscodeProject, 'utf8')) as Record<string, Record<string, unknown>>;
    assert.deepEqual(Object.keys(v), ['servers'], 'VS Code reads "servers": no mcpServers key appears');
    assert.deepEqual(Object.keys(v['servers']!), ['github', 'postern']);
    assert.ok((await readFile(vscodeProject, 'utf8')).startsWith('{\n\t"servers"'), 'the file keeps its indentation');
  });
});

describe('postern mcp while the daemon is down', () => {
  let sb: CliSandbox;
  before(async () => {
    sb = await cliSandbox();
  });
  after(() => sb.cleanup());
  const hint = (home: string): RegExp => new RegExp(`not running for the home ${home}: ask the operator to run \`postern daemon\``);

  it('SDK 2.x and 1.x clients list postern_status, read the instructions, and get DAEMON_UNAVAILABLE from it', async () => {
    const env = childEnv(sb.home);
    const v2 = new Client({ name: 'v2', version: '1' });
    await v2.connect(new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], env, stderr: 'pipe' }));
    const v1 = new ClientV1({ name: 'v1', version: '1' });
    await v1.connect(new StdioV1({ command: process.execPath, args: [CLI, 'mcp'], env, stderr: 'pipe' }));
    try {
      for (const c of [v2, v1]) {
        assert.match(c.getInstructions() ?? '', hint(sb.home));
        const { tools } = await c.listTools();
        assert.equal(tools.length, 1);
        assert.equal(tools[0]?.name, 'postern_status');
        assert.match(tools[0]?.description ?? '', hint(sb.home));
        const r = (await c.callTool({ name: 'postern_status', arguments: {} })) as { isError?: boolean; content: { text: string }[]; structuredContent?: Record<string, unknown> };
        assert.equal(r.isError, true);
        assert.equal(r.structuredContent?.['error_code'], 'DAEMON_UNAVAILABLE');
        assert.match(r.content[0]?.text ?? '', hint(sb.home));
      }
    } finally {
      await v2.close();
      await v1.close();
    }
  });

  it('the Inspector CLI lists postern_status with the hint', async () => {
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, [INSPECTOR, '--cli', process.execPath, CLI, 'mcp', '-e', `POSTERN_HOME=${sb.home}`, '--method', 'tools/list'], {
        env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let o = '';
      let e = '';
      child.stdout.on('data', (d: Buffer) => (o += d.toString('utf8')));
      child.stderr.on('data', (d: Buffer) => (e += d.toString('utf8')));
      child.once('exit', (code) => (code === 0 ? resolve(o) : reject(new Error(`inspector exited ${code}: ${e}`))));
    });
    const listed = JSON.parse(out) as { tools: { name: string; description: string }[] };
    assert.deepEqual(listed.tools.map((t) => t.name), ['postern_status']);
    assert.match(listed.tools[0]!.description, hint(sb.home));
  });
});

describe('postern mcp when the daemon comes up', () => {
  it('a session that saw the stand-in listing is told the list changed, and postern_status says the daemon runs', async () => {
    const inst = await install({ secrets: [] });
    try {
      await inst.acceptCatalog({ version: 1, tools: {} });
      let changed!: () => void;
      const listChanged = new Promise<void>((resolve) => (changed = resolve));
      const c = await inst.client({ listChanged: () => changed() });
      const { tools } = await c.listTools();
      assert.deepEqual(tools.map((t) => t.name), ['postern_status']);
      await inst.startDaemon();
      const r = (await c.callTool({ name: 'postern_status', arguments: {} })) as { isError?: boolean; content: { text: string }[] };
      assert.equal(r.isError, undefined);
      assert.match(r.content[0]?.text ?? '', /daemon is running: list the tools again/);
      await listChanged;
      const relisted = await c.listTools();
      assert.ok(relisted.tools.some((t) => t.name === 'postern_call_status'), JSON.stringify(relisted.tools.map((t) => t.name)));
    } finally {
      await inst.cleanup();
    }
  });
});
