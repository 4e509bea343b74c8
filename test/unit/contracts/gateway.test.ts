// The SSH gateway's catalog entry and decisions, through the real parser:
// what an SSH target's `gateway:` lets an agent run, what it refuses and why,
// the card's one-line summary, and which catalog changes widen it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isPosternError } from '../../../src/rules/errors.ts';
import { describeExec, judgeExec, repositoryKey } from '../../../src/contracts/gateway/exec-request.ts';
import { gatewayAuthority } from '../../../src/contracts/gateway/gateway-tool.ts';
import { classifyCatalogChange, widensAuthority, type SshTarget } from '../../../src/contracts/index.ts';
import { catalog, KEY, type Obj } from './helpers.ts';

const GATEWAY = {
  git: { repositories: ['org/repo.git', 'org/docs'], push: 'per-call', fetch: 'none' },
  commands: [{ command: 'uptime', approval: 'none', effect: 'read' }],
};

function withGateway(gateway: unknown, extra: Obj = {}): Obj {
  return { gh: { ssh: { host: 'github.com', user: 'git', host_key: KEY, credential: 'deploy', ...(gateway === undefined ? {} : { gateway }), ...extra } } };
}

function target(gateway: unknown = GATEWAY, extra: Obj = {}): SshTarget {
  const t = catalog({}, withGateway(gateway, extra)).targets.get('gh');
  assert.ok(t?.kind === 'ssh');
  return t;
}

describe('gateway: the catalog entry', () => {
  it('parses repositories, modes and commands; absent directions are refused; a command defaults to effect write', () => {
    const t = target({ git: { repositories: ['org/repo'] }, commands: [{ command: 'uptime', approval: 'per-call' }] });
    assert.deepEqual(t.gateway, { git: { repositories: ['org/repo'], push: 'refused', fetch: 'refused' }, commands: [{ command: 'uptime', approval: 'per-call', effect: 'write' }] });
  });

  const invalid: [string, unknown][] = [
    ['an unknown key', { git: { repositories: ['org/repo'], pull: 'none' } }],
    ['a ".." segment', { git: { repositories: ['org/../etc'] } }],
    ['a quote in a repository', { git: { repositories: ["org/re'po"] } }],
    ['no repository', { git: { repositories: [] } }],
    ['an unknown mode', { git: { repositories: ['a/b'], push: 'always' } }],
    ['a command starting with "-"', { commands: [{ command: '-oProxyCommand=x', approval: 'none' }] }],
    ['a control character in a command', { commands: [{ command: 'ls\nrm -rf /', approval: 'none' }] }],
    ['a command without approval', { commands: [{ command: 'uptime' }] }],
  ];
  for (const [what, gw] of invalid) {
    it(`refuses ${what}`, () => {
      assert.throws(() => catalog({}, withGateway(gw)), (e: unknown) => isPosternError(e, 'CATALOG_INVALID'));
    });
  }
});

