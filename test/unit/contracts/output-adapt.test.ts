// Output contracts across revisions (issue 12 item 3; seed 000 rows 5–6, seed 001
// "Respuesta v2 para un consumidor v1"): the output adapter's steps on real
// results, the parser's checks, the release gate's proof and its route rule,
// the call-time refusal of routes a forced catalog would otherwise serve, and
// the result a consumer planned against an older revision receives.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  applyOutputAdapter, carryResultBack, classifyRevisionChange, outputLink, parseCatalog, releaseGate, resolveContract,
  type OutputAdapter,
} from '../../../src/contracts/index.ts';
import { outputContractOf, shapeResult } from '../../../src/daemon/pipeline/stages/outcome/result.ts';
import type { Trail } from '../../../src/daemon/pipeline/trail.ts';
import type { HttpResult } from '../../../src/executors/http/index.ts';
import { createRedactor } from '../../../src/redaction/index.ts';
import { catalog, catalogText, classes, codes, objectSchema, str, tool, toolOf, type Obj } from './helpers.ts';

const adapter = (o: Partial<OutputAdapter>): OutputAdapter => ({ unwrap: undefined, renames: [], mappings: [], defaults: [], wrap: undefined, ...o });
const out = (props: Obj, required: string[], extra: Obj = {}): Obj => ({ type: 'object', properties: props, required, ...extra });
const rev = (n: number, output: Obj | undefined, extra: Obj = {}): Obj => ({
  revision: n,
  input: objectSchema({ title: str() }, ['title']),
  http: { target: 'api', method: 'POST', path: '/issues', body: { title: '{title}' } },
  ...(output === undefined ? {} : { output }),
  ...extra,
});
const v1Out = out({ id: str(), url: str() }, ['id', 'url']);
const v2Out = out({ issueId: str(), url: str() }, ['issueId', 'url']);
const renameBack = { policy: 'adapt', output: { renames: { issueId: 'id' } } };

function twoRevisions(r2: Obj, r1: Obj = rev(1, v1Out)) {
  const c = catalog({ create_issue: tool([r1, r2]) });
  const t = toolOf(c, 'create_issue');
  return { c, t, from: t.revisions[0]!, to: t.revisions[1]!, gate: releaseGate(undefined, c) };
}

describe('output adapter steps', () => {
  it('renames a new field to its old name; a field it does not name is kept', () => {
    const r = applyOutputAdapter(adapter({ renames: [['issueId', 'id']] }), { issueId: 'I-1', url: 'u', extra: 1 });
    assert.deepEqual(r, { ok: true, value: { id: 'I-1', url: 'u', extra: 1 }, applied: ['renamed issueId → id'] });
  });

  it('never replaces a value: a result that already holds the old name fails, naming it', () => {
    const r = applyOutputAdapter(adapter({ renames: [['issueId', 'id']] }), { issueId: 'I-1', id: 'other' });
    assert.equal(r.ok, false);
    assert.deepEqual(r.ok ? null : [r.field, r.problem], ['id', 'is already in the result; renaming issueId → id would replace it']);
  });

  it('unwraps, maps, defaults and wraps, in that order, and says which fields an unwrap left out', () => {
    const a = adapter({ unwrap: 'data', renames: [['issueId', 'id']], mappings: [['state', [['in_review', 'open']]]], defaults: [['labels', []]], wrap: 'issue' });
    const r = applyOutputAdapter(a, { data: { issueId: 'I-2', state: 'in_review' }, meta: { page: 1 } });
    assert.deepEqual(r, {
      ok: true,
      value: { issue: { id: 'I-2', state: 'open', labels: [] } },
      applied: ['unwrapped data (left out: meta)', 'renamed issueId → id', 'mapped state "in_review" → "open"', 'defaulted labels = []', 'wrapped in issue'],
    });
    // Deterministic: the same result gives the same value, and the input is not touched.
    const input = { data: { issueId: 'I-2', state: 'in_review' } };
    assert.deepEqual(applyOutputAdapter(a, input), applyOutputAdapter(a, structuredClone(input)));
    assert.deepEqual(input, { data: { issueId: 'I-2', state: 'in_review' } });
  });

  it('fails with a field-level problem on a result it cannot shape', () => {
    const r1 = applyOutputAdapter(adapter({ unwrap: 'data' }), { items: [] });
    assert.deepEqual(r1.ok ? null : [r1.field, r1.problem], ['data', 'is required (to unwrap)']);
    const r2 = applyOutputAdapter(adapter({ renames: [['a', 'b']] }), ['not', 'an', 'object']);
    assert.deepEqual(r2.ok ? null : r2.field, '(result)');
    // Inside what was unwrapped, fields are named as they are in the result received.
    const r3 = applyOutputAdapter(adapter({ unwrap: 'data', renames: [['issueId', 'id']] }), { data: { issueId: 'I-1', id: 'x' } });
    assert.deepEqual(r3.ok ? null : r3.field, 'data.id');
    const r4 = applyOutputAdapter(adapter({ unwrap: 'data', renames: [['issueId', 'id']] }), { data: 'text' });
    assert.deepEqual(r4.ok ? null : r4.field, 'data');
  });

  it('a key named __proto__ stays a plain field', () => {
    const hostile = JSON.parse('{"issueId":"I-3","__proto__":{"polluted":true}}') as unknown;
    const r = applyOutputAdapter(adapter({ renames: [['issueId', 'id']] }), hostile);
    assert.equal(r.ok, true);
    assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
    assert.ok(r.ok && Object.hasOwn(r.value as object, '__proto__'));
  });

  it('carries a result back over several links, newest first, each step labelled with its link', () => {
    const r3Out = out({ data: out({ issueId: str(), url: str() }, ['issueId', 'url']) }, ['data']);
    const c = catalog({ create_issue: tool([rev(1, v1Out), rev(2, v2Out, { previous: renameBack }), rev(3, r3Out, { previous: { policy: 'adapt', output: { unwrap: 'data' } } })]) });
    const three = toolOf(c, 'create_issue');
    const d = resolveContract(three, 1);
    assert.equal(d.kind, 'bridge');
    if (d.kind !== 'bridge') return;
    const r = carryResultBack(d.links, { data: { issueId: 'I-4', url: 'u' } });
    assert.deepEqual(r, { ok: true, value: { id: 'I-4', url: 'u' }, applied: ['r3→r2: unwrapped data', 'r2→r1: renamed issueId → id'] });
  });
});

