// Pre-approval rules that name gateway calls (`gateway:` and `action:`),
// through the real parser: what they cover, what the catalog check refuses
// at the rule's document path, the authority they are bound to, and how the
// catalog diff classifies them.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import { classifyCatalogChange, describeRule, parseCatalog, ruleCovers, type Catalog, type JsonObject } from '../../../src/contracts/index.ts';
import { isPosternError } from '../../../src/rules/errors.ts';
import { RuleBudgets } from '../../../src/approvals/unattended.ts';
import { codes, KEY, TARGETS, type Obj } from './helpers.ts';

const GATEWAY = {
  git: { repositories: ['org/repo.git', 'org/docs', 'org/other'], push: 'per-call', fetch: 'none' },
  commands: [{ command: 'uptime', approval: 'per-call', effect: 'read' }, { command: 'restart web', approval: 'per-call', effect: 'write' }],
};

const gh = (gateway: unknown = GATEWAY, extra: Obj = {}): Obj => ({ ssh: { host: 'github.com', user: 'git', host_key: KEY, credential: 'deploy', gateway, ...extra } });

function withRules(preapprovals: Obj, target: Obj = gh()): Catalog {
  return parseCatalog(stringify({ targets: { ...TARGETS, gh: target }, tools: {}, preapprovals }), 'catalog.yaml');
}

function problems(preapprovals: Obj, target?: Obj): string[] {
  try {
    withRules(preapprovals, target);
  } catch (e) {
    assert.ok(isPosternError(e, 'CATALOG_INVALID'), String(e));
    return (e.details['issues'] as readonly string[]).map(String);
  }
  return [];
}

const push = (repository: string): JsonObject => ({ host: 'github.com', port: 22, user: 'git', key: 'deploy', command: `git-receive-pack '${repository}'`, repository, direction: 'push' });
const CI_PUSH = { gateway: 'gh', action: 'git-push', budget: 2, arguments: { repository: { one_of: ['org/repo.git'] } } };