describe('gateway: judging an exec request', () => {
  const t = target();
  const cases: [string, string, string][] = [
    ["git-receive-pack 'org/repo.git'", 'allowed', "git-receive-pack 'org/repo.git'"],
    ["git-receive-pack '/org/repo.git'", 'allowed', "git-receive-pack 'org/repo.git'"],
    ["git-receive-pack 'org/repo'", 'allowed', "git-receive-pack 'org/repo.git'"],
    ["git-upload-pack 'org/docs.git'", 'allowed', "git-upload-pack 'org/docs'"],
    ['uptime', 'allowed', 'uptime'],
    ["git-receive-pack 'org/other.git'", 'repository org/other.git is not in the catalog for target gh', ''],
    ["git-receive-pack 'org/repo.git' ; id", 'command "git-receive-pack \'org/repo.git\' ; id" is not in the catalog for target gh', ''],
    ["git-upload-archive 'org/repo.git'", 'command "git-upload-archive \'org/repo.git\'" is not in the catalog for target gh', ''],
    ['uptime ', 'command "uptime " is not in the catalog for target gh', ''],
    ["git-receive-pack ''", 'repository  is not in the catalog for target gh', ''],
    ['\u001b[2Jrm -rf /', 'command "\\x1b[2Jrm -rf /" is not in the catalog for target gh', ''],
  ];
  for (const [raw, want, command] of cases) {
    it(`${JSON.stringify(raw)} → ${want === 'allowed' ? command : 'refused'}`, () => {
      const v = judgeExec(t, raw);
      if (want === 'allowed') {
        assert.equal(v.kind, 'allowed', JSON.stringify(v));
        if (v.kind === 'allowed') assert.equal(v.exec.command, command);
      } else assert.deepEqual(v, { kind: 'refused', reason: want });
    });
  }

  it('a refused direction, and a target without a gateway, are refused', () => {
    assert.deepEqual(judgeExec(target({ git: { repositories: ['org/repo'], fetch: 'none' } }), "git-receive-pack 'org/repo'"), { kind: 'refused', reason: 'git push is not allowed on target gh' });
    const bare = catalog({}, withGateway(undefined)).targets.get('gh');
    assert.ok(bare?.kind === 'ssh');
    assert.deepEqual(judgeExec(bare, 'uptime'), { kind: 'refused', reason: 'target gh has no gateway entry in the catalog' });
  });

  it('the card line names direction, repository, user and key', () => {
    const v = judgeExec(t, "git-receive-pack 'org/repo.git'");
    assert.ok(v.kind === 'allowed');
    assert.equal(describeExec(t, v.exec), 'git push to github.com:org/repo.git as git (key deploy)');
    const other = target(GATEWAY, { port: 2222 });
    assert.equal(describeExec(other, v.exec), 'git push to ssh://github.com:2222/org/repo.git as git (key deploy)');
  });

  it('spellings of one repository share a key', () => {
    assert.equal(repositoryKey('/org/repo.git/'), 'org/repo');
    assert.equal(repositoryKey('org/repo'), 'org/repo');
  });
});

describe('gateway: widening', () => {
  const reasons = (old: unknown, next: unknown, extra: Obj = {}): { cls: string; codes: string[] }[] =>
    classifyCatalogChange(catalog({}, withGateway(old)), catalog({}, withGateway(next, extra)))
      .filter((c) => c.tool === 'ssh-gateway:gh')
      .map((c) => ({ cls: c.class, codes: c.reasons.map((r) => r.code) }));

  it('a repository added, a direction opened, an approval loosened, a command added, an endpoint changed: authority widening', () => {
    assert.deepEqual(reasons(GATEWAY, { ...GATEWAY, git: { ...GATEWAY.git, repositories: ['org/repo.git', 'org/docs', 'org/new'] } }), [{ cls: 'authority_widening', codes: ['gateway_repository_added'] }]);
    assert.deepEqual(reasons(GATEWAY, { ...GATEWAY, git: { ...GATEWAY.git, push: 'session' } }), [{ cls: 'authority_widening', codes: ['gateway_git_mode_changed'] }]);
    assert.deepEqual(reasons(GATEWAY, { ...GATEWAY, commands: [...GATEWAY.commands, { command: 'reboot', approval: 'per-call' }] }), [{ cls: 'authority_widening', codes: ['gateway_command_added'] }]);
    assert.deepEqual(reasons(GATEWAY, GATEWAY, { user: 'root' }), [{ cls: 'authority_widening', codes: ['gateway_endpoint_changed'] }]);
    assert.deepEqual(reasons(undefined, GATEWAY).map((r) => r.cls), ['authority_widening']);
  });

  it('a repository removed, an approval tightened: metadata; nothing changed: nothing', () => {
    assert.deepEqual(reasons(GATEWAY, { ...GATEWAY, git: { ...GATEWAY.git, repositories: ['org/repo.git'], fetch: 'per-call' } }), [{ cls: 'metadata', codes: ['gateway_repository_removed', 'gateway_git_mode_changed'] }]);
    assert.deepEqual(reasons(GATEWAY, GATEWAY), []);
  });

  it("the gateway tool's authority grows with its repositories (session grants bound to it stop applying)", () => {
    const before = target();
    const after = target({ ...GATEWAY, git: { ...GATEWAY.git, repositories: [...GATEWAY.git.repositories, 'org/new'] } });
    const e = judgeExec(before, "git-receive-pack 'org/repo.git'");
    assert.ok(e.kind === 'allowed');
    assert.equal(widensAuthority(gatewayAuthority(before, e.exec), gatewayAuthority(after, e.exec)).widens, true);
    assert.equal(widensAuthority(gatewayAuthority(after, e.exec), gatewayAuthority(before, e.exec)).widens, false);
  });
});
