// Pre-approval rules: the bounded pattern engine (whole-value, linear time,
// unsafe syntax refused), the constraint matcher, the catalog checks that
// `catalog check` reports, and how a changed rule is classified.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import { catalogSummaryJson, classifyCatalogChange, compileBoundedPattern, parseCatalog, releaseGate, renderCatalogSummary, ruleCovers, type Catalog, type JsonObject } from '../../../src/contracts/index.ts';
import { isPosternError } from '../../../src/rules/errors.ts';
import { RuleBudgets } from '../../../src/approvals/unattended.ts';
import { TARGETS, codes, objectSchema, str, tool, type Obj } from './helpers.ts';

const TOOLS: Obj = {
  create_note: tool([{ revision: 1, input: objectSchema({ title: str(), project: str(), priority: { type: 'integer', minimum: 0, maximum: 10 }, tags: { type: 'array', items: str(), maxItems: 5 } }, ['title']), http: { target: 'api', method: 'POST', path: '/notes', body: { title: '{title}', project: '{project}', priority: '{priority}', tags: '{tags}' } } }], { approval: 'per-call' }),
  delete_note: tool([{ revision: 1, input: objectSchema({ id: str() }, ['id']), http: { target: 'api', method: 'DELETE', path: '/notes/{id}' } }], { effect: 'destructive', approval: 'per-call' }),
};

function withRules(preapprovals: Obj, tools: Obj = TOOLS): Catalog {
  return parseCatalog(stringify({ targets: TARGETS, tools, preapprovals }), 'catalog.yaml');
}

function problems(preapprovals: Obj): string[] {
  try {
    withRules(preapprovals);
  } catch (e) {
    assert.ok(isPosternError(e, 'CATALOG_INVALID'), String(e));
    return (e.details['issues'] as readonly string[]).map(String);
  }
  return [];
}

describe('bounded patterns', () => {
  const rows: [string, string, boolean][] = [
    ['ci-[0-9]{1,6}', 'ci-42', true],
    ['ci-[0-9]{1,6}', 'ci-1234567', false],
    ['ci-[0-9]{1,6}', 'xci-42', false], // anchored at the start
    ['ci-[0-9]{1,6}', 'ci-42x', false], // and at the end
    ['^ci-\\d+$', 'ci-7', true], // explicit anchors are redundant, accepted
    ['(main|release/v[0-9]+)', 'release/v12', true],
    ['(main|release/v[0-9]+)', 'main2', false],
    ['[^/]+', 'a/b', false],
    ['[a-z_.-]*', 'a.b_c-d', true],
    ['(?:ab)?c', 'c', true],
    ['\\w+@example\\.com', 'ops@example.com', true],
    ['\\w+@example\\.com', 'ops@exampleXcom', false],
    ['.{0,3}', 'abcd', false],
    ['', '', true],
    ['é+', 'ééé', true], // code points, not UTF-16 units
  ];
  for (const [pattern, value, want] of rows) {
    it(`${JSON.stringify(pattern)} ${want ? 'matches' : 'does not match'} ${JSON.stringify(value)}`, () => {
      const c = compileBoundedPattern(pattern);
      assert.ok(c.ok, c.ok ? '' : c.problem);
      assert.equal(c.pattern.matches(value), want);
    });
  }

  const refused: [string, RegExp][] = [
    ['(a)\\1', /backreferences/],
    ['(?=a)a', /lookaround/],
    ['a(?!b)', /lookaround/],
    ['a^b', /only at the very start/],
    ['a{1,1000}', /at most 100/],
    ['a**', /cannot follow a quantifier/],
    ['a+?', /lazy/],
    ['(ab', /missing "\)"/],
    ['[z-a]', /low to high/],
    ['\\p{L}', /not supported/],
    ['((a{100}){100}){100}', /too large/],
  ];
  for (const [pattern, why] of refused) {
    it(`refuses ${JSON.stringify(pattern)}`, () => {
      const c = compileBoundedPattern(pattern);
      assert.equal(c.ok, false);
      if (!c.ok) assert.match(c.problem, why);
    });
  }

  it('matches a classic ReDoS pattern against a hostile input in linear time', () => {
    // (a+)+$ with "aaaa…!" takes exponential time in a backtracking engine.
    const c = compileBoundedPattern('(a+)+');
    assert.ok(c.ok);
    const hostile = `${'a'.repeat(20_000)}!`;
    assert.equal(c.pattern.matches(hostile), false);
    assert.equal(c.pattern.matches('a'.repeat(20_000)), true);
    // The work is bounded by states × input: a nested, alternating pattern is no worse.
    const d = compileBoundedPattern('((a|aa)*|(a|b)*)*c');
    assert.ok(d.ok);
    assert.equal(d.pattern.matches('ab'.repeat(10_000)), false);
  });
});

