/**
 * The SSH gateway end to end with the real programs: OpenSSH's `ssh` and
 * `git` (through `postern setup ssh`'s ssh_config) → the real daemon's
 * gateway → a real OpenSSH `sshd` on loopback serving bare repositories
 * (test/helpers/git-sshd.ts), authenticating with a vault key the agent
 * never holds. Approvals go through the operator channel, as
 * `postern approvals` sends them. What reached the destination is read from
 * the forced command's log and the bare repositories themselves.
 *
 * Proves: a fetch the catalog allows without approval runs; a push waits for
 * the operator, whose card says what runs, and lands when approved, not when
 * denied; a repository, a command, a shell, port forwarding and agent
 * forwarding the catalog does not name are refused with one line on the
 * client's stderr and nothing reaching sshd; a changed destination host key
 * is refused; stderr relayed from the destination is redacted; the journal
 * shows repository and direction; the key is never in any output.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { runProgram } from '../helpers/agent-run.js';
import { install, type Installation } from '../helpers/daemon.js';
import { startGitSshd, type GitSshd } from '../helpers/git-sshd.js';
import { newEd25519Key, sshdSkip } from '../helpers/sshd.js';
import { waitFor } from '../helpers/wait.js';

const skip = sshdSkip();
/** A command that marks its start, then runs long enough to be cut short by a killed daemon. */
const SLOW = (dir: string): string => `echo started >> ${join(dir, 'slow.marker')}; sleep 30.5151; echo finished >> ${join(dir, 'slow.marker')}`;

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