describe('output adapter: parser', () => {
  const problems = (r2: Obj, r1: Obj = rev(1, v1Out)): string => {
    try {
      parseCatalog(catalogText({ create_issue: tool([r1, r2]) }), 'catalog.yaml');
      return '';
    } catch (e) {
      return String((e as Error).message);
    }
  };
  it('needs an output schema on both sides, and names fields that exist', () => {
    assert.match(problems(rev(2, undefined, { previous: renameBack })), /output adapter needs an output schema on both revision 1 and revision 2/);
    assert.match(problems(rev(2, v2Out, { previous: { policy: 'adapt', output: { renames: { nope: 'id' } } } })), /revision 2 has no field "nope" to rename/);
    assert.match(problems(rev(2, v2Out, { previous: { policy: 'adapt', output: { unwrap: 'data' } } })), /revision 2 has no field "data"/);
    assert.match(problems(rev(2, v2Out, { previous: { policy: 'adapt', output: { defaults: { id: 7 } } } })), /7 is not a valid value for "id" in revision 1/);
    assert.match(problems(rev(2, v2Out, { previous: { policy: 'adapt', output: { rename: {} } } })), /rename/);
  });
  it('refuses a rename onto a field the new output declares (it would replace a value)', () => {
    const both = out({ issueId: str(), id: str(), url: str() }, ['issueId', 'url']);
    assert.match(problems(rev(2, both, { previous: { policy: 'adapt', output: { renames: { issueId: 'id' } } } })), /already has "id"; a rename never replaces a field/);
  });
});