describe('pre-approval rules: the constraint matcher', () => {
  const c = withRules({
    ci_notes: { tool: 'create_note', budget: 3, arguments: { title: { pattern: 'ci-[0-9]+' }, project: { one_of: ['web', 'api'] }, priority: { max: 3 } } },
    tagged: { tool: 'create_note', budget: 1, arguments: { tags: { equal: ['ci', 'nightly'] } } },
    any_delete: { tool: 'delete_note', budget: 2 },
  });
  const rule = (n: string) => c.preapprovals.get(n)!;
  const rows: [string, JsonObject, boolean][] = [
    ['ci_notes', { title: 'ci-12', project: 'web', priority: 3 }, true],
    ['ci_notes', { title: 'ci-12', project: 'web', priority: 4 }, false], // max is inclusive, 4 > 3
    ['ci_notes', { title: 'ci-12', project: 'docs', priority: 1 }, false], // not one of
    ['ci_notes', { title: 'release', project: 'web', priority: 1 }, false], // pattern
    ['ci_notes', { title: 'ci-12', project: 'web' }, false], // an absent argument never satisfies a constraint
    ['tagged', { title: 'x', tags: ['ci', 'nightly'] }, true], // equal compares canonical JSON
    ['tagged', { title: 'x', tags: ['nightly', 'ci'] }, false],
    ['any_delete', { id: 'n1' }, true], // no constraints: any valid arguments
  ];
  for (const [name, args, want] of rows) {
    it(`${name} ${want ? 'covers' : 'does not cover'} ${JSON.stringify(args)}`, () => {
      assert.equal(ruleCovers(rule(name), args).covered, want);
    });
  }

  it('charges the first covering rule with budget left, then refuses with the reason', () => {
    const b = new RuleBudgets();
    const rev = (name: string) => c.tools.get(name)!.current;
    const req = { tool: 'delete_note', revision: rev('delete_note'), normalized: { id: 'n1' }, widening: [] };
    assert.deepEqual(b.decide(c, req), { kind: 'preapproved', rule: 'any_delete', used: 1, budget: 2 });
    assert.deepEqual(b.decide(c, req), { kind: 'preapproved', rule: 'any_delete', used: 2, budget: 2 });
    assert.deepEqual(b.decide(c, req), { kind: 'unavailable', reason: 'budget_used', rules: ['any_delete'] });
    assert.deepEqual(b.decide(c, { tool: 'create_note', revision: rev('create_note'), normalized: { title: 'no' }, widening: [] }), { kind: 'unavailable', reason: 'no_rule', rules: [] });
    assert.deepEqual(b.unavailableByReason(), { widening: 0, no_rule: 1, outgrown: 0, budget_used: 1 });
    assert.deepEqual(b.budgets(c).find((u) => u.rule === 'any_delete'), { rule: 'any_delete', tool: 'delete_note', budget: 2, used: 2, left: 0 });
  });

  it('never pre-approves a call whose revision widens authority, whatever the rules say', () => {
    const b = new RuleBudgets();
    const d = b.decide(c, { tool: 'delete_note', revision: c.tools.get('delete_note')!.current, normalized: { id: 'n1' }, widening: ['method DELETE added'] });
    assert.deepEqual(d, { kind: 'unavailable', reason: 'widening', rules: [] });
    assert.deepEqual(b.approvedByRule(), {});
  });
});

