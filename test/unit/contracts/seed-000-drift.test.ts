// Seed 000 ("Cómo la deriva del esquema MCP rompe los agentes de larga duración"):
// every row of its drift table, and its release-gate questions, as test cases.
// Each row: classification, release-gate verdict, and what an old call does
// (including "no request": no concrete action is ever resolved).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyRevisionChange, releaseGate } from '../../../src/contracts/index.ts';
import { call, catalog, classes, codes, objectSchema, str, tool, toolOf, type Obj } from './helpers.ts';

const issueOut = (issue: Obj, required: string[]): Obj => ({ type: 'object', properties: { issue: { type: 'object', properties: issue, required } }, required: ['issue'] });
const createIssue = (n: number, extra: Obj = {}): Obj => ({
  revision: n,
  input: objectSchema({ title: str() }, ['title']),
  http: { target: 'api', method: 'POST', path: '/issues', body: { title: '{title}' } },
  ...extra,
});

function linkOf(tools: Obj, name: string) {
  const c = catalog(tools);
  const t = toolOf(c, name);
  const [from, to] = t.revisions;
  return { c, t, changes: classifyRevisionChange(t, from!, t, to!), gate: releaseGate(undefined, c) };
}

describe('seed 000 drift table', () => {
  it('row 1 "Añadir label opcional": additive, old call keeps the very same request', () => {
    const r2 = {
      revision: 2,
      input: objectSchema({ title: str(), label: str() }, ['title']),
      http: { target: 'api', method: 'POST', path: '/issues', body: { title: '{title}', label: '{label}' } },
    };
    const { c, changes, gate } = linkOf({ create_issue: tool([createIssue(1), r2]) }, 'create_issue');
    assert.deepEqual(classes(changes), ['additive']);
    assert.ok(codes(changes).includes('field_added'));
    assert.equal(gate.ok, true);
    const old = call(c, 'create_issue', 1, { title: 'Bug' });
    assert.equal(old.decision.kind, 'bridge');
    assert.equal(old.action?.kind, 'http');
    assert.equal(old.action?.kind === 'http' ? old.action.bodyText : '', '{"title":"Bug"}'); // one intended request, as before
  });

  it('row 2 "Añadir region obligatoria con un valor histórico seguro": adapter default normalizes to the stable value', () => {
    const r1 = { revision: 1, input: objectSchema({ branch: str() }, ['branch']), ssh: { target: 'preview', argv: ['/srv/deploy.sh', '{branch}', 'us-east-preview'] } };
    const r2 = {
      revision: 2,
      input: objectSchema({ branch: str(), region: { enum: ['us-east-preview', 'eu-preview'] } }, ['branch', 'region']),
      ssh: { target: 'preview', argv: ['/srv/deploy.sh', '{branch}', '{region}'] },
      previous: { policy: 'adapt', defaults: { region: 'us-east-preview' } },
    };
    const { c, changes, gate } = linkOf({ deploy_preview: tool([r1, r2]) }, 'deploy_preview');
    assert.ok(classes(changes).includes('bounded_migration'));
    assert.ok(!classes(changes).includes('breaking'));
    assert.equal(gate.ok, true, gate.failures.map((f) => f.message).join('\n'));
    const old = call(c, 'deploy_preview', 1, { branch: 'fix-login' });
    assert.equal(old.prepared.kind, 'ready');
    assert.deepEqual(old.prepared.kind === 'ready' ? old.prepared.adapted : [], ['r1→r2: defaulted region = "us-east-preview"']);
    assert.deepEqual(old.action?.kind === 'ssh' ? old.action.argv : [], ['/srv/deploy.sh', 'fix-login', 'us-east-preview']);
  });

  it('row 3 "Añadir un alcance de aprobación obligatorio": repairable error, no request', () => {
    const r2 = (previous: Obj | undefined): Obj => ({
      revision: 2,
      input: objectSchema({ title: str(), approval_scope: { enum: ['team', 'org'] } }, ['title', 'approval_scope']),
      http: { target: 'api', method: 'POST', path: '/issues', body: { title: '{title}', scope: '{approval_scope}' } },
      ...(previous === undefined ? {} : { previous }),
    });
    const none = linkOf({ create_issue: tool([createIssue(1), r2(undefined)]) }, 'create_issue');
    assert.ok(codes(none.changes).includes('new_required_field'));
    assert.equal(none.gate.ok, false);
    const unchanged = call(none.c, 'create_issue', 1, { title: 'Bug' });
    assert.equal(unchanged.prepared.kind, 'invalid');
    assert.deepEqual(unchanged.prepared.kind === 'invalid' ? unchanged.prepared.issues : [], [{ field: 'approval_scope', problem: 'is required' }]);
    assert.equal(unchanged.action, undefined);

    const rejecting = linkOf({ create_issue: tool([createIssue(1), r2({ policy: 'reject' })]) }, 'create_issue');
    assert.equal(rejecting.gate.ok, true);
    const stale = call(rejecting.c, 'create_issue', 1, { title: 'Bug' });
    assert.equal(stale.prepared.kind, 'reject');
    assert.equal(stale.prepared.kind === 'reject' ? stale.prepared.currentRevision : 0, 2);
    assert.equal(stale.action, undefined);
  });

  it('row 4 "Cambiar el significado de project": rejected; the gate demands a new tool name', () => {
    const report = (n: number, extra: Obj = {}): Obj => ({
      revision: n,
      input: objectSchema({ project: str() }, ['project']),
      http: { target: 'api', method: 'GET', path: '/reports/{project}' },
      ...extra,
    });
    const same = linkOf({ run_report: tool([report(1), report(2, { semantic_change: 'project is now an organization id', previous: 'reject' })]) }, 'run_report');
    assert.ok(classes(same.changes).includes('semantic_change'));
    assert.deepEqual(same.gate.failures.map((f) => f.rule), ['semantic_change_keeps_name']);
    assert.equal(call(same.c, 'run_report', 1, { project: 'payments' }).action, undefined);

    const renamed = catalog({
      run_report: tool([report(1), report(2, { retired: { replacement: 'run_org_report' } })]),
      run_org_report: tool([report(1)]),
    });
    assert.equal(releaseGate(undefined, renamed).ok, true);
    const old = call(renamed, 'run_report', 1, { project: 'payments' });
    assert.equal(old.prepared.kind, 'reject');
    assert.equal(old.prepared.kind === 'reject' ? old.prepared.replacement : '', 'run_org_report');
    assert.equal(old.action, undefined);
  });

  it('row 5 "Añadir un campo de salida": additive, no extra action', () => {
    const out1 = issueOut({ id: str(), url: str(), state: str() }, ['id', 'url', 'state']);
    const out2 = issueOut({ id: str(), url: str(), state: str(), labels: { type: 'array', items: str() } }, ['id', 'url', 'state']);
    const { changes, gate } = linkOf({ create_issue: tool([createIssue(1, { output: out1 }), createIssue(2, { output: out2 })]) }, 'create_issue');
    assert.deepEqual(classes(changes), ['additive']);
    assert.ok(codes(changes).includes('output_field_added'));
    assert.equal(gate.ok, true);
  });

  it('row 6 "Eliminar un identificador de salida": breaking for old readers; only pin or reject pass', () => {
    const out1 = issueOut({ id: str(), url: str() }, ['id', 'url']);
    const out2 = issueOut({ url: str() }, ['url']);
    const withPolicy = (previous: Obj | undefined) =>
      linkOf({ create_issue: tool([createIssue(1, { output: out1 }), createIssue(2, { output: out2, ...(previous === undefined ? {} : { previous }) })]) }, 'create_issue');
    const none = withPolicy(undefined);
    assert.ok(codes(none.changes).includes('output_field_removed'));
    assert.deepEqual(none.gate.failures.map((f) => f.rule), ['breaking_without_policy']);
    assert.deepEqual(withPolicy({ policy: 'adapt' }).gate.failures.map((f) => f.rule), ['output_breaking_with_adapt']);
    const pinned = withPolicy({ policy: 'pin' });
    assert.equal(pinned.gate.ok, true);
    const old = call(pinned.c, 'create_issue', 1, { title: 'x' });
    assert.equal(old.decision.kind, 'pin');
    assert.equal(old.prepared.kind === 'ready' ? old.prepared.revision.revision : 0, 1); // the old result shape is kept
  });
});