describe('ssh gateway: git and ssh through the vault key, with the real programs', { skip, timeout: 300_000 }, () => {
  let inst: Installation;
  let git: GitSshd;
  let work: string;
  let sshConfig: string;
  const outputs: string[] = [];
  const g = (): string[] => ['--passphrase-file', inst.passFile];

  function catalog(pinMoved: string): unknown {
    const s = git.srv;
    const target = (pin: string, gateway: unknown) => ({ ssh: { host: s.host, port: s.port, user: s.user, credential: 'deploy-key', host_key: pin, gateway } });
    return {
      targets: {
        box: target(s.hostKeyFingerprint, {
          git: { repositories: ['org/repo.git'], push: 'per-call', fetch: 'none' },
          commands: [
            { command: 'echo hello from the destination', approval: 'none', effect: 'read' },
            { command: `cat ${join(s.dir, 'client_ed25519')} >&2; echo done`, approval: 'none', effect: 'read' },
            { command: SLOW(s.dir), approval: 'none', effect: 'write' },
          ],
        }),
        moved: target(pinMoved, { git: { repositories: ['org/repo.git'], push: 'none', fetch: 'none' } }),
      },
      tools: {},
    };
  }

  /** Runs a program to its end with the gateway's client configuration; its output is kept for the canary search. */
  function run(cmd: string, args: readonly string[], opts: { cwd?: string; env?: Record<string, string> } = {}): Promise<Run> {
    const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: work, GIT_SSH_COMMAND: `ssh -F ${sshConfig}`, GIT_CONFIG_NOSYSTEM: '1', LC_ALL: 'C', ...opts.env };
    return runProgram(cmd, args, { cwd: opts.cwd ?? work, env, keep: (out, err) => void (outputs.push(out, err), inst.sb.transcript.push(out, err)) });
  }

  const ssh = (...args: string[]): Promise<Run> => run('ssh', ['-F', sshConfig, ...args]);
  const gitIn = (...args: string[]): Promise<Run> => run('git', ['-c', 'user.name=agent', '-c', 'user.email=agent@example.invalid', ...args], { cwd: join(work, 'clone') });

  type Operator = Awaited<ReturnType<Installation['operator']>>;

  async function pendingCard(op: Operator, tool: string): Promise<Record<string, unknown>> {
    const found: { card?: Record<string, unknown> } = {};
    await waitFor(async () => {
      found.card = ((await op.request('approvals.list', {})) as Record<string, unknown>[]).find((c) => c['tool'] === tool);
      return found.card !== undefined;
    }, `a pending approval for ${tool}`);
    return found.card!;
  }

  async function decideNext(tool: string, verdict: { verdict: 'approve'; scope: 'once' | 'session' } | { verdict: 'deny'; reason: string | null }): Promise<Record<string, unknown>> {
    const op = await inst.operator();
    try {
      const card = await pendingCard(op, tool);
      await op.request('approvals.decide', { approval_id: String(card['id']), verdict });
      return card;
    } finally {
      op.close();
    }
  }

  async function lastCall(tool: string): Promise<Record<string, unknown>> {
    const r = await inst.sb.run(['audit', 'activity', '--tool', tool, '--limit', '1', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const [row] = JSON.parse(r.stdout) as { call: { call_id: string } }[];
    assert.ok(row !== undefined, `a journaled call of ${tool}`);
    const show = await inst.sb.run(['audit', 'show', row.call.call_id, '--json']);
    assert.equal(show.code, 0, show.stderr);
    return JSON.parse(show.stdout) as Record<string, unknown>;
  }

  const connections = (): number => (git.srv.log().match(/^Connection from /gm) ?? []).length;

  before(async () => {
    git = await startGitSshd(['org/repo.git', 'org/secret.git']);
    inst = await install({ secrets: [{ name: 'deploy-key', kind: 'ssh_key', value: git.srv.clientKey.private }], config: { approval_timeout_seconds: 120 } });
    work = join(inst.sb.dir, 'agent');
    mkdirSync(work);
    const enable = await inst.sb.run(['ssh-gateway', 'enable', '--port', '0', ...g()]);
    assert.equal(enable.code, 0, enable.stderr);
    await inst.acceptCatalog(catalog(newEd25519Key().fingerprint));
    await inst.startDaemon();
    assert.match(inst.daemonLog, /SSH gateway on 127\.0\.0\.1:\d+/);
    const setup = await inst.sb.run(['setup', 'ssh']);
    assert.equal(setup.code, 0, setup.stderr);
    sshConfig = join(inst.sb.home, 'ssh-gateway', 'ssh_config');
    assert.match(setup.stdout, /GIT_SSH_COMMAND='ssh -F /);
    assert.match(setup.stdout, /postern-gateway ssh-ed25519 /);
    const init = await run('git', ['init', '-q', '-b', 'main', 'clone']);
    assert.equal(init.code, 0, init.stderr);
    const commit = await gitIn('commit', '-q', '--allow-empty', '-m', 'first');
    assert.equal(commit.code, 0, commit.stderr);
  });

  after(async () => {
    const key = git.srv.clientKey.private;
    inst.sb.assertNeverPrinted(key.trim(), 'the deploy key');
    const lines = key.split('\n').filter((l) => /^[A-Za-z0-9+/=]{20,}$/.test(l));
    for (const out of outputs) for (const l of lines) assert.ok(!out.includes(l), 'a line of the deploy key reached an output');
    const journal = join(inst.sb.home, 'journal');
    for (const f of readdirSync(journal)) {
      const bytes = readFileSync(join(journal, f));
      for (const l of lines) assert.ok(!bytes.includes(l), `a line of the deploy key is in ${f}`);
    }
    await inst.cleanup();
    await git.stop();
  });

  it('a fetch the catalog allows without approval runs (git ls-remote), as git-upload-pack with the catalog\'s path', async () => {
    const r = await gitIn('ls-remote', 'box:org/repo.git');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(git.commands().at(-1), "git-upload-pack 'org/repo.git'");
    const row = await lastCall('ssh-gateway:box:git-fetch');
    const call = row['call'] as Record<string, unknown>;
    assert.deepEqual((call['normalized_arguments'] as Record<string, unknown>)['direction'], 'fetch');
  });

  it('a push waits for the operator; its card says what runs; approved, it reaches the bare repository', async () => {
    const pushing = gitIn('push', 'box:org/repo.git', 'HEAD:refs/heads/main');
    const card = await decideNext('ssh-gateway:box:git-push', { verdict: 'approve', scope: 'once' });
    const shown = JSON.stringify(card);
    assert.ok(shown.includes(`git push to ssh://127.0.0.1:${git.srv.port}/org/repo.git as ${git.srv.user} (key deploy-key)`), shown);
    const r = await pushing;
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /waiting for operator approval/);
    const head = (await gitIn('rev-parse', 'HEAD')).stdout.trim();
    assert.equal(git.ref('org/repo.git', 'refs/heads/main'), head);
    const row = await lastCall('ssh-gateway:box:git-push');
    const call = row['call'] as Record<string, unknown>;
    const normalized = call['normalized_arguments'] as Record<string, unknown>;
    assert.equal(normalized['repository'], 'org/repo.git');
    assert.equal(normalized['direction'], 'push');
    assert.equal(normalized['key'], 'deploy-key');
  });

  it('a denied push reaches nothing: git fails with APPROVAL_DENIED, the branch is not in the repository', async () => {
    const before = git.commands().length;
    const pushing = gitIn('push', 'box:org/repo.git', 'HEAD:refs/heads/denied');
    await decideNext('ssh-gateway:box:git-push', { verdict: 'deny', reason: 'not today' });
    const r = await pushing;
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /postern: APPROVAL_DENIED: .*not today/);
    assert.equal(git.ref('org/repo.git', 'refs/heads/denied'), null);
    assert.equal(git.commands().length, before, 'nothing reached sshd');
  });

  it('a repository not in the catalog is refused before the destination is contacted', async () => {
    const seen = connections();
    const r = await gitIn('push', 'box:org/secret.git', 'HEAD:refs/heads/main');
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /postern: GATEWAY_REFUSED: repository org\/secret\.git is not in the catalog for target box/);
    assert.equal(git.ref('org/secret.git', 'refs/heads/main'), null);
    assert.equal(connections(), seen, 'sshd saw no connection');
  });

  it('a shell, an unexpected command, port forwarding and agent forwarding are refused, nothing reaching sshd', async () => {
    const seen = connections();
    const shell = await ssh('box');
    assert.equal(shell.code, 1);
    assert.match(shell.stderr, /postern: GATEWAY_REFUSED: an interactive shell is not allowed/);
    const cmd = await ssh('box', 'cat /etc/passwd');
    assert.equal(cmd.code, 1);
    assert.match(cmd.stderr, /postern: GATEWAY_REFUSED: command "cat \/etc\/passwd" is not in the catalog for target box/);
    const stdio = await ssh('-o', 'ClearAllForwardings=no', '-W', `127.0.0.1:${git.srv.port}`, 'box');
    assert.notEqual(stdio.code, 0);
    assert.match(stdio.stderr, /open failed|administratively prohibited/i);
    const remote = await ssh('-o', 'ClearAllForwardings=no', '-o', 'ExitOnForwardFailure=yes', '-R', '0:127.0.0.1:9', 'box', 'echo hello from the destination');
    assert.notEqual(remote.code, 0);
    assert.match(remote.stderr, /remote port forwarding failed/i);
    // OpenSSH asks for agent forwarding only when it has an agent to forward: a real one, stopped after.
    const sock = join(work, 'agent.sock');
    const agentProc = spawn('ssh-agent', ['-D', '-a', sock], { stdio: 'ignore' });
    let agentFwd: Run;
    try {
      await waitFor(() => existsSync(sock), 'ssh-agent to listen');
      // It also wants SSH_AUTH_SOCK to reach that agent before it asks (the setup's IdentityAgent none unsets it).
      agentFwd = await run('ssh', ['-F', sshConfig, '-o', 'IdentityAgent=SSH_AUTH_SOCK', '-o', 'ForwardAgent=yes', 'box', 'echo hello from the destination'], { env: { SSH_AUTH_SOCK: sock } });
    } finally {
      agentProc.kill();
    }
    assert.equal(agentFwd.code, 1, agentFwd.stderr);
    assert.match(agentFwd.stderr, /postern: GATEWAY_REFUSED: agent forwarding is not allowed/);
    const pty = await ssh('-tt', 'box', 'echo hello from the destination');
    // The PTY request is refused; a forced one (-tt) makes OpenSSH give up on the spot (exit 255); a client that goes on finds its session refused.
    assert.notEqual(pty.code, 0, pty.stderr);
    assert.match(pty.stderr + pty.stdout, /PTY allocation request failed|GATEWAY_REFUSED: a terminal \(PTY\) is not allowed/);
    assert.doesNotMatch(pty.stdout, /hello from the destination/);
    assert.equal(connections(), seen, 'sshd saw no connection');
  });

  it('an exact command the catalog names runs; what the destination prints on stderr is redacted', async () => {
    const hello = await ssh('box', 'echo hello from the destination');
    assert.equal(hello.code, 0, hello.stderr);
    assert.equal(hello.stdout, 'hello from the destination\n');
    const leak = await ssh('box', `cat ${join(git.srv.dir, 'client_ed25519')} >&2; echo done`);
    assert.equal(leak.code, 0, leak.stderr);
    assert.equal(leak.stdout, 'done\n');
    assert.match(leak.stderr, /\[REDACTED:deploy-key\]/);
  });

  it('a destination whose host key is not the pinned one is refused: HOST_KEY_MISMATCH, nothing run', async () => {
    const before = git.commands().length;
    const r = await gitIn('push', 'moved:org/repo.git', 'HEAD:refs/heads/moved');
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /postern: HOST_KEY_MISMATCH: /);
    assert.equal(git.ref('org/repo.git', 'refs/heads/moved'), null);
    assert.equal(git.commands().length, before, 'nothing ran on sshd');
    const row = await lastCall('ssh-gateway:moved:git-push');
    assert.equal((row['outcome'] as Record<string, unknown> | null)?.['error_code'], 'HOST_KEY_MISMATCH');
  });

  it('a daemon killed (-9) mid-command: the journal says outcome_unknown after the restart, and Postern never sends it again', async () => {
    const marker = join(git.srv.dir, 'slow.marker');
    const command = SLOW(git.srv.dir);
    const running = ssh('box', command);
    await waitFor(() => existsSync(marker) && readFileSync(marker, 'utf8').includes('started'), 'the command to start on the destination');
    await inst.stopDaemon('SIGKILL');
    const r = await running;
    assert.notEqual(r.code, 0, 'the agent\'s ssh sees its connection end');
    await inst.startDaemon();
    const row = await lastCall('ssh-gateway:box:exec');
    assert.equal(((row['call'] as Record<string, unknown>)['normalized_arguments'] as Record<string, unknown>)['command'], command);
    assert.match(JSON.stringify(row['outcome']), /outcome_unknown/);
    assert.equal(git.commands().filter((c) => c === command).length, 1, 'sent once, never again');
    git.srv.killSessions();
  });
});