describe('pre-approval rules: catalog checks', () => {
  it('reports an unknown tool, a pattern that does not compile, an undeclared argument and misfit constraints', () => {
    const p = problems({
      ghost: { tool: 'no_such_tool', budget: 1 },
      bad_pattern: { tool: 'create_note', budget: 1, arguments: { title: { pattern: '(a)\\1' } } },
      unknown_arg: { tool: 'create_note', budget: 1, arguments: { colour: { equal: 'red' } } },
      max_on_string: { tool: 'create_note', budget: 1, arguments: { title: { max: 3 } } },
      wrong_value: { tool: 'create_note', budget: 1, arguments: { priority: { equal: 'high' } } },
      no_budget: { tool: 'create_note' },
      empty_constraint: { tool: 'create_note', budget: 1, arguments: { title: {} } },
    }).join('\n');
    assert.match(p, /preapprovals\.ghost\.tool: names tool "no_such_tool", which is not in the catalog/);
    assert.match(p, /preapprovals\.bad_pattern\.arguments\.title\.pattern: the pattern is refused: backreferences/);
    assert.match(p, /preapprovals\.unknown_arg\.arguments\.colour: tool create_note \(revision 1\) has no argument "colour"/);
    assert.match(p, /preapprovals\.max_on_string\.arguments\.title\.max: max applies to numbers/);
    assert.match(p, /preapprovals\.wrong_value\.arguments\.priority\.equal: "high" is not a valid value/);
    assert.match(p, /preapprovals\.no_budget\.budget: is required/);
    assert.match(p, /preapprovals\.empty_constraint\.arguments\.title: needs at least one of/);
  });
});

describe('pre-approval rules: the catalog summary', () => {
  it('lists each rule with what it covers; a catalog without rules prints as before', () => {
    const c = withRules({ ci: { tool: 'create_note', budget: 3, arguments: { priority: { max: 3 }, title: { pattern: 'ci-[0-9]+' } } } });
    assert.match(renderCatalogSummary(c), /PRE-APPROVAL RULE[^\n]*\n[^\n]*\nci\s+tool create_note, budget 3, priority max 3, title pattern "ci-\[0-9\]\+"/);
    assert.deepEqual(catalogSummaryJson(c, 'd')['preapprovals'], [{ rule: 'ci', tool: 'create_note', budget: 3, covers: 'tool create_note, budget 3, priority max 3, title pattern "ci-[0-9]+"' }]);
    const plain = withRules({});
    assert.doesNotMatch(renderCatalogSummary(plain), /PRE-APPROVAL/);
    assert.equal('preapprovals' in catalogSummaryJson(plain, 'd'), false);
  });
});

describe('pre-approval rules: catalog changes', () => {
  const base = { tool: 'create_note', budget: 3, arguments: { title: { pattern: 'ci-[0-9]+' }, project: { one_of: ['web', 'api'] }, priority: { max: 3 } } };
  const before = withRules({ ci: base });
  const changeTo = (rule: Obj | undefined) => classifyCatalogChange(before, withRules(rule === undefined ? {} : { ci: rule }));

  it('a new rule is a widening, shown but not gated', () => {
    const after = withRules({ ci: base, del: { tool: 'delete_note', budget: 1 } });
    const changes = classifyCatalogChange(before, after);
    const added = changes.find((c) => codes([c]).includes('rule_added'));
    assert.equal(added?.class, 'authority_widening');
    assert.equal(added?.tool, 'delete_note');
    assert.equal(releaseGate(before, after).ok, true);
  });

  const loosened: [string, Obj][] = [
    ['a larger budget', { ...base, budget: 4 }],
    ['another pattern', { ...base, arguments: { ...base.arguments, title: { pattern: 'ci-.+' } } }],
    ['a constraint removed', { ...base, arguments: { title: base.arguments.title, priority: base.arguments.priority } }],
    ['one_of with a value more', { ...base, arguments: { ...base.arguments, project: { one_of: ['web', 'api', 'docs'] } } }],
    ['a higher max', { ...base, arguments: { ...base.arguments, priority: { max: 5 } } }],
    ['another tool', { ...base, tool: 'delete_note', arguments: {} }],
  ];
  for (const [what, rule] of loosened) {
    it(`${what} loosens the rule: a widening`, () => {
      const c = changeTo(rule).find((x) => codes([x]).includes('rule_loosened'));
      assert.equal(c?.class, 'authority_widening', JSON.stringify(changeTo(rule)));
    });
  }

  const narrowed: [string, Obj][] = [
    ['a smaller budget', { ...base, budget: 2 }],
    ['a value the old constraint admits', { ...base, arguments: { ...base.arguments, title: { equal: 'ci-1' } } }],
    ['one_of with a value less', { ...base, arguments: { ...base.arguments, project: { one_of: ['web'] } } }],
    ['a lower max', { ...base, arguments: { ...base.arguments, priority: { max: 1 } } }],
    ['a constraint added', { ...base, arguments: { ...base.arguments, tags: { equal: ['ci'] } } }],
  ];
  for (const [what, rule] of narrowed) {
    it(`${what} narrows the rule: metadata, not a widening`, () => {
      const changes = changeTo(rule);
      assert.deepEqual(codes(changes), ['rule_narrowed']);
      assert.equal(changes[0]?.class, 'metadata');
    });
  }

  it('an unchanged rule is no change; a removed one is metadata', () => {
    assert.deepEqual(codes(changeTo(base)), []);
    assert.deepEqual(codes(changeTo(undefined)), ['rule_removed']);
  });
});

