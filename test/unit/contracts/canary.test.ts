// Seed 004 phase 2 ("Canary"), for a local executor: a share of sessions is
// shown the new revision; the others are shown the previous one and, through
// `previous: pin`, keep running it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { advertiseTool, canaryBucket, classifyCatalogChange, inCanary, parseCatalog, resolveContract, shownRevision } from '../../../src/contracts/index.ts';
import { catalog, catalogText, objectSchema, str, tool, toolOf, type Obj } from './helpers.ts';

const rev = (n: number, extra: Obj = {}): Obj => ({
  revision: n,
  input: objectSchema({ pedido_id: str() }, ['pedido_id']),
  http: { target: 'api', method: 'GET', path: n === 1 ? '/pedidos/{pedido_id}' : `/v${n}/pedidos/{pedido_id}` },
  ...extra,
});
const withCanary = (pct: number) => catalog({ buscar_pedido: tool([rev(1), rev(2, { previous: 'pin', canary: { sessions_percent: pct } })]) });
const ids = Array.from({ length: 1000 }, (_, i) => `session-${i}`);

describe('canary', () => {
  it('a share of sessions is shown the canary revision, the others the previous one', () => {
    const t = toolOf(withCanary(10), 'buscar_pedido');
    const shown = ids.map((id) => shownRevision(t, id).revision);
    const canary = shown.filter((r) => r === 2).length;
    assert.ok(canary > 50 && canary < 150, `about 10% of 1000 sessions, got ${canary}`);
    assert.equal(shown.filter((r) => r === 1).length, 1000 - canary);
    assert.equal(advertiseTool(t, shownRevision(t, ids.find((id) => !inCanary(t, id)) ?? '')).revision, 1);
  });

  it('the cohort is a pure function of tool and session; raising the share only adds sessions', () => {
    const t10 = toolOf(withCanary(10), 'buscar_pedido');
    const t50 = toolOf(withCanary(50), 'buscar_pedido');
    for (const id of ids) {
      assert.equal(inCanary(t10, id), inCanary(t10, id));
      if (inCanary(t10, id)) assert.ok(inCanary(t50, id), `${id} stays in the canary when it grows`);
      assert.equal(inCanary(t10, id), canaryBucket('buscar_pedido', id) < 10);
    }
  });

  it('a session outside the canary plans against the previous revision, and the pin keeps it there', () => {
    const t = toolOf(withCanary(10), 'buscar_pedido');
    const d = resolveContract(t, 1);
    assert.deepEqual([d.kind, d.kind === 'pin' ? d.execute.revision : 0], ['pin', 1]);
    assert.equal(resolveContract(t, 2).kind, 'current');
  });

  it('a tool without a canary is shown its current revision to everyone', () => {
    const t = toolOf(catalog({ t: tool([rev(1), rev(2, { previous: 'pin' })]) }), 't');
    assert.ok(ids.every((id) => shownRevision(t, id).revision === 2));
  });

  it('the parser refuses a canary that could not keep the others on their plan', () => {
    const bad = (revisions: Obj[]) => () => parseCatalog(catalogText({ t: tool(revisions) }), 'catalog.yaml');
    assert.throws(bad([rev(1), rev(2, { previous: 'adapt', canary: { sessions_percent: 10 } })]), /canary needs previous: pin/);
    assert.throws(bad([rev(1, { canary: { sessions_percent: 10 } })]), /needs a previous revision/);
    assert.throws(bad([rev(1), rev(2, { previous: 'pin', canary: { sessions_percent: 10 } }), rev(3, { previous: 'pin' })]), /only the current revision can be a canary/);
    assert.throws(bad([rev(1, { retired: {} }), rev(2, { previous: 'pin', canary: { sessions_percent: 10 } })]), /must both be served/);
    assert.throws(bad([rev(1), rev(2, { previous: 'pin', canary: { sessions_percent: 100 } })]), /canary/);
  });

  it('starting, growing and promoting a canary are metadata changes the gate lets through', () => {
    const plain = catalog({ buscar_pedido: tool([rev(1), rev(2, { previous: 'pin' })]) });
    const changes = classifyCatalogChange(withCanary(10), withCanary(50)).filter((c) => c.reasons.some((r) => r.code === 'canary'));
    assert.deepEqual(changes.map((c) => [c.class, c.reasons[0]?.text]), [['metadata', 'revision 2 canary: 10% of sessions → 50% of sessions']]);
    assert.ok(classifyCatalogChange(withCanary(50), plain).some((c) => c.reasons.some((r) => r.text === 'revision 2 canary: 50% of sessions → none')));
  });
});
