/**
 * The agent hosts that install from the npm registry judge `postern setup
 * HOST --write` themselves: each host's own `mcp list` (Claude Code, Gemini
 * CLI: a real health check that starts `postern mcp`; Codex: the entry as it
 * read it, enabled) reports the entry, with the daemon down and up. A broken
 * entry is reported as failed by the same command, so a pass means the host
 * started Postern, not that the listing ignores failures. Gemini CLI shows
 * the server "Disabled" in a folder it does not trust, which is what the
 * README's trust note answers.
 *
 * The hosts are the pinned versions in .ci/hosts/package.json, installed by
 * .ci/run (`npm ci --prefix .ci/hosts --ignore-scripts`); the test skips
 * where they are absent unless POSTERN_REQUIRE_AGENT_HOSTS=1 (CI sets it).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CLI } from '../helpers/cli.js';
import { install, type Installation } from '../helpers/daemon.js';

const BIN = join(process.cwd(), '.ci', 'hosts', 'node_modules', '.bin');
const HOSTS = { 'claude-code': 'claude', codex: 'codex', gemini: 'gemini' } as const;
type HostName = keyof typeof HOSTS;
const present = Object.values(HOSTS).every((b) => existsSync(join(BIN, b)));
const required = process.env['POSTERN_REQUIRE_AGENT_HOSTS'] === '1';
const skip = present ? false : required ? false : 'the agent hosts are not installed (npm ci --prefix .ci/hosts --ignore-scripts)';

/** Runs a host's CLI in `cwd` with HOME = the test's user home, nothing else from the developer's environment. */
function host(bin: string, args: readonly string[], o: { home: string; cwd: string }): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(BIN, bin), [...args], {
      cwd: o.cwd,
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        HOME: o.home,
        CODEX_HOME: join(o.home, '.codex'),
        NO_COLOR: '1',
        // Nothing a listing needs goes to the network.
        DISABLE_AUTOUPDATER: '1',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, out }));
  });
}

/** The host's own line for the `postern` server. */
function postern(out: string): string {
  const line = out.split('\n').find((l) => /\bpostern\b/.test(l) && l.includes(realpathSync(CLI)));
  assert.ok(line !== undefined, `no postern line in:\n${out}`);
  return line;
}

describe('agent hosts list the entry postern setup wrote', { skip }, () => {
  let inst: Installation;
  let userHome: string;
  let project: string;
  const list = async (name: HostName): Promise<string> => {
    const r = await host(HOSTS[name], ['mcp', 'list'], { home: userHome, cwd: project });
    assert.equal(r.code, 0, r.out);
    return postern(r.out);
  };

  before(async () => {
    inst = await install({ secrets: [] });
    await inst.acceptCatalog({ version: 1, tools: {} });
    userHome = join(inst.sb.dir, 'user');
    project = join(inst.sb.dir, 'project');
    await mkdir(userHome);
    await mkdir(project);
    for (const name of Object.keys(HOSTS)) {
      const w = await inst.sb.run(['setup', name, '--write'], { env: { HOME: userHome } });
      assert.equal(w.code, 0, w.stderr);
    }
  });
  after(() => inst.cleanup());

  it('with the daemon down: Claude Code and Gemini CLI (trusted folder) connect, Codex lists it enabled; Gemini CLI disables it in a folder it does not trust', async () => {
    assert.match(await list('claude-code'), /✔ Connected/);
    assert.match(await list('codex'), /\benabled\b/);
    await writeFile(join(userHome, '.gemini', 'trustedFolders.json'), JSON.stringify({ [join(inst.sb.dir, 'elsewhere')]: 'TRUST_FOLDER' }));
    assert.match(await list('gemini'), /Disabled/);
    await writeFile(join(userHome, '.gemini', 'trustedFolders.json'), JSON.stringify({ [project]: 'TRUST_FOLDER' }));
    assert.match(await list('gemini'), /- Connected/);
  });

  it('with the daemon up, the same entries connect', async () => {
    await inst.startDaemon();
    try {
      assert.match(await list('claude-code'), /✔ Connected/);
      assert.match(await list('gemini'), /- Connected/);
    } finally {
      await inst.stopDaemon();
    }
  });

  it('an entry that cannot start is reported failed by the same listing (the check can fail)', async () => {
    const claudeFile = join(userHome, '.claude.json');
    const geminiFile = join(userHome, '.gemini', 'settings.json');
    const saved = { claude: await readFile(claudeFile, 'utf8'), gemini: await readFile(geminiFile, 'utf8') };
    const broken = (text: string, key: 'mcpServers'): string => {
      const doc = JSON.parse(text) as Record<string, Record<string, { args: string[] }>>;
      const entry = doc[key]!['postern']!;
      entry.args = [`${realpathSync(CLI)}.missing`, ...entry.args.slice(1)];
      return JSON.stringify(doc);
    };
    try {
      await writeFile(claudeFile, broken(saved.claude, 'mcpServers'));
      await writeFile(geminiFile, broken(saved.gemini, 'mcpServers'));
      const lineOf = async (name: HostName): Promise<string> => {
        const r = await host(HOSTS[name], ['mcp', 'list'], { home: userHome, cwd: project });
        const line = r.out.split('\n').find((l) => /\bpostern\b/.test(l));
        assert.ok(line !== undefined, r.out);
        return line;
      };
      const claude = await lineOf('claude-code');
      assert.doesNotMatch(claude, /Connected/);
      assert.match(claude, /Failed|✗/);
      assert.match(await lineOf('gemini'), /Disconnected/);
    } finally {
      await writeFile(claudeFile, saved.claude);
      await writeFile(geminiFile, saved.gemini);
    }
  });
});
