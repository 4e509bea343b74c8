/**
 * Pre-approval rules that name gateway calls, with the real programs —
 * OpenSSH's `ssh` and `git` through `postern setup ssh`'s ssh_config, the
 * real daemon's gateway run `--unattended`, a real `sshd` serving bare
 * repositories (test/helpers/git-sshd.ts).
 *
 * Proves: a rule `{ gateway: box, action: git-push, repository one_of
 * [org/repo.git] }` lets `git push` to that repository through with nobody
 * there (the commit lands in the bare repository, `postern audit show` names
 * the rule, the budget is counted); a push to a repository the rule does not
 * name is refused APPROVAL_UNAVAILABLE `no_rule` and nothing reaches the
 * destination; once the budget is used the next push is refused
 * `budget_used`, again with nothing sent; `postern approvals report` counts
 * it all by rule and by reason. The key is in no output.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertKeyNotIn, gatewayAgent, type ProgramRun } from '../helpers/agent-run.js';
import type { Installation } from '../helpers/daemon.js';
import { gatewayHome, startGitSshd, type GitSshd } from '../helpers/git-sshd.js';
import { sshdSkip } from '../helpers/sshd.js';

const skip = sshdSkip();

describe('ssh gateway, unattended: pre-approval rules name gateway calls', { skip, timeout: 300_000 }, () => {
  let inst: Installation;
  let git: GitSshd;
  let work: string;
  let sshConfig: string;
  const outputs: string[] = [];
  const g = (): string[] => ['--passphrase-file', inst.passFile];

  function catalog(): unknown {
    const s = git.srv;
    return {
      targets: {
        box: { ssh: { host: s.host, port: s.port, user: s.user, credential: 'deploy-key', host_key: s.hostKeyFingerprint, gateway: { git: { repositories: ['org/repo.git', 'org/other.git'], push: 'per-call', fetch: 'none' } } } },
      },
      tools: {},
      preapprovals: {
        ci_push: { gateway: 'box', action: 'git-push', budget: 2, arguments: { repository: { one_of: ['org/repo.git'] } } },
      },
    };
  }

  const agent = gatewayAgent({ work: () => work, sshConfig: () => sshConfig, keep: (out, err) => void outputs.push(out, err) });
  const { git: gitIn, commit } = agent;
  async function cli(args: readonly string[]): Promise<ProgramRun> {
    const r = await inst.sb.run([...args, ...g()]);
    outputs.push(r.stdout, r.stderr);
    return r;
  }
  const receivePacks = (repo: string): number => git.commands().filter((c) => c === `git-receive-pack '${repo}'`).length;

  before(async () => {
    git = await startGitSshd(['org/repo.git', 'org/other.git']);
    // A long approval timeout: a push that waited for a person would hang the test, not pass it.
    ({ inst, work, sshConfig } = await gatewayHome(git, catalog(), { config: { approval_timeout_seconds: 600 }, daemonArgs: ['--unattended'] }));
    const init = await agent.run('git', ['init', '-q', '-b', 'main', 'clone'], work);
    assert.equal(init.code, 0, init.stderr);
  });

  after(async () => {
    const key = git.srv.clientKey.private;
    inst.sb.assertNeverPrinted(key.trim(), 'the deploy key');
    assertKeyNotIn(key, [...outputs, inst.daemonLog]);
    await inst.cleanup();
    await git.stop();
  });

  it('says at start that one pre-approval rule decides', () => {
    assert.match(inst.daemonLog, /unattended: no operator approves; 1 pre-approval rules decide/);
  });

  it('a push to the repository the rule names lands with nobody there; audit show names the rule', async () => {
    const head = await commit('first');
    const r = await gitIn(['push', 'box:org/repo.git', 'HEAD:refs/heads/main']);
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /waiting for operator approval/);
    assert.equal(git.ref('org/repo.git', 'refs/heads/main'), head);
    const list = await cli(['approvals', 'list', '--json']);
    assert.deepEqual(JSON.parse(list.stdout), [], 'no card was ever opened');
    const act = await cli(['audit', 'activity', '--tool', 'ssh-gateway:box:git-push', '--limit', '1', '--json']);
    assert.equal(act.code, 0, act.stderr);
    const [row] = JSON.parse(act.stdout) as { call: { call_id: string } }[];
    assert.ok(row !== undefined, 'the push is journaled');
    const show = await cli(['audit', 'show', row.call.call_id]);
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /pre-approval rule\s+ci_push/);
    assert.match(show.stdout, /repository\W+org\/repo\.git/);
    const json = JSON.parse((await cli(['audit', 'show', row.call.call_id, '--json'])).stdout) as { call: { approval: Record<string, unknown> } };
    assert.equal(json.call.approval['rule'], 'ci_push');
    assert.equal(json.call.approval['decided_by'], 'rule ci_push');
  });

  it('a push to a repository the rule does not name is refused at once (no_rule); nothing reaches the destination', async () => {
    const r = await gitIn(['push', 'box:org/other.git', 'HEAD:refs/heads/main']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /postern: APPROVAL_UNAVAILABLE: no pre-approval rule in the accepted catalog covers this call/);
    assert.equal(receivePacks('org/other.git'), 0);
    assert.equal(git.ref('org/other.git', 'refs/heads/main'), null);
  });

  it('once the budget is used, the next push to the named repository is refused (budget_used), with nothing sent', async () => {
    const second = await commit('second');
    const ok = await gitIn(['push', 'box:org/repo.git', 'HEAD:refs/heads/main']);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(git.ref('org/repo.git', 'refs/heads/main'), second);
    const sent = receivePacks('org/repo.git');
    await commit('third');
    const r = await gitIn(['push', 'box:org/repo.git', 'HEAD:refs/heads/main']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /postern: APPROVAL_UNAVAILABLE: the budget of every pre-approval rule that covers this call is used up/);
    assert.equal(receivePacks('org/repo.git'), sent);
    assert.equal(git.ref('org/repo.git', 'refs/heads/main'), second);
  });

  it('the run report counts the rule and each refusal by reason', async () => {
    const r = await cli(['approvals', 'report']);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as Record<string, unknown>;
    const approved = report['approved'] as Record<string, unknown>;
    assert.deepEqual(approved['by_rule'], { ci_push: 2 });
    assert.deepEqual((report['denied'] as Record<string, unknown>)['unavailable'], { widening: 0, no_rule: 1, outgrown: 0, budget_used: 1 });
    assert.deepEqual(report['budgets'], [{ rule: 'ci_push', tool: 'ssh-gateway:box:git-push', budget: 2, used: 2, left: 0 }]);
  });
});
