// @subject time: deprecation windows in the release gate (run again a year ahead by .ci/run)
// The release gate between whole catalogs: published revisions are immutable,
// removals go through retirement, and the report renders as a table and as
// JSON of a stable shape. Also the documented example in docs/catalog.md.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  advertiseCatalog, catalogSummaryJson, gateReportJson, parseCatalog, releaseGate, renderCatalogSummary, renderGateReport, GATE_JSON_FORMAT,
} from '../../../src/contracts/index.ts';
import { call, catalog, codes, objectSchema, str, tool, TARGETS, type Obj } from './helpers.ts';

const rev = (n: number, extra: Obj = {}): Obj => ({ revision: n, input: objectSchema({ id: str() }, ['id']), http: { target: 'api', method: 'GET', path: '/x/{id}' }, ...extra });
const rules = (old: Obj | undefined, cand: Obj, targetsOld: Obj = TARGETS, targetsNew: Obj = TARGETS) =>
  releaseGate(old === undefined ? undefined : catalog(old, targetsOld), catalog(cand, targetsNew)).failures.map((f) => f.rule);

describe('release gate between catalogs', () => {
  it('unchanged catalog: no changes, passes', () => {
    const r = releaseGate(catalog({ t: tool([rev(1)]) }), catalog({ t: tool([rev(1)]) }));
    assert.deepEqual([r.ok, r.changes.length], [true, 0]);
  });
  it('a new tool is an addition that widens authority, shown with its reach, and passes the gate', () => {
    const r = releaseGate(catalog({}), catalog({ t: tool([rev(1)]) }));
    assert.deepEqual([r.ok, codes(r.changes), r.changes.map((c) => c.class)], [true, ['tool_added'], ['authority_widening']]);
    assert.match(r.changes[0]?.reasons[0]?.text ?? '', /^new tool t \(write, approval session\): new credential api-token, new host api\.example\.com:443, new method GET, new path \/x\/\{\}$/);
  });
  it('a first catalog (no trusted predecessor) lists every target and every tool as additions, never "No changes"', () => {
    const r = releaseGate(undefined, catalog({ t: tool([rev(1)]), u: tool([rev(1)]) }));
    assert.equal(r.ok, true);
    assert.deepEqual(codes(r.changes).filter((c) => c !== 'target_added'), ['tool_added', 'tool_added']);
    assert.equal(codes(r.changes).filter((c) => c === 'target_added').length, Object.keys(TARGETS).length);
    assert.ok(r.changes.every((c) => c.class === 'authority_widening'));
    assert.doesNotMatch(renderGateReport(r), /No changes/);
    assert.match(renderGateReport(r), /target api added: https:\/\/api\.example\.com/);
  });
  it('a published revision edited in place fails', () => {
    assert.deepEqual(rules({ t: tool([rev(1)]) }, { t: tool([rev(1, { http: { target: 'api', method: 'GET', path: '/y/{id}' } })]) }), ['revision_edited_in_place', 'widened_in_place']);
    assert.deepEqual(rules({ t: tool([rev(1)]) }, { t: tool([rev(1, { input: objectSchema({ id: str({ maxLength: 5 }) }, ['id']) })]) }), ['revision_edited_in_place']);
  });
  it('descriptions and deprecation dates may change in place', () => {
    const r = releaseGate(catalog({ t: tool([rev(1)]) }), catalog({ t: tool([rev(1, { deprecated: '2027-01-01', input: objectSchema({ id: str({ description: 'the id' }) }, ['id']) })], { description: 'New words.' }) }));
    assert.equal(r.ok, true);
    assert.deepEqual(codes(r.changes).sort(), ['deprecation', 'description_changed']);
  });
  it('an edited target widens every published revision that uses it', () => {
    const moved = { ...TARGETS, api: { http: { origin: 'https://api.evil.example', credential: 'api-token', auth: 'bearer' } } };
    assert.deepEqual(rules({ t: tool([rev(1)]) }, { t: tool([rev(1)]) }, TARGETS, moved), ['revision_edited_in_place', 'widened_in_place']);
  });
  it('a revision inserted below the last published one fails', () => {
    assert.deepEqual(rules({ t: tool([rev(1), rev(3)]) }, { t: tool([rev(1), rev(2), rev(3)]) }), ['history_rewritten']);
  });
  it('removing a revision needs retiring it first', () => {
    assert.deepEqual(rules({ t: tool([rev(1), rev(2)]) }, { t: tool([rev(2)]) }), ['revision_removed_without_retiring']);
    assert.deepEqual(rules({ t: tool([rev(1, { retired: {} }), rev(2)]) }, { t: tool([rev(2)]) }), []);
  });
  it('raising the effect needs a new revision; with one, it is a widening the policy must cover', () => {
    assert.deepEqual(rules({ t: tool([rev(1)]) }, { t: tool([rev(1)], { effect: 'destructive' }) }), ['effect_raised_in_place']);
    assert.deepEqual(rules({ t: tool([rev(1)]) }, { t: tool([rev(1), rev(2)], { effect: 'destructive' }) }), ['widening_without_policy']);
    assert.deepEqual(rules({ t: tool([rev(1)]) }, { t: tool([rev(1), rev(2, { previous: 'reject' })], { effect: 'destructive' }) }), []);
  });
  it('a loosened approval mode is reported, not failed', () => {
    const r = releaseGate(catalog({ t: tool([rev(1)], { approval: 'per-call' }) }), catalog({ t: tool([rev(1)], { approval: 'none' }) }));
    assert.equal(r.ok, true);
    assert.equal(r.changes[0]?.reasons[0]?.text, 'approval per-call → none (less oversight)');
  });
  it('changing the policy of a published revision re-checks its link', () => {
    const old = { t: tool([rev(1), rev(2, { input: objectSchema({ key: str() }, ['key']), http: { target: 'api', method: 'GET', path: '/x/{key}' }, previous: { policy: 'adapt', renames: { id: 'key' } } })]) };
    const cand = { t: tool([rev(1), rev(2, { input: objectSchema({ key: str() }, ['key']), http: { target: 'api', method: 'GET', path: '/x/{key}' } })]) };
    assert.deepEqual(rules(old, cand), ['breaking_without_policy', 'behavior_change_without_policy']);
  });
  it('a broad tool that drops a path pattern breaks calls to it', () => {
    const broad = (paths: string[], previous?: string): Obj => ({ revision: paths.length === 2 ? 1 : 2, http_request: { target: 'api', methods: ['GET'], paths }, ...(previous === undefined ? {} : { previous }) });
    assert.deepEqual(rules(undefined, { b: tool([broad(['/a', '/b']), broad(['/a'])]) }), ['breaking_without_policy']);
    assert.deepEqual(rules(undefined, { b: tool([broad(['/a', '/b']), broad(['/a'], 'adapt')]) }), ['adapter_incomplete']);
    assert.deepEqual(rules(undefined, { b: tool([broad(['/a', '/b']), broad(['/a'], 'pin')]) }), []);
  });
  it('a journal record of a tool missing from the candidate fails unless it was retired', () => {
    const r = releaseGate(catalog({ t: tool([rev(1)]) }), catalog({}), [{ tool: 't', raw_arguments: { id: 'a' } }]);
    assert.deepEqual(r.failures.map((f) => f.rule).sort(), ['historical_call_fails', 'tool_removed_without_retiring']);
  });
});

