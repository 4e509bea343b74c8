// @subject time: deprecation and retirement dates against the injected clock (run again a year ahead by .ci/run)
// Seed 004 phase 3 ("Deprecación con fecha"): the notice the wire carries for
// deprecated revisions still served — in tools/list and in results.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deprecationOf, deprecationsOf, parseCatalog } from '../../../src/contracts/index.ts';
import { catalog, catalogText, objectSchema, str, tool, toolOf, type Obj } from './helpers.ts';

const rev = (n: number, extra: Obj = {}): Obj => ({
  revision: n,
  input: objectSchema({ pedido_id: str() }, ['pedido_id']),
  http: { target: 'api', method: 'GET', path: '/pedidos/{pedido_id}' },
  ...extra,
});

describe('deprecation notices', () => {
  it('a deprecated older revision names the date and the current revision as replacement', () => {
    const t = toolOf(catalog({ buscar_pedido: tool([rev(1, { deprecated: '2026-10-01' }), rev(2)]) }), 'buscar_pedido');
    const n = { revision: 1, deprecated: '2026-10-01', current_revision: 2, replacement: { revision: 2 } };
    assert.deepEqual(deprecationsOf(t), [n]);
    assert.deepEqual(deprecationOf(t, 1), n);
    assert.equal(deprecationOf(t, 2), undefined);
    assert.equal(deprecationOf(t, 9), undefined);
  });

  it('deprecated: { date, replacement } announces another tool (the current revision too)', () => {
    const c = catalog({
      buscar_pedido: tool([rev(1, { deprecated: { date: '2026-10-01', replacement: 'buscar_pedido_v2' } })]),
      buscar_pedido_v2: tool([rev(1)]),
    });
    assert.deepEqual(deprecationsOf(toolOf(c, 'buscar_pedido')), [{ revision: 1, deprecated: '2026-10-01', current_revision: 1, replacement: { tool: 'buscar_pedido_v2' } }]);
    assert.deepEqual(deprecationsOf(toolOf(c, 'buscar_pedido_v2')), []);
  });

  it('a deprecated current revision without a replacement says null', () => {
    const t = toolOf(catalog({ t: tool([rev(1, { deprecated: '2027-01-01' })]) }), 't');
    assert.deepEqual(deprecationOf(t, 1)?.replacement, null);
  });

  it('retired revisions (and retired tools) are not announced: they are not served', () => {
    const c = catalog({
      t: tool([rev(1, { deprecated: '2026-10-01', retired: {} }), rev(2, { deprecated: '2026-11-01' }), rev(3)]),
      old: tool([rev(1, { deprecated: '2026-10-01' }), rev(2, { retired: { replacement: 't' } })]),
    });
    assert.deepEqual(deprecationsOf(toolOf(c, 't')).map((n) => n.revision), [2]);
    assert.equal(deprecationOf(toolOf(c, 't'), 1), undefined);
    assert.deepEqual(deprecationsOf(toolOf(c, 'old')), []);
  });

  it('a replacement that is not a tool of the catalog is refused by the parser', () => {
    assert.throws(() => parseCatalog(catalogText({ t: tool([rev(1, { deprecated: { date: '2026-10-01', replacement: 'nope' } })]) }), 'catalog.yaml'), /deprecated\.replacement: names tool "nope"/);
    assert.throws(() => parseCatalog(catalogText({ t: tool([rev(1, { deprecated: { date: 'soon' } })]) }), 'catalog.yaml'), /deprecated/);
  });

  it('the notice is a function of the catalog alone: no clock, the same value however late it is read', () => {
    const c = catalog({ t: tool([rev(1, { deprecated: '2000-01-01' }), rev(2)]) });
    assert.deepEqual(deprecationsOf(toolOf(c, 't')), deprecationsOf(toolOf(c, 't')));
    assert.equal(deprecationsOf(toolOf(c, 't'))[0]?.deprecated, '2000-01-01');
  });
});