describe('pre-approval rules: bound to the authority they were accepted for', () => {
  const r1 = { revision: 1, input: objectSchema({ id: str() }, ['id']), http: { target: 'api', method: 'POST', path: '/notes/{id}' } };
  const r2 = { ...r1, revision: 2, http: { ...r1.http, method: 'DELETE' } };
  const r2Narrow = { ...r1, revision: 2, input: objectSchema({ id: str(), note: str() }, ['id']), http: { ...r1.http, body: { note: '{note}' } } };
  const notes = (revisions: Obj[]): Obj => ({ edit_note: tool(revisions, { approval: 'per-call' }) });
  const rules = (extra: Obj = {}): Obj => ({ edits: { tool: 'edit_note', budget: 5, ...extra } });
  const decide = (c: Catalog) => new RuleBudgets().decide(c, { tool: 'edit_note', revision: c.tools.get('edit_note')!.current, normalized: { id: 'n1' }, widening: [] });

  it('a rule that names no revision is accepted for the first; a widening revision is not pre-approved through it', () => {
    const c = withRules(rules(), notes([r1, r2]));
    assert.equal(c.preapprovals.get('edits')?.revision, 1);
    assert.deepEqual(decide(withRules(rules(), notes([r1]))), { kind: 'preapproved', rule: 'edits', used: 1, budget: 5 });
    assert.deepEqual(decide(c), { kind: 'unavailable', reason: 'outgrown', rules: ['edits'] });
  });

  it('accepted for the widening revision (revision: 2), the rule pre-approves it; a revision within its authority needs nothing', () => {
    assert.deepEqual(decide(withRules(rules({ revision: 2 }), notes([r1, r2]))), { kind: 'preapproved', rule: 'edits', used: 1, budget: 5 });
    assert.deepEqual(decide(withRules(rules(), notes([r1, r2Narrow]))), { kind: 'preapproved', rule: 'edits', used: 1, budget: 5 });
  });

  it('a revision the tool does not have is a catalog problem at the rule', () => {
    assert.throws(() => withRules(rules({ revision: 7 }), notes([r1, r2])), (e: unknown) => isPosternError(e, 'CATALOG_INVALID') && (e.details['issues'] as string[]).some((i) => /preapprovals\.edits\.revision: tool edit_note has no revision 7 \(revisions 1, 2\)/.test(i)));
  });

  it('the catalog diff names every rule a widening revision outgrows, and re-accepting the rule for it is a widening', () => {
    const old = withRules(rules(), notes([r1]));
    const widened = withRules(rules(), notes([r1, r2]));
    const named = classifyCatalogChange(old, widened).filter((x) => codes([x]).includes('rule_not_extended'));
    assert.equal(named.length, 1);
    assert.equal(named[0]?.class, 'metadata');
    assert.match(named[0].reasons[0]!.text, /^pre-approval rule edits was accepted for edit_note r1; r2 reaches beyond it \(new method DELETE\): unattended runs do not pre-approve its calls until the rule is accepted for it \(revision: 2 in the rule\)$/);
    const reaccepted = classifyCatalogChange(widened, withRules(rules({ revision: 2 }), notes([r1, r2])));
    const loosened = reaccepted.find((x) => codes([x]).includes('rule_loosened'));
    assert.equal(loosened?.class, 'authority_widening');
    assert.match(loosened.reasons[0]!.text, /pre-approval rule edits covers more: accepted for edit_note r2 instead of r1: new method DELETE/);
    assert.ok(!reaccepted.some((x) => codes([x]).includes('rule_not_extended')), 'once accepted for r2, nothing is outgrown');
    assert.ok(!classifyCatalogChange(old, withRules(rules(), notes([r1, r2Narrow]))).some((x) => codes([x]).includes('rule_not_extended')), 'a revision within the authority outgrows nothing');
  });
});