describe('gateway rules: built against the gateway entry', () => {
  it('a rule names the gateway call by target and action: its tool is the call tool name, bound to revision 1 and the repositories it names', () => {
    const r = withRules({ ci_push: CI_PUSH }).preapprovals.get('ci_push');
    assert.equal(r?.tool, 'ssh-gateway:gh:git-push');
    assert.equal(r.revision, 1);
    assert.deepEqual(r.gateway?.reach, ['org/repo.git']);
    assert.deepEqual(r.gateway.authority.commands, [['git-receive-pack', 'org/repo.git']]);
    assert.equal(describeRule(r), 'gateway gh git-push, budget 2, repository one_of ["org/repo.git"]');
  });

  it('covers a push to a named repository only; user, direction and command constraints hold like any constraint', () => {
    const c = withRules({
      ci_push: CI_PUSH,
      docs: { gateway: 'gh', action: 'git-push', budget: 1, arguments: { repository: { equal: 'org/docs' }, user: { equal: 'git' }, direction: { equal: 'push' }, command: { pattern: "git-receive-pack '.*'" } } },
    });
    const rule = (n: string) => c.preapprovals.get(n)!;
    assert.equal(ruleCovers(rule('ci_push'), push('org/repo.git')).covered, true);
    assert.equal(ruleCovers(rule('ci_push'), push('org/docs')).covered, false);
    assert.equal(ruleCovers(rule('docs'), push('org/docs')).covered, true);
    assert.equal(ruleCovers(rule('docs'), { ...push('org/docs'), direction: 'fetch' }).covered, false);
  });

  it('an exec rule names its commands', () => {
    const c = withRules({ up: { gateway: 'gh', action: 'exec', budget: 3, arguments: { command: { equal: 'uptime' } } } });
    const r = c.preapprovals.get('up')!;
    assert.equal(r.tool, 'ssh-gateway:gh:exec');
    assert.equal(r.gateway?.authority.effect, 'read');
    assert.equal(ruleCovers(r, { host: 'github.com', port: 22, user: 'git', key: 'deploy', command: 'uptime' }).covered, true);
    assert.equal(ruleCovers(r, { host: 'github.com', port: 22, user: 'git', key: 'deploy', command: 'restart web' }).covered, false);
  });

  const refused: [string, Obj, RegExp, Obj?][] = [
    ['an unknown target', { gateway: 'nope', action: 'git-push', budget: 1 }, /preapprovals\.r\.gateway: names target "nope", which is not in the catalog/],
    ['an HTTP target', { gateway: 'api', action: 'git-push', budget: 1 }, /preapprovals\.r\.gateway: target api is an HTTP target/],
    ['an SSH target without a gateway entry', { gateway: 'preview', action: 'git-push', budget: 1 }, /preapprovals\.r\.action: git-push does not run through the gateway: target preview has no gateway entry/],
    ['a direction the entry refuses', { ...CI_PUSH, action: 'git-fetch' }, /preapprovals\.r\.action: git-fetch does not run through the gateway: the gateway entry of target gh refuses git fetch/, gh({ git: { repositories: ['org/repo.git'], push: 'per-call' } })],
    ['an unknown action', { ...CI_PUSH, action: 'git-pull' }, /preapprovals\.r\.action: must be one of git-push, git-fetch, exec/],
    ['a repository the entry does not list', { ...CI_PUSH, arguments: { repository: { one_of: ['org/repo.git', 'org/secret'] } } }, /preapprovals\.r\.arguments\.repository\.one_of\[1\]: "org\/secret" is never the repository of a git-push call on target gh \(it can be: org\/repo\.git, org\/docs, org\/other\)/],
    ['another spelling of a listed repository', { ...CI_PUSH, arguments: { repository: { equal: 'org/repo' } } }, /preapprovals\.r\.arguments\.repository\.equal: "org\/repo" is never the repository/],
    ['an argument gateway calls do not have', { ...CI_PUSH, arguments: { ...CI_PUSH.arguments, branch: { equal: 'main' } } }, /preapprovals\.r\.arguments\.branch: a gateway git-push call has no argument "branch"/],
    ['a repository on an exec rule', { gateway: 'gh', action: 'exec', budget: 1, arguments: { command: { equal: 'uptime' }, repository: { equal: 'org/docs' } } }, /preapprovals\.r\.arguments\.repository: a exec call has no "repository"/],
    ['a user the target does not log in as', { ...CI_PUSH, arguments: { ...CI_PUSH.arguments, user: { equal: 'root' } } }, /preapprovals\.r\.arguments\.user\.equal: "root" is never the user of a git-push call on target gh \(it can be: git\)/],
    ['a git rule that names no repository', { gateway: 'gh', action: 'git-push', budget: 1, arguments: { repository: { pattern: 'org/.*' } } }, /preapprovals\.r\.arguments: a git-push rule names the repositories it covers \(repository: with equal or one_of\)/],
    ['an exec rule that names no command', { gateway: 'gh', action: 'exec', budget: 1 }, /preapprovals\.r\.arguments: a exec rule names the commands it covers/],
    ['constraints that admit no named repository', { ...CI_PUSH, arguments: { repository: { equal: 'org/docs', pattern: 'org/repo.*' } } }, /preapprovals\.r\.arguments\.repository: the constraints on repository admit none of the repositories of target gh/],
    ['a revision', { ...CI_PUSH, revision: 1 }, /preapprovals\.r\.revision: a gateway call has no revisions/],
    ['both a tool and a gateway', { ...CI_PUSH, tool: 'create_note' }, /preapprovals\.r\.gateway: a rule names either a tool \(tool:\) or a gateway call/],
    ['neither a tool nor a gateway', { budget: 1 }, /preapprovals\.r: a rule names a tool \(tool:\) or a gateway call/],
    ['a gateway without an action', { gateway: 'gh', budget: 1 }, /preapprovals\.r: a rule names a tool \(tool:\) or a gateway call/],
  ];
  for (const [what, rule, why, target] of refused) {
    it(`refuses ${what}, at the rule's document path`, () => {
      const found = problems({ r: rule }, target);
      assert.ok(found.some((p) => why.test(p)), `expected ${why} in:\n${found.join('\n')}`);
    });
  }
});