describe('output adapter: release gate', () => {
  it('seed 001 row "Respuesta v2 para un consumidor v1" with an output adapter: {issueId} reaches v1 as {id} — a bounded migration of the output, the gate passes', () => {
    const { from, to, t, gate } = twoRevisions(rev(2, v2Out, { previous: renameBack }));
    const changes = classifyRevisionChange(t, from, t, to);
    assert.ok(classes(changes).includes('bounded_migration'));
    assert.ok(!changes.some((c) => c.class === 'breaking'), JSON.stringify(changes));
    assert.ok(codes(changes).includes('output_field_renamed'));
    assert.equal(gate.ok, true, gate.failures.map((f) => f.message).join('\n'));
    assert.equal(outputLink(from, to).verdict, 'adapted');
  });

  it('an adapter that does not carry every result is output_adapter_incomplete, with the gap named', () => {
    const v2 = out({ issueId: str(), link: str() }, ['issueId', 'link']);
    const { gate } = twoRevisions(rev(2, v2, { previous: renameBack }));
    assert.deepEqual(gate.failures.map((f) => f.rule), ['output_adapter_incomplete']);
    assert.match(gate.failures[0]!.reasons.join('\n'), /output adapter does not cover: output field renamed url → link/);
  });

  it('seed 000 row 6 "Eliminar un identificador de salida": no adapter can invent the identifier; without one it is output_breaking_with_adapt', () => {
    const noId = out({ url: str() }, ['url']);
    assert.deepEqual(twoRevisions(rev(2, noId, { previous: 'adapt' })).gate.failures.map((f) => f.rule), ['output_breaking_with_adapt']);
    const invented = twoRevisions(rev(2, noId, { previous: { policy: 'adapt', output: { defaults: { id: 'unknown' } } } }));
    // A constant default does fit the old schema; the catalog author states it. The gate proves shapes, not meanings.
    assert.equal(invented.gate.ok, true);
  });

  it('an unwrap that would leave out declared fields, or of an optional field, is a gap', () => {
    const wrapped = out({ data: v1Out, meta: out({ page: { type: 'integer' } }, []) }, ['data']);
    const g1 = twoRevisions(rev(2, wrapped, { previous: { policy: 'adapt', output: { unwrap: 'data' } } })).gate;
    assert.deepEqual(g1.failures.map((f) => f.rule), ['output_adapter_incomplete']);
    assert.match(g1.failures[0]!.reasons.join('\n'), /leave out declared fields meta/);
    const optional = out({ data: v1Out }, []);
    const g2 = twoRevisions(rev(2, optional, { previous: { policy: 'adapt', output: { unwrap: 'data' } } })).gate;
    assert.match(g2.failures[0]?.reasons.join('\n') ?? '', /data may be absent/);
    const exact = out({ data: v1Out }, ['data'], { additionalProperties: false });
    assert.equal(twoRevisions(rev(2, exact, { previous: { policy: 'adapt', output: { unwrap: 'data' } } })).gate.ok, true);
  });

  it('wrap: a flat new result goes back under the old envelope', () => {
    const old = out({ issue: v1Out }, ['issue']);
    const g = twoRevisions(rev(2, v1Out, { previous: { policy: 'adapt', output: { wrap: 'issue' } } }), rev(1, old)).gate;
    assert.equal(g.ok, true, g.failures.map((f) => f.message).join('\n'));
  });

  it('a revision that is retired, or whose calls are pinned, receives no newer result: no output path is required for it', () => {
    const retired = twoRevisions(rev(2, v2Out, { previous: 'adapt' }), rev(1, v1Out, { retired: {} }));
    assert.equal(retired.gate.ok, true, retired.gate.failures.map((f) => f.message).join('\n'));
    const served = twoRevisions(rev(2, v2Out, { previous: 'adapt' }));
    assert.deepEqual(served.gate.failures.map((f) => f.rule), ['output_breaking_with_adapt']);
    assert.equal(twoRevisions(rev(2, v2Out, { previous: 'pin' })).gate.ok, true);
  });

  it('the safe path composes: r1 ← r2 (rename) ← r3 (additive) passes; an r3 that breaks r2 readers fails at its own link', () => {
    const r3Add = out({ issueId: str(), url: str(), labels: { type: 'array', items: str() } }, ['issueId', 'url']);
    const ok = catalog({ create_issue: tool([rev(1, v1Out), rev(2, v2Out, { previous: renameBack }), rev(3, r3Add, { previous: 'adapt' })]) });
    assert.equal(releaseGate(undefined, ok).ok, true);
    const r3Break = out({ ticket: str() }, ['ticket']);
    const bad = releaseGate(undefined, catalog({ create_issue: tool([rev(1, v1Out), rev(2, v2Out, { previous: renameBack }), rev(3, r3Break, { previous: 'adapt' })]) }));
    assert.deepEqual(bad.failures.map((f) => [f.rule, f.from, f.to]), [['output_breaking_with_adapt', 2, 3]]);
  });
});

describe('call time: routes a forced catalog would serve are refused before any effect', () => {
  it('a declared semantic change refuses older plans (even pinned ones); the current plan runs', () => {
    for (const previous of ['adapt', 'pin']) {
      const { t } = twoRevisions(rev(2, v1Out, { semantic_change: 'title now names the epic', previous }));
      const d = resolveContract(t, 1);
      assert.deepEqual(d.kind === 'reject' ? [d.reason, d.currentRevision] : d.kind, ['semantic_change', 2], previous);
      assert.equal(resolveContract(t, 2).kind, 'current');
    }
  });

  it('an output-breaking link without an output adapter refuses older plans; with a covering adapter they run', () => {
    for (const previous of [undefined, 'adapt']) {
      const { t } = twoRevisions(rev(2, v2Out, previous === undefined ? {} : { previous }));
      const d = resolveContract(t, 1);
      assert.deepEqual(d.kind === 'reject' ? d.reason : d.kind, 'output_incompatible', String(previous));
    }
    const removed = twoRevisions(rev(2, undefined, { previous: 'adapt' }));
    assert.equal(resolveContract(removed.t, 1).kind, 'reject');
    assert.equal(resolveContract(twoRevisions(rev(2, v2Out, { previous: renameBack })).t, 1).kind, 'bridge');
    assert.equal(resolveContract(twoRevisions(rev(2, v2Out, { previous: 'pin' })).t, 1).kind, 'pin');
  });
});