describe('rendering', () => {
  const old = catalog({ t: tool([rev(1)]) });
  const cand = catalog({ t: tool([rev(1), rev(2, { input: objectSchema({ key: str() }, ['key']), http: { target: 'api', method: 'GET', path: '/x/{key}' } })]) });
  const report = releaseGate(old, cand, [{ tool: 't', revision: 1, raw_arguments: { id: 'a' } }]);

  it('human table', () => {
    const text = renderGateReport(report);
    assert.match(text, /^TOOL +REV +CLASS +POLICY +GATE +REASONS$/m);
    assert.match(text, /^t +r1→r2 +breaking +none +FAIL +field renamed id → key$/m);
    assert.match(text, /Journal: 1 call\(s\) checked, 0 still valid, 0 rejected by policy, 0 were already invalid, 1 would now fail\./);
    assert.match(text, /Release gate FAILED \(3\):/);
  });

  it('agent-controlled text is escaped in the human report', () => {
    const r = releaseGate(old, cand, [{ tool: 'x\u001b[2J\u202e', revision: 1, raw_arguments: {} }]);
    const text = renderGateReport(r);
    assert.ok(!text.includes('\u001b') && !text.includes('\u202e'));
    assert.match(text, /x\\x1b\[2J\\u202E/);
  });

  it('an escape written out by the agent cannot pass for one the report wrote', () => {
    // The agent sends the four characters \x1b, a tag character and an unassigned code point; neither may look like our escapes.
    const r = releaseGate(old, cand, [{ tool: 'y\\x1b\u{e0041}\u0378', revision: 1, raw_arguments: {} }]);
    const text = renderGateReport(r);
    assert.match(text, /y\\\\x1b\\u\{E0041\}\\u0378/);
  });

  it('JSON has a stable shape', () => {
    const json = gateReportJson(report);
    assert.deepEqual(Object.keys(json), ['format', 'ok', 'changes', 'failures', 'historical', 'historical_failures']);
    assert.equal(json['format'], GATE_JSON_FORMAT);
    assert.deepEqual((json['changes'] as Obj[])[0], { tool: 't', from: 1, to: 2, class: 'breaking', aspect: 'input', policy: 'none', reasons: [{ code: 'field_renamed', text: 'field renamed id → key' }] });
    assert.deepEqual(json['historical'], { checked: 1, passed: 0, rejected_by_policy: 0, skipped_invalid: 0, skipped: { never_valid: 0, built_in: 0, invalid_key: 0, invalid_before: 0 } });
    assert.deepEqual((json['historical_failures'] as Obj[])[0], { index: 0, tool: 't', revision: 1, problem: 'invalid for revision 2: key: is required; id: is not a field of this tool', issues: [{ field: 'key', problem: 'is required' }, { field: 'id', problem: 'is not a field of this tool' }] });
    assert.equal(JSON.stringify(json), JSON.stringify(gateReportJson(releaseGate(old, cand, [{ tool: 't', revision: 1, raw_arguments: { id: 'a' } }]))));
  });

  it('catalog summary', () => {
    assert.match(renderCatalogSummary(cand), /^t +r2 +active +write +session +GET https:\/\/api\.example\.com:443 \/x\/\{\}; credential api-token$/m);
    const json = catalogSummaryJson(cand, 'abc');
    assert.equal((json['tools'] as Obj[])[0]?.['authority_digest'], (json['tools'] as Obj[])[0]?.['authority_digest']);
    assert.match(String((json['tools'] as Obj[])[0]?.['authority_digest']), /^[0-9a-f]{64}$/);
  });
});

describe('docs/catalog.md example', () => {
  const md = readFileSync(join(import.meta.dirname, '..', '..', '..', 'docs', 'catalog.md'), 'utf8');
  const yaml = /## Complete example\s+```yaml\n([\s\S]*?)```/.exec(md)?.[1];
  it('parses, passes the gate, and behaves as documented', () => {
    assert.ok(yaml);
    const c = parseCatalog(yaml, 'catalog.yaml', new Set(['github-token', 'tracker-key', 'deploy-key']));
    const report = releaseGate(undefined, c);
    assert.equal(report.ok, true, renderGateReport(report));
    assert.ok(report.changes.some((x) => x.tool === 'deploy_preview' && x.class === 'bounded_migration'));
    assert.ok(report.changes.some((x) => x.tool === 'create_ticket' && x.class === 'bounded_migration'));
    assert.deepEqual(advertiseCatalog(c).map((t) => t.name), ['create_ticket', 'deploy_preview', 'github_api', 'github_get_issue']);
    const old = call(c, 'deploy_preview', 1, { branch: 'fix-login' });
    assert.deepEqual(old.action?.kind === 'ssh' ? old.action.argv : [], ['/srv/deploy.sh', '--branch=fix-login', 'us-east-preview', '--']);
    const broad = call(c, 'github_api', undefined, { method: 'PATCH', path: '/repos/acme/app/issues/12', body: { state: 'closed' } });
    assert.equal(broad.action?.kind === 'http' ? `${broad.action.method} ${broad.action.url} ${broad.action.bodyText ?? ''}` : '', 'PATCH https://api.github.com/repos/acme/app/issues/12 {"state":"closed"}');
  });
});
