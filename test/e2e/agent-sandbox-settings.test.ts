/**
 * `postern setup HOST` prints each host's sandbox settings for the agent's
 * shell next to the MCP entry, and `postern doctor` judges the host
 * configurations it finds: unsandboxed, sandboxed with a gap (and the setting
 * that closes it), or sandboxed away from the home. The settings setup
 * prints are the ones doctor then reports as ok; what they enforce is shown
 * by test/e2e/agent-sandbox.test.ts (the attacks from bubblewrap).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cliSandbox, type CliSandbox } from '../helpers/cli.js';

type Finding = { status: string; check: string; detail: string; fix?: string };

describe('setup and doctor: the agent shell sandbox of each host', () => {
  let sb: CliSandbox;
  let userHome: string;
  let project: string;
  const env = (): Record<string, string> => ({ HOME: userHome });

  const doctor = async (check: string): Promise<Finding | undefined> => {
    const r = await sb.run(['doctor', '--json'], { env: env(), cwd: project });
    assert.equal(r.code, 0, r.stderr);
    return (JSON.parse(r.stdout) as Finding[]).find((f) => f.check === check);
  };

  before(async () => {
    sb = await cliSandbox();
    userHome = join(sb.dir, 'user');
    project = join(sb.dir, 'project');
    await mkdir(join(userHome, '.claude'), { recursive: true });
    await mkdir(join(userHome, '.codex'), { recursive: true });
    await mkdir(join(userHome, '.gemini'), { recursive: true });
    await mkdir(project);
  });
  after(() => sb.cleanup());

  it('doctor names no host whose configuration is absent', async () => {
    const r = await sb.run(['doctor', '--json'], { env: env(), cwd: project });
    assert.ok(!(JSON.parse(r.stdout) as Finding[]).some((f) => f.check.startsWith('agent shell')), r.stdout);
  });

  it('Claude Code: setup prints the sandbox block that hides the home; doctor warns without it, names each gap, and is ok with it', async () => {
    const r = await sb.run(['setup', 'claude-code'], { env: env(), cwd: project });
    assert.equal(r.code, 0, r.stderr);
    const at = r.stdout.indexOf("# The agent's shell: Claude Code's sandbox");
    assert.ok(at > r.stdout.indexOf('claude mcp add'), 'the sandbox settings follow the MCP entry');
    const start = r.stdout.indexOf('\n{', at) + 1;
    const end = r.stdout.indexOf('\n}', start) + 2;
    const block = JSON.parse(r.stdout.slice(start, end)) as { sandbox: { enabled: boolean; filesystem: { denyRead: string[] } } };
    assert.equal(block.sandbox.enabled, true);
    assert.deepEqual(block.sandbox.filesystem.denyRead, [`/${sb.home}`]);
    assert.match(r.stdout, /still allows: reading files outside the home/);

    const settings = join(userHome, '.claude', 'settings.json');
    await writeFile(settings, JSON.stringify({ permissions: {} }));
    let f = await doctor('agent shell: Claude Code');
    assert.equal(f?.status, 'warning');
    assert.match(f?.detail ?? '', /not sandboxed: it can signal the daemon, write the Postern home and bind its ports/);
    assert.match(f?.fix ?? '', /"enabled":true/);

    await writeFile(settings, JSON.stringify({ sandbox: { enabled: true } }));
    f = await doctor('agent shell: Claude Code');
    assert.equal(f?.status, 'warning');
    assert.match(f?.detail ?? '', /can still read the Postern home .* connect to its sockets; run a command outside the sandbox/);
    assert.match(f?.fix ?? '', new RegExp(`add "/${sb.home}" to sandbox.filesystem.denyRead.*allowUnsandboxedCommands to false`));

    await writeFile(settings, JSON.stringify({ model: 'x', ...block }));
    f = await doctor('agent shell: Claude Code');
    assert.equal(f?.status, 'ok', JSON.stringify(f));
    assert.match(f?.detail ?? '', /sandboxed and the Postern home is hidden from it/);

    // A project's local settings that open Unix sockets again are named.
    await mkdir(join(project, '.claude'));
    await writeFile(join(project, '.claude', 'settings.local.json'), JSON.stringify({ sandbox: { network: { allowAllUnixSockets: true } } }));
    f = await doctor('agent shell: Claude Code');
    assert.equal(f?.status, 'warning');
    assert.match(f?.detail ?? '', /connect to any Unix socket/);
  });

  it('Codex: setup prints workspace-write without network; doctor judges the mode, the network and the writable roots', async () => {
    const r = await sb.run(['setup', 'codex'], { env: env(), cwd: project });
    assert.match(r.stdout, /\[mcp_servers\.postern\][\s\S]*sandbox_mode = "workspace-write"\n\[sandbox_workspace_write\]\nnetwork_access = false/);
    assert.match(r.stdout, /still allows: reading files, the Postern home's included/);
    const config = join(userHome, '.codex', 'config.toml');
    await writeFile(config, 'sandbox_mode = "danger-full-access"\n');
    let f = await doctor('agent shell: Codex');
    assert.equal(f?.status, 'warning');
    assert.match(f?.fix ?? '', /sandbox_mode = "workspace-write"/);
    await writeFile(config, `sandbox_mode = "workspace-write"\n\n[sandbox_workspace_write]\nnetwork_access = true\nwritable_roots = ["${sb.dir}"]\n`);
    f = await doctor('agent shell: Codex');
    assert.equal(f?.status, 'warning');
    assert.match(f?.detail ?? '', /reach the network and loopback ports; write the Postern home/);
    assert.match(f?.fix ?? '', new RegExp(`network_access = false.*remove ${sb.home} from writable_roots`));
    await writeFile(config, 'sandbox_mode = "workspace-write" # the shell\n\n[sandbox_workspace_write]\nnetwork_access = false\n');
    f = await doctor('agent shell: Codex');
    assert.equal(f?.status, 'ok', JSON.stringify(f));
    assert.match(f?.detail ?? '', /can still read the Postern home .* and signal your processes/);
  });

  it('Gemini CLI: setup prints tools.sandbox; doctor warns without a sandbox and is ok with a container', async () => {
    const r = await sb.run(['setup', 'gemini'], { env: env(), cwd: project });
    assert.match(r.stdout, /"sandbox": "docker"/);
    const settings = join(userHome, '.gemini', 'settings.json');
    await writeFile(settings, JSON.stringify({ mcpServers: {} }));
    let f = await doctor('agent shell: Gemini CLI');
    assert.equal(f?.status, 'warning');
    assert.match(f?.fix ?? '', /"tools": \{ "sandbox": "docker" \}/);
    await writeFile(settings, JSON.stringify({ tools: { sandbox: 'podman' } }));
    f = await doctor('agent shell: Gemini CLI');
    assert.equal(f?.status, 'ok');
    assert.match(f?.detail ?? '', /container with the project directory only/);
  });
});