describe('the result a consumer receives', () => {
  const redactor = createRedactor([{ name: 'api-token', bytes: Buffer.from('canary-output-secret-71f3') }]);
  const trail = { callId: 'call-9', currentRevision: 2 } as unknown as Trail;
  const http = (body: unknown): { kind: 'http'; result: HttpResult } => ({
    kind: 'http',
    result: { status: 201, headers: { 'content-type': 'application/json' }, body: { kind: 'json', value: body }, truncated: false, truncated_at: null, decoded_from: null, embedded: null, connected_ip: '127.0.0.1', url: 'https://api.example.com/issues', side_effect_started: true },
  });
  const shapeFor = (t: ReturnType<typeof twoRevisions>['t'], planned: number, body: unknown) => {
    const d = resolveContract(t, planned);
    assert.notEqual(d.kind, 'reject');
    if (d.kind === 'reject') throw new Error('rejected');
    return shapeResult(http(body), d.execute, redactor, trail, outputContractOf(d));
  };

  it('a v1 consumer gets {issueId} as {id}; the steps are in _meta and in the shaped result for the journal', () => {
    const { t } = twoRevisions(rev(2, v2Out, { previous: renameBack }));
    const s = shapeFor(t, 1, { issueId: 'I-7', url: 'https://t/I-7' });
    assert.equal(s.status, 'success');
    const sc = s.result.structuredContent as Record<string, unknown>;
    assert.deepEqual(sc['body'], { id: 'I-7', url: 'https://t/I-7' });
    assert.equal(sc['result_revision'], 2);
    assert.deepEqual(s.result._meta?.['dev.postern/output_adapted'], { from_revision: 2, to_revision: 1, steps: ['r2→r1: renamed issueId → id'] });
    assert.deepEqual(s.outputAdapted, ['r2→r1: renamed issueId → id']);
    // A consumer of the current revision gets the result as it came.
    const current = shapeFor(t, 2, { issueId: 'I-7', url: 'https://t/I-7' });
    assert.deepEqual((current.result.structuredContent as Record<string, unknown>)['body'], { issueId: 'I-7', url: 'https://t/I-7' });
    assert.equal(current.result._meta, undefined);
  });

  it('seed 000 row 5 "Añadir un campo de salida": the v1 consumer receives the added field, nothing adapted', () => {
    const withLabels = out({ id: str(), url: str(), labels: { type: 'array', items: str() } }, ['id', 'url']);
    const { t } = twoRevisions(rev(2, withLabels));
    const s = shapeFor(t, 1, { id: 'I-8', url: 'u', labels: ['bug'] });
    assert.equal(s.status, 'success');
    assert.deepEqual((s.result.structuredContent as Record<string, unknown>)['body'], { id: 'I-8', url: 'u', labels: ['bug'] });
  });

  it('a result that breaks the planned contract is OUTPUT_CONTRACT_MISMATCH: effect happened, field, planned and current revision, call id; secrets redacted', () => {
    const { t } = twoRevisions(rev(2, v2Out, { previous: renameBack }));
    const s = shapeFor(t, 1, { issueId: 'canary-output-secret-71f3', link: 'x' });
    assert.equal(s.errorCode, 'OUTPUT_CONTRACT_MISMATCH');
    const sc = s.result.structuredContent as Record<string, unknown>;
    assert.deepEqual(
      [sc['side_effect_started'], sc['field'], sc['expected'], sc['planned_revision'], sc['current_revision'], sc['result_revision'], sc['call_id'], sc['required_action']],
      [true, 'body.url', 'is required', 1, 2, 2, 'call-9', 'refresh_tool_list_and_do_not_repeat'],
    );
    assert.deepEqual(sc['output_adapter'], ['r2→r1: renamed issueId → id']);
    assert.ok(!JSON.stringify(s.result).includes('canary-output-secret-71f3'));
    assert.match(s.result.content[0]?.type === 'text' ? s.result.content[0].text : '', /revision 1, which this call was planned against \(revision 2 ran\): body\.url: is required/);
  });

  it('the current consumer is checked against the current output schema, by the same error', () => {
    const { t } = twoRevisions(rev(2, v2Out, { previous: renameBack }));
    const s = shapeFor(t, 2, { issueId: 42, url: 'u' });
    const sc = s.result.structuredContent as Record<string, unknown>;
    assert.deepEqual([s.errorCode, sc['field'], sc['planned_revision']], ['OUTPUT_CONTRACT_MISMATCH', 'body.issueId', 2]);
  });
});
