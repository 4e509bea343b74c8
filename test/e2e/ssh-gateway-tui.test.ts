/**
 * The SSH gateway decided in the operator terminal UI: the agent's own `git
 * push` through `postern setup ssh`'s ssh_config reaches the real daemon's
 * gateway, its card appears in `postern attach` run in a real pseudo-terminal
 * (test/helpers/pty.ts), the operator approves it there with a key, and the
 * push lands in the bare repository behind a real `sshd`
 * (test/helpers/git-sshd.ts).
 *
 * Proves: the card on the screen names the repository and the direction
 * (`git push to ….org/repo.git`) in its details; once every row was on
 * screen (Space pages) the `a` key approves it and the commit is
 * in the destination afterwards; the deploy key is not on the screen nor in
 * any output.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { runProgram, type ProgramRun } from '../helpers/agent-run.js';
import { install, type Installation } from '../helpers/daemon.js';
import { startGitSshd, type GitSshd } from '../helpers/git-sshd.js';
import { startPty, type PtySession } from '../helpers/pty.js';
import { sshdSkip } from '../helpers/sshd.js';

const skip = sshdSkip();

/** The screen as text: the terminal's control sequences left out. */
// eslint-disable-next-line no-control-regex
const plain = (s: string): string => s.replace(/\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][0-9A-Za-z]|\x1b[=>78]/g, '');

describe('ssh gateway: a push approved in the terminal UI', { skip, timeout: 480_000 }, () => {
  let inst: Installation;
  let git: GitSshd;
  let work: string;
  let sshConfig: string;
  let tui: PtySession | undefined;
  const outputs: string[] = [];

  /** Waits for the screen after `from` to show `re`; fails with the screen when it does not within a minute. */
  async function shows(re: RegExp, from: number, what: string): Promise<void> {
    const t = tui!;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the screen did not show ${what}:\n${plain(t.screen().slice(from))}`)), 120_000);
    });
    try {
      await Promise.race([t.until(re, from), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  const gitIn = (args: readonly string[]): Promise<ProgramRun> =>
    runProgram('git', ['-c', 'user.name=agent', '-c', 'user.email=agent@example.invalid', ...args], {
      cwd: join(work, 'clone'),
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: work, GIT_SSH_COMMAND: `ssh -F ${sshConfig}`, GIT_CONFIG_NOSYSTEM: '1', LC_ALL: 'C' },
      keep: (out, err) => void outputs.push(out, err),
    });

  before(async () => {
    git = await startGitSshd(['org/repo.git']);
    inst = await install({ secrets: [{ name: 'deploy-key', kind: 'ssh_key', value: git.srv.clientKey.private }], config: { approval_timeout_seconds: 120 } });
    const g = ['--passphrase-file', inst.passFile];
    const enable = await inst.sb.run(['ssh-gateway', 'enable', '--port', '0', ...g]);
    assert.equal(enable.code, 0, enable.stderr);
    const s = git.srv;
    await inst.acceptCatalog({
      targets: { box: { ssh: { host: s.host, port: s.port, user: s.user, credential: 'deploy-key', host_key: s.hostKeyFingerprint, gateway: { git: { repositories: ['org/repo.git'], push: 'per-call', fetch: 'none' } } } } },
      tools: {},
    });
    await inst.startDaemon();
    const setup = await inst.sb.run(['setup', 'ssh']);
    assert.equal(setup.code, 0, setup.stderr);
    sshConfig = join(inst.sb.home, 'ssh-gateway', 'ssh_config');
    work = join(inst.sb.dir, 'agent');
    mkdirSync(work);
    const init = await runProgram('git', ['init', '-q', '-b', 'main', 'clone'], { cwd: work, env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: work, LC_ALL: 'C' }, keep: (out, err) => void outputs.push(out, err) });
    assert.equal(init.code, 0, init.stderr);
  });

  after(async () => {
    tui?.kill();
    if (inst !== undefined) {
      const lines = git.srv.clientKey.private.split('\n').filter((l) => /^[A-Za-z0-9+/=]{20,}$/.test(l));
      for (const out of [...outputs, inst.daemonLog]) for (const l of lines) assert.ok(!out.includes(l), 'a line of the deploy key reached an output or the daemon log');
      await inst.cleanup();
    }
    await git?.stop();
  });

  it('the card names repository and direction; `a` approves it and the push lands', async () => {
    tui = startPty(inst.sb.home, ['--passphrase-file', inst.passFile, 'attach']);
    await shows(/No calls are waiting/, 0, 'the terminal UI');
    const c = await gitIn(['commit', '-q', '--allow-empty', '-m', 'from the agent']);
    assert.equal(c.code, 0, c.stderr);
    const head = (await gitIn(['rev-parse', 'HEAD'])).stdout.trim();

    const from = tui.screen().length;
    const pushing = gitIn(['push', 'box:org/repo.git', 'HEAD:refs/heads/main']);
    await shows(/ssh-gateway:box:git-push[^]*x details/, from, 'the push card');
    // The compact card leaves rows behind `x`; approving needs the whole card seen, so the operator opens the details.
    const opened = tui.screen().length;
    tui.type('x');
    // Approving is offered once every row was on screen: Space pages through the details.
    await shows(/rows 1–\d+ of \d+[^]*(Space pages|a approve once)/, opened, 'the details, first page');
    for (let page = 0; page < 20 && !/a approve once/.test(tui.screen().slice(opened)); page++) {
      const mark = tui.screen().length;
      tui.type(' ');
      await shows(/rows \d+–\d+ of \d+[^]*(Space pages|a approve once|q quit)/, mark, 'the next page');
    }
    // Deciding keys act once the decision pause after a card appears has passed: the key bar shows them then.
    await shows(/git push to [^\n]*org\/repo\.git[^]*a approve once/, opened, 'the push card in full, its keys live');
    const card = plain(tui.screen().slice(opened));
    assert.match(card, /git push to ssh:\/\/127\.0\.0\.1:\d+\/org\/repo\.git as /, card);
    assert.match(card, /git-receive-pack/, card);
    const decided = tui.screen().length;
    tui.type('a');

    const r = await pushing;
    assert.equal(r.code, 0, r.stderr);
    assert.equal(git.ref('org/repo.git', 'refs/heads/main'), head);
    await shows(/No calls are waiting/, decided, 'an empty queue after the decision');

    const screen = tui.screen();
    outputs.push(screen);
    const key = git.srv.clientKey.private;
    assert.ok(!screen.includes(key.trim()), 'the deploy key is not on the screen');
    for (const l of key.split('\n').filter((x) => /^[A-Za-z0-9+/=]{20,}$/.test(x))) assert.ok(!screen.includes(l), 'a line of the deploy key is on the screen');
  });
});