describe('seed 000 release-gate questions', () => {
  const r1 = createIssue(1);
  it('Q1 "¿Una sesión existente todavía puede enviar los argumentos válidos anteriores?" — journaled calls are revalidated', () => {
    const r2 = { revision: 2, input: objectSchema({ title: str({ maxLength: 5 }) }, ['title']), http: { target: 'api', method: 'POST', path: '/issues', body: { title: '{title}' } } };
    const old = catalog({ create_issue: tool([r1]) });
    const cand = catalog({ create_issue: tool([r1, r2]) });
    const report = releaseGate(old, cand, [
      { tool: 'create_issue', revision: 1, raw_arguments: { title: 'short' } },
      { tool: 'create_issue', revision: 1, raw_arguments: { title: 'much too long' } },
      { tool: 'create_issue', revision: 1, raw_arguments: { nonsense: true } },
    ]);
    assert.equal(report.ok, false);
    assert.deepEqual(report.historical, { checked: 3, passed: 1, rejectedByPolicy: 0, skippedInvalid: 1, skipped: { never_valid: 0, built_in: 0, invalid_key: 0, invalid_before: 1 } });
    assert.equal(report.historicalFailures.length, 1);
    assert.match(report.historicalFailures[0]!.problem, /title: .*5/);
  });

  it('Q2 "¿esos argumentos conservan exactamente el significado?" — a changed request is a behavior change', () => {
    const r2 = { ...r1, revision: 2, http: { target: 'api', method: 'POST', path: '/v2/issues', body: { title: '{title}' } } };
    const { changes, gate } = linkOf({ create_issue: tool([r1, r2]) }, 'create_issue');
    assert.ok(classes(changes).includes('behavior_change'));
    assert.ok(gate.failures.some((f) => f.rule === 'behavior_change_without_policy'));
  });

  it('Q3 "¿el rechazo ocurre antes de cualquier efecto externo?" — a rejected call never yields an action', () => {
    const c = catalog({ create_issue: tool([r1, { ...r1, revision: 2, previous: 'reject' }]) });
    for (const seen of [1, 7]) assert.equal(call(c, 'create_issue', seen, { title: 'x' }).action, undefined);
  });

  it('Q5 "¿El cliente puede explicar la ruta de reparación sin inventar autoridad?" — widening is named, rejections carry facts', () => {
    const prod = { revision: 2, input: r1.input, http: { target: 'api2', method: 'DELETE', path: '/issues/{title}' } };
    const { changes, c } = linkOf({ create_issue: tool([r1, { ...prod, previous: 'reject' }]) }, 'create_issue');
    const widening = changes.find((x) => x.class === 'authority_widening');
    assert.deepEqual(widening?.reasons.map((r) => r.text), ['new host api2.example.com:443', 'new method DELETE', 'new path /issues/{}']);
    const stale = call(c, 'create_issue', 1, { title: 'x' });
    assert.equal(stale.prepared.kind, 'reject');
    assert.match(stale.prepared.kind === 'reject' ? stale.prepared.message : '', /refresh the tool list; current revision is 2/);
  });
});
