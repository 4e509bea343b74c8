/**
 * The SSH gateway's approvals with the real programs — OpenSSH's `ssh` and
 * `git` through `postern setup ssh`'s ssh_config, the real daemon's gateway,
 * a real `sshd` serving bare repositories (test/helpers/git-sshd.ts) — and
 * the operator deciding with the CLI (`postern approvals show` / `approve
 * --digest` / `deny`), the same operator channel the TUI uses.
 *
 * Proves: the card names the requesting process's command line (its
 * hostile bytes escaped in `approvals show`) and a push approved there lands;
 * `postern audit show` prints repository and direction; a `session` push
 * approved for the session runs again on that SSH connection (a
 * ControlMaster) without a card, and a fresh connection asks again; a daemon
 * killed (-9) while the destination is receiving a push leaves
 * `outcome_unknown` and Postern sends nothing again after the restart; a push
 * nobody decides waits (the agent's terminal says so), then times out with
 * nothing sent; an unattended daemon refuses a push that needs approval
 * (APPROVAL_UNAVAILABLE) and runs a fetch that needs none; the target's
 * limits refuse a fetch over `per_minute` before sshd sees it. The key is in
 * no output, journal or file of the home, and not in the daemon's log.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { runProgram } from '../helpers/agent-run.js';
import { install, type Installation } from '../helpers/daemon.js';
import { startGitSshd, type GitSshd } from '../helpers/git-sshd.js';
import { sshdSkip } from '../helpers/sshd.js';
import { waitFor } from '../helpers/wait.js';

const skip = sshdSkip();

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

describe('ssh gateway: approvals, sessions, timeouts, a killed daemon, unattended runs and limits', { skip, timeout: 400_000 }, () => {
  let inst: Installation;
  let git: GitSshd;
  let work: string;
  let sshConfig: string;
  let shortDir: string;
  const outputs: string[] = [];
  const g = (): string[] => ['--passphrase-file', inst.passFile];

  function catalog(): unknown {
    const s = git.srv;
    const target = (gateway: unknown, extra: Record<string, unknown> = {}) => ({ ssh: { host: s.host, port: s.port, user: s.user, credential: 'deploy-key', host_key: s.hostKeyFingerprint, gateway, ...extra } });
    return {
      targets: {
        box: target({ git: { repositories: ['org/repo.git', 'org/slow.git'], push: 'per-call', fetch: 'none' } }),
        sess: target({ git: { repositories: ['org/repo.git'], push: 'session', fetch: 'refused' } }),
        lim: target({ git: { repositories: ['org/repo.git'], push: 'refused', fetch: 'none' } }, { limits: { per_minute: 2 } }),
      },
      tools: {},
    };
  }

  function run(cmd: string, args: readonly string[], opts: { cwd?: string; env?: Record<string, string> } = {}): Promise<Run> {
    const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: work, GIT_SSH_COMMAND: `ssh -F ${sshConfig}`, GIT_CONFIG_NOSYSTEM: '1', LC_ALL: 'C', ...opts.env };
    return runProgram(cmd, args, { cwd: opts.cwd ?? join(work, 'clone'), env, keep: (out, err) => void outputs.push(out, err) });
  }

  const gitIn = (args: readonly string[], env: Record<string, string> = {}): Promise<Run> => run('git', ['-c', 'user.name=agent', '-c', 'user.email=agent@example.invalid', ...args], { env });
  const commit = async (msg: string): Promise<string> => {
    const c = await gitIn(['commit', '-q', '--allow-empty', '-m', msg]);
    assert.equal(c.code, 0, c.stderr);
    return (await gitIn(['rev-parse', 'HEAD'])).stdout.trim();
  };

  async function cli(args: readonly string[]): Promise<Run> {
    const r = await inst.sb.run([...args, ...g()]);
    outputs.push(r.stdout, r.stderr);
    return r;
  }

  /** The id of the pending card for `tool`, once it is in the queue (`approvals list`, as the operator sees it). */
  async function pendingId(tool: string): Promise<string> {
    const found: { id?: string } = {};
    await waitFor(async () => {
      const list = await cli(['approvals', 'list', '--json']);
      found.id = (JSON.parse(list.stdout) as { id: string; tool: string }[]).find((c) => c.tool === tool)?.id;
      return found.id !== undefined;
    }, `a pending approval for ${tool}`);
    return found.id!;
  }

  /** `approvals show` then `approvals approve --digest` (what an operator at the CLI does); returns what show printed. */
  async function approveWithCli(tool: string, session = false): Promise<string> {
    const id = await pendingId(tool);
    const shown = await cli(['approvals', 'show', id.slice(0, 8)]);
    assert.equal(shown.code, 0, shown.stderr);
    const digest = /presentation {2}sha256 ([0-9a-f]{64})/.exec(shown.stdout)?.[1] ?? '';
    const ok = await cli(['approvals', 'approve', id.slice(0, 8), '--digest', digest.slice(0, 12), ...(session ? ['--session'] : [])]);
    assert.equal(ok.code, 0, ok.stderr);
    return shown.stdout;
  }

  async function lastCall(tool: string): Promise<{ json: Record<string, unknown>; text: string }> {
    const r = await cli(['audit', 'activity', '--tool', tool, '--limit', '1', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const [row] = JSON.parse(r.stdout) as { call: { call_id: string } }[];
    assert.ok(row !== undefined, `a journaled call of ${tool}`);
    const json = await cli(['audit', 'show', row.call.call_id, '--json']);
    const text = await cli(['audit', 'show', row.call.call_id]);
    assert.equal(json.code, 0, json.stderr);
    assert.equal(text.code, 0, text.stderr);
    return { json: JSON.parse(json.stdout) as Record<string, unknown>, text: text.stdout };
  }

  const receivePacks = (repo: string): number => git.commands().filter((c) => c === `git-receive-pack '${repo}'`).length;
  const connections = (): number => (git.srv.log().match(/^Connection from /gm) ?? []).length;

  /** (Re)starts the daemon with config.yaml's `set` applied, and writes the client's ssh_config for its port. */
  async function restart(set: Record<string, unknown>, args: readonly string[] = []): Promise<void> {
    if (inst.daemon !== null) await inst.stopDaemon();
    const file = join(inst.sb.home, 'config.yaml');
    writeFileSync(file, stringify({ ...(parse(readFileSync(file, 'utf8')) as Record<string, unknown>), ...set }), { mode: 0o600 });
    await inst.startDaemon([...args]);
    const setup = await inst.sb.run(['setup', 'ssh']);
    assert.equal(setup.code, 0, setup.stderr);
  }

  before(async () => {
    git = await startGitSshd(['org/repo.git', 'org/slow.git']);
    // The destination holds a push to org/slow.git in its pre-receive hook until the test lets it go.
    const hook = join(git.repoDir('org/slow.git'), 'hooks', 'pre-receive');
    writeFileSync(hook, `#!/bin/sh\ncat >/dev/null\necho receiving >> '${join(git.srv.dir, 'slow.marker')}'\nwhile [ ! -e '${join(git.srv.dir, 'slow.release')}' ]; do sleep 0.1; done\n`, { mode: 0o755 });
    inst = await install({ secrets: [{ name: 'deploy-key', kind: 'ssh_key', value: git.srv.clientKey.private }], config: { approval_timeout_seconds: 120 } });
    work = join(inst.sb.dir, 'agent');
    mkdirSync(work);
    shortDir = mkdtempSync(join(tmpdir(), 'pg-'));
    const enable = await inst.sb.run(['ssh-gateway', 'enable', '--port', '0', ...g()]);
    assert.equal(enable.code, 0, enable.stderr);
    await inst.acceptCatalog(catalog());
    sshConfig = join(inst.sb.home, 'ssh-gateway', 'ssh_config');
    await restart({});
    const init = await run('git', ['init', '-q', '-b', 'main', 'clone'], { cwd: work });
    assert.equal(init.code, 0, init.stderr);
    await commit('first');
  });

  after(async () => {
    const key = git.srv.clientKey.private;
    inst.sb.assertNeverPrinted(key.trim(), 'the deploy key');
    const lines = key.split('\n').filter((l) => /^[A-Za-z0-9+/=]{20,}$/.test(l));
    for (const out of [...outputs, inst.daemonLog]) for (const l of lines) assert.ok(!out.includes(l), 'a line of the deploy key reached an output or the daemon log');
    // Every file of the home (journals, run files, logs, reports); the vault holds the key sealed.
    const walk = (dir: string): string[] => readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? walk(join(dir, n)) : [join(dir, n)]));
    for (const f of walk(inst.sb.home)) {
      if (statSync(f).isSocket?.() === true) continue;
      const bytes = readFileSync(f);
      for (const l of lines) assert.ok(!bytes.includes(l), `a line of the deploy key is in ${f}`);
    }
    await inst.cleanup();
    await git.stop();
    rmSync(shortDir, { recursive: true, force: true });
  });

  it("the card names the requesting process's command line, escaped; approved with `postern approvals`, the push lands; audit shows repository and direction", async () => {
    const head = await commit('second');
    // git's command line carries terminal control bytes (the agent chooses its own argv); git starts ssh.
    const hostile = 'agent\x1b]0;pwned\x07\x1b[2J';
    const pushing = gitIn(['-c', `core.note=${hostile}`, 'push', 'box:org/repo.git', 'HEAD:refs/heads/main']);
    const shown = await approveWithCli('ssh-gateway:box:git-push');
    assert.match(shown, /git push to ssh:\/\/127\.0\.0\.1:\d+\/org\/repo\.git as /);
    assert.match(shown, /requested_by.*pid \d+: ssh -F .*; started by pid \d+: .*git -c user\.name=agent/);
    assert.match(shown, /git-receive-pack/);
    // The arguments are shown as JSON (control characters as \u escapes), through the terminal-text module (a backslash doubled).
    assert.ok(shown.includes('core.note=agent\\\\u001b]0;pwned\\\\u0007\\\\u001b[2J'), `the hostile bytes are shown escaped:\n${shown}`);
    assert.ok(!shown.includes('\x1b') && !shown.includes('\x07'), 'no raw control byte reached the operator');
    const r = await pushing;
    assert.equal(r.code, 0, r.stderr);
    assert.equal(git.ref('org/repo.git', 'refs/heads/main'), head);
    const { json, text } = await lastCall('ssh-gateway:box:git-push');
    const call = json['call'] as Record<string, unknown>;
    const raw = call['raw_arguments'] as Record<string, unknown>;
    assert.match(String(raw['requested_by']), /^pid \d+: ssh -F .*git-receive-pack/);
    assert.match(text, /repository\W+org\/repo\.git/);
    assert.match(text, /direction\W+push/);
    assert.ok(!text.includes('\x1b'), 'audit show escapes the command line too');
  });

  it('session mode: approved for the session, a second push on the same SSH connection runs without a card; a new connection asks again', async () => {
    const sock = join(shortDir, 'cm');
    const master: ChildProcess = spawn('ssh', ['-F', sshConfig, '-M', '-N', '-S', sock, '-o', 'ControlPersist=no', 'sess'], { env: { PATH: process.env['PATH'] ?? '', HOME: work }, stdio: 'ignore' });
    try {
      await waitFor(() => existsSync(sock), 'the ControlMaster socket');
      const viaMaster = { GIT_SSH_COMMAND: `ssh -F ${sshConfig} -S ${sock} -o ControlMaster=no` };
      const first = await commit('session one');
      const pushing = gitIn(['push', 'sess:org/repo.git', 'HEAD:refs/heads/sess'], viaMaster);
      const shown = await approveWithCli('ssh-gateway:sess:git-push', true);
      assert.match(shown, /requested_by.*ssh .*-M -N -S /);
      const r1 = await pushing;
      assert.equal(r1.code, 0, r1.stderr);
      assert.equal(git.ref('org/repo.git', 'refs/heads/sess'), first);
      const second = await commit('session two');
      const r2 = await gitIn(['push', 'sess:org/repo.git', 'HEAD:refs/heads/sess'], viaMaster);
      assert.equal(r2.code, 0, r2.stderr);
      assert.doesNotMatch(r2.stderr, /waiting for operator approval/);
      assert.equal(git.ref('org/repo.git', 'refs/heads/sess'), second);
      const { json, text } = await lastCall('ssh-gateway:sess:git-push');
      assert.equal(((json['call'] as Record<string, unknown>)['approval'] as Record<string, unknown>)['mode'], 'session', JSON.stringify(json['call']));
      assert.match(text, /approval\s+session/);
      // A new connection is a new session: asked again, and denied here.
      await commit('session three');
      const fresh = gitIn(['push', 'sess:org/repo.git', 'HEAD:refs/heads/sess']);
      const id = await pendingId('ssh-gateway:sess:git-push');
      const deny = await cli(['approvals', 'deny', id.slice(0, 8), '--reason', 'one branch a day']);
      assert.equal(deny.code, 0, deny.stderr);
      const r3 = await fresh;
      assert.notEqual(r3.code, 0);
      assert.match(r3.stderr, /postern: APPROVAL_DENIED: .*one branch a day/);
      assert.equal(git.ref('org/repo.git', 'refs/heads/sess'), second);
    } finally {
      const exited = new Promise((r) => master.once('exit', r));
      master.kill();
      await exited;
    }
  });

  it('a daemon killed (-9) while the destination receives a push: outcome_unknown after the restart, and Postern never sends it again', async () => {
    await commit('slow');
    const before = receivePacks('org/slow.git');
    const pushing = gitIn(['push', 'box:org/slow.git', 'HEAD:refs/heads/main']);
    await approveWithCli('ssh-gateway:box:git-push');
    const marker = join(git.srv.dir, 'slow.marker');
    await waitFor(() => existsSync(marker), 'the destination to be receiving the push');
    await inst.stopDaemon('SIGKILL');
    const r = await pushing;
    assert.notEqual(r.code, 0, "the agent's git sees its connection end");
    writeFileSync(join(git.srv.dir, 'slow.release'), '');
    await restart({});
    const { json, text } = await lastCall('ssh-gateway:box:git-push');
    const normalized = (json['call'] as Record<string, unknown>)['normalized_arguments'] as Record<string, unknown>;
    assert.equal(normalized['repository'], 'org/slow.git');
    assert.equal(normalized['direction'], 'push');
    assert.match(JSON.stringify(json['outcome']), /outcome_unknown/);
    assert.match(text, /outcome_unknown/);
    // The restarted daemon has recovered (it is serving): nothing was sent again.
    const ls = await gitIn(['ls-remote', 'box:org/repo.git']);
    assert.equal(ls.code, 0, ls.stderr);
    assert.equal(receivePacks('org/slow.git'), before + 1, 'sent once, never again');
  });

  it('a push nobody decides waits (the agent is told), then times out: APPROVAL_TIMEOUT, nothing sent', async () => {
    await restart({ approval_timeout_seconds: 3 });
    await commit('never decided');
    const before = receivePacks('org/repo.git');
    const pushing = gitIn(['push', 'box:org/repo.git', 'HEAD:refs/heads/late']);
    await pendingId('ssh-gateway:box:git-push');
    const r = await pushing;
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /postern: waiting for operator approval/);
    assert.match(r.stderr, /postern: APPROVAL_TIMEOUT: /);
    assert.equal(git.ref('org/repo.git', 'refs/heads/late'), null);
    assert.equal(receivePacks('org/repo.git'), before);
    const { json } = await lastCall('ssh-gateway:box:git-push');
    assert.match(JSON.stringify(json), /APPROVAL_TIMEOUT/);
  });

  it("unattended: a push that needs approval is refused at once (APPROVAL_UNAVAILABLE), a fetch that needs none runs, and the target's per_minute limit refuses the third fetch before sshd sees it", async () => {
    await restart({ approval_timeout_seconds: 120 }, ['--unattended']);
    const before = receivePacks('org/repo.git');
    const push = await gitIn(['push', 'box:org/repo.git', 'HEAD:refs/heads/unattended']);
    assert.notEqual(push.code, 0);
    assert.match(push.stderr, /postern: APPROVAL_UNAVAILABLE: .*unattended/);
    assert.doesNotMatch(push.stderr, /waiting for operator approval/);
    assert.equal(receivePacks('org/repo.git'), before);
    for (let i = 0; i < 2; i++) {
      const f = await gitIn(['ls-remote', 'lim:org/repo.git']);
      assert.equal(f.code, 0, f.stderr);
    }
    const seen = connections();
    const third = await gitIn(['ls-remote', 'lim:org/repo.git']);
    assert.notEqual(third.code, 0);
    assert.match(third.stderr, /postern: RATE_LIMITED: /);
    assert.equal(connections(), seen, 'sshd saw no connection');
    const report = await cli(['approvals', 'report']);
    assert.equal(report.code, 0, report.stderr);
    assert.match(report.stdout, /no_rule/);
  });
});