describe('gateway rules: budgets and the authority they were accepted for', () => {
  const req = (c: Catalog, repository: string) => ({ tool: 'ssh-gateway:gh:git-push', revision: { revision: 1 } as never, normalized: push(repository), widening: [] });

  it('charges the covering rule per call, refuses another repository (no_rule) and a spent budget (budget_used)', () => {
    const c = withRules({ ci_push: CI_PUSH });
    const b = new RuleBudgets();
    assert.deepEqual(b.decide(c, req(c, 'org/repo.git')), { kind: 'preapproved', rule: 'ci_push', used: 1, budget: 2 });
    assert.deepEqual(b.decide(c, req(c, 'org/docs')), { kind: 'unavailable', reason: 'no_rule', rules: [] });
    assert.deepEqual(b.decide(c, req(c, 'org/repo.git')), { kind: 'preapproved', rule: 'ci_push', used: 2, budget: 2 });
    assert.deepEqual(b.decide(c, req(c, 'org/repo.git')), { kind: 'unavailable', reason: 'budget_used', rules: ['ci_push'] });
    assert.deepEqual(b.approvedByRule(), { ci_push: 2 });
    assert.deepEqual(b.budgets(c), [{ rule: 'ci_push', tool: 'ssh-gateway:gh:git-push', budget: 2, used: 2, left: 0 }]);
  });

  it('a repository added to the entry is outside the rule; the rule does not run where its reach grew (outgrown, fail closed)', () => {
    const accepted = withRules({ ci_push: CI_PUSH });
    const grown = withRules({ ci_push: CI_PUSH }, gh({ ...GATEWAY, git: { ...GATEWAY.git, repositories: [...GATEWAY.git.repositories, 'org/new'] } }));
    assert.deepEqual(new RuleBudgets().decide(grown, req(grown, 'org/new')), { kind: 'unavailable', reason: 'no_rule', rules: [] });
    // The rule as accepted, where the target now runs with another key: its reach went beyond what it was accepted for.
    const moved = withRules({}, gh(GATEWAY, { credential: 'other-key' }));
    const mixed: Catalog = { ...moved, preapprovals: accepted.preapprovals };
    const d = new RuleBudgets().decide(mixed, { ...req(mixed, 'org/repo.git'), normalized: { ...push('org/repo.git'), key: 'other-key' } });
    assert.deepEqual(d, { kind: 'unavailable', reason: 'outgrown', rules: ['ci_push'] });
    const otherPort: Catalog = { ...withRules({}, gh(GATEWAY, { port: 2222 })), preapprovals: accepted.preapprovals };
    assert.deepEqual(new RuleBudgets().decide(otherPort, req(otherPort, 'org/repo.git')), { kind: 'unavailable', reason: 'outgrown', rules: ['ci_push'] });
    const gone: Catalog = { ...withRules({}, gh({ ...GATEWAY, git: { ...GATEWAY.git, push: 'refused' } })), preapprovals: accepted.preapprovals };
    assert.deepEqual(new RuleBudgets().decide(gone, req(gone, 'org/repo.git')), { kind: 'unavailable', reason: 'outgrown', rules: ['ci_push'] });
  });
});

describe('gateway rules: catalog changes', () => {
  const rule = (x: Obj): Obj => ({ ci_push: { ...CI_PUSH, ...x } });
  const found = (old: Catalog, next: Catalog, code: string) => classifyCatalogChange(old, next).filter((x) => codes([x]).includes(code));

  it('a new gateway rule is a widening, named by its calls', () => {
    const [added] = found(withRules({}), withRules(rule({})), 'rule_added');
    assert.equal(added?.class, 'authority_widening');
    assert.equal(added.tool, 'ssh-gateway:gh:git-push');
    assert.match(added.reasons[0]!.text, /new pre-approval rule ci_push: gateway gh git-push, budget 2, repository one_of \["org\/repo\.git"\]/);
  });

  it('another repository or a larger budget loosens it; fewer narrow it', () => {
    const old = withRules(rule({}));
    const [more] = found(old, withRules(rule({ budget: 9, arguments: { repository: { one_of: ['org/repo.git', 'org/docs'] } } })), 'rule_loosened');
    assert.equal(more?.class, 'authority_widening');
    assert.match(more.reasons[0]!.text, /budget 2 → 9; argument repository: one_of relaxed or changed; its gateway calls reach further/);
    const [fewer] = found(withRules(rule({ arguments: { repository: { one_of: ['org/repo.git', 'org/docs'] } } })), old, 'rule_narrowed');
    assert.equal(fewer?.class, 'metadata');
  });

  it('an unchanged rule whose target now runs elsewhere is a widening of the rule; a repository added to the entry is the entry’s widening, not the rule’s', () => {
    const old = withRules(rule({}));
    const [moved] = found(old, withRules(rule({}), gh(GATEWAY, { port: 2222 })), 'rule_loosened');
    assert.equal(moved?.class, 'authority_widening');
    assert.match(moved.reasons[0]!.text, /pre-approval rule ci_push covers more: its gateway calls reach further: /);
    const grown = withRules(rule({}), gh({ ...GATEWAY, git: { ...GATEWAY.git, repositories: [...GATEWAY.git.repositories, 'org/new'] } }));
    assert.equal(found(old, grown, 'rule_loosened').length, 0);
    assert.equal(found(old, grown, 'gateway_repository_added').length, 1);
  });

  it('a rule that moves from a tool to a gateway call is a widening', () => {
    const tools = { note: { description: 'A note.', effect: 'write', approval: 'per-call', revisions: [{ revision: 1, input: { type: 'object', properties: {} }, http: { target: 'api', method: 'POST', path: '/n' } }] } };
    const asTool = parseCatalog(stringify({ targets: { ...TARGETS, gh: gh() }, tools, preapprovals: { ci_push: { tool: 'note', budget: 2 } } }), 'catalog.yaml');
    const asGateway = parseCatalog(stringify({ targets: { ...TARGETS, gh: gh() }, tools, preapprovals: { ci_push: CI_PUSH } }), 'catalog.yaml');
    const [moved] = found(asTool, asGateway, 'rule_loosened');
    assert.match(moved!.reasons[0]!.text, /tool note → ssh-gateway:gh:git-push/);
  });
});
