// @subject time: deprecation dates (run again a year ahead by .ci/run)
// Seed 004 ("Versionar tool schemas de agentes"): every row of its
// "¿Breaking para el agente?" matrix, its operating rule (the historical log
// test) and its rollout (shadow against the journal, deprecation with a date,
// retire before removal, one visible schema per tool).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { advertiseCatalog, classifyRevisionChange, releaseGate, resolveContract } from '../../../src/contracts/index.ts';
import { catalog, classes, codes, objectSchema, str, tool, toolOf, type Obj } from './helpers.ts';

const find = (input: Obj, query: Obj, extra: Obj = {}, n = 1): Obj => ({
  revision: n,
  input,
  http: { target: 'api', method: 'GET', path: '/pedidos/{pedido_id}', query },
  ...extra,
});
const base = find(objectSchema({ pedido_id: str() }, ['pedido_id']), {});

function verdict(r1: Obj, r2: Obj) {
  const c = catalog({ buscar_pedido: tool([r1, { ...r2, revision: 2 }], { effect: 'read', approval: 'none' }) });
  const t = toolOf(c, 'buscar_pedido');
  const changes = classifyRevisionChange(t, t.revisions[0]!, t, t.revisions[1]!);
  return { changes, breaking: changes.some((x) => x.class === 'breaking'), gate: releaseGate(undefined, c) };
}

describe('seed 004 breaking matrix', () => {
  it('row "Agregar parámetro opcional con default" → not breaking (the request now carries the default: a policy asserts it is the old meaning)', () => {
    const r2 = find(objectSchema({ pedido_id: str(), incluir_historial: { type: 'boolean', default: false } }, ['pedido_id']), { incluir_historial: '{incluir_historial}' });
    const v = verdict(base, r2);
    assert.equal(v.breaking, false);
    assert.ok(codes(v.changes).includes('field_added'));
    assert.deepEqual(v.gate.failures.map((f) => f.rule), ['behavior_change_without_policy']);
    assert.equal(verdict(base, { ...r2, previous: 'adapt' }).gate.ok, true);
  });

  it('row "Agregar valor a un enum de salida" → not breaking', () => {
    const out = (values: string[]): Obj => ({ type: 'object', properties: { estado: { enum: values } }, required: ['estado'] });
    const v = verdict({ ...base, output: out(['abierto', 'cerrado']) }, { ...base, output: out(['abierto', 'cerrado', 'enviado']) });
    assert.equal(v.breaking, false);
    assert.ok(codes(v.changes).includes('output_enum_value_added'));
    assert.equal(v.gate.ok, true);
  });

  it('row "Agregar campo opcional a la respuesta" → not breaking', () => {
    const v = verdict(
      { ...base, output: { type: 'object', properties: { id: str() }, required: ['id'] } },
      { ...base, output: { type: 'object', properties: { id: str(), eta: str() }, required: ['id'] } },
    );
    assert.deepEqual(classes(v.changes), ['additive']);
    assert.equal(v.gate.ok, true);
  });

  it('row "Renombrar un parámetro" → breaking (field renamed)', () => {
    const r2 = { ...base, input: objectSchema({ order_id: str() }, ['order_id']), http: { target: 'api', method: 'GET', path: '/pedidos/{order_id}' } };
    const v = verdict(base, r2);
    assert.ok(v.breaking);
    assert.ok(codes(v.changes).includes('field_renamed'));
    assert.ok(v.gate.failures.some((f) => f.rule === 'breaking_without_policy'));
  });

  it('row "Volver requerido un campo opcional" → breaking (optional → required)', () => {
    const r1 = find(objectSchema({ pedido_id: str(), tienda: str() }, ['pedido_id']), { tienda: '{tienda}' });
    const r2 = find(objectSchema({ pedido_id: str(), tienda: str() }, ['pedido_id', 'tienda']), { tienda: '{tienda}' });
    const v = verdict(r1, r2);
    assert.ok(v.breaking);
    assert.ok(codes(v.changes).includes('optional_to_required'));
  });

  it('row "Quitar un valor de un enum" → breaking (enum value removed)', () => {
    const e = (values: string[]) => find(objectSchema({ pedido_id: str(), canal: { enum: values } }, ['pedido_id']), { canal: '{canal}' });
    const v = verdict(e(['web', 'tienda', 'fax']), e(['web', 'tienda']));
    assert.ok(v.breaking);
    assert.deepEqual(v.changes.find((x) => x.class === 'breaking')?.reasons.map((r) => r.text), ['canal: enum value fax removed']);
  });

  it('row "Cambiar tipo (string → number)" → breaking (type changed)', () => {
    const r2 = find(objectSchema({ pedido_id: { type: 'number' } }, ['pedido_id']), {});
    const v = verdict(base, r2);
    assert.ok(v.breaking);
    assert.ok(codes(v.changes).includes('type_changed'));
  });

  it('row "Endurecer formato (nuevo regex, additionalProperties: false)" → breaking (pattern added, additionalProperties tightened)', () => {
    const regex = verdict(base, find(objectSchema({ pedido_id: str({ pattern: '^P-[0-9]+$' }) }, ['pedido_id']), {}));
    assert.ok(regex.breaking);
    assert.ok(codes(regex.changes).includes('pattern_added'));
    const filtros = (additionalProperties: unknown) => find(objectSchema({ pedido_id: str(), filtros: { type: 'object', additionalProperties } }, ['pedido_id']), {}, { http: { target: 'api', method: 'POST', path: '/pedidos/{pedido_id}', body: { filtros: '{filtros}' } } });
    const closed = verdict(filtros(str()), filtros(false));
    assert.ok(closed.breaking);
    assert.ok(codes(closed.changes).includes('additional_properties_tightened'));
  });
});

describe('seed 004 operating rule and rollout', () => {
  it('rule "si un log histórico de llamadas válidas podría fallar contra el schema nuevo, es breaking" — shadow run against the journal', () => {
    const old = catalog({ buscar_pedido: tool([base]) });
    const cand = catalog({ buscar_pedido: tool([base, { ...find(objectSchema({ pedido_id: str({ pattern: '^P-' }) }, ['pedido_id']), {}), revision: 2, previous: 'adapt' }]) });
    const journal = [{ tool: 'buscar_pedido', raw_arguments: { pedido_id: 'P-1' } }, { tool: 'buscar_pedido', raw_arguments: { pedido_id: '77' } }];
    const report = releaseGate(old, cand, journal);
    assert.equal(report.historicalFailures.length, 1);
    assert.equal(report.historicalFailures[0]?.index, 1);
    assert.ok(report.failures.some((f) => f.rule === 'historical_call_fails'));
    assert.ok(report.failures.some((f) => f.rule === 'adapter_incomplete')); // the adapter cannot prove "77" matches ^P-
  });

  it('phase 3 "Deprecación con fecha": the date travels with calls against that revision', () => {
    const c = catalog({ buscar_pedido: tool([{ ...base, deprecated: '2026-10-01' }, { ...base, revision: 2 }]) });
    const d = resolveContract(toolOf(c, 'buscar_pedido'), 1);
    assert.equal(d.kind === 'bridge' ? d.deprecated : '', '2026-10-01');
  });

  it('"el apagado solo ocurre cuando el conteo llega a cero": retire first, remove later', () => {
    const live = catalog({ buscar_pedido: tool([base]), buscar_pedido_v2: tool([base]) });
    const removed = catalog({ buscar_pedido_v2: tool([base]) });
    assert.deepEqual(releaseGate(live, removed).failures.map((f) => f.rule), ['tool_removed_without_retiring']);
    const retired = catalog({ buscar_pedido: tool([base, { ...base, revision: 2, retired: { replacement: 'buscar_pedido_v2' } }]), buscar_pedido_v2: tool([base]) });
    assert.equal(releaseGate(live, retired).ok, true);
    assert.equal(releaseGate(retired, removed).ok, true);
  });

  it('"El modelo nunca elige versión": exactly one schema per tool is listed, retired tools are not', () => {
    const c = catalog({ buscar_pedido: tool([base, { ...base, revision: 2, retired: { replacement: 'buscar_pedido_v2' } }]), buscar_pedido_v2: tool([base, { ...base, revision: 2 }]) });
    assert.deepEqual(advertiseCatalog(c).map((t) => [t.name, t.revision]), [['buscar_pedido_v2', 2]]);
  });
});
