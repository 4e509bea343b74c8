// The catalog's `limits:` (per tool, defaults per target): parsed strictly,
// merged field by field, and classified: raising or removing a limit widens
// authority (shown, not gated); adding or lowering one is metadata.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { limitsOf, releaseGate } from '../../../src/contracts/index.ts';
import { catalog, codes, objectSchema, str, tool, toolOf, TARGETS } from './helpers.ts';

const rev = { revision: 1, input: objectSchema({ id: str() }, ['id']), http: { target: 'api', method: 'GET', path: '/x/{id}' } };
const withDefaults = (limits: object) => ({ ...TARGETS, api: { http: { ...TARGETS.api.http, limits } } });

describe('catalog limits', () => {
  it("a tool's own limits win field by field over its target's defaults", () => {
    const c = catalog({ t: tool([rev], { limits: { per_minute: 5 } }) }, withDefaults({ per_minute: 60, per_session: 100 }));
    assert.deepEqual(limitsOf(toolOf(c, 't')), { per_minute: 5, per_session: 100 });
    assert.deepEqual(limitsOf(toolOf(catalog({ t: tool([rev]) }), 't')), {});
  });
  it('unknown fields, zero and fractions are refused with their path', () => {
    assert.throws(() => catalog({ t: tool([rev], { limits: { per_hour: 5 } }) }), /tools\.t\.limits/);
    assert.throws(() => catalog({ t: tool([rev], { limits: { per_session: 0 } }) }), /per_session/);
    assert.throws(() => catalog({ t: tool([rev], { limits: { in_flight: 1.5 } }) }), /in_flight/);
    assert.throws(() => catalog({ t: tool([rev]) }, withDefaults({ per_run: -1 })), /per_run/);
  });
  it('raising or removing a limit widens authority and passes the gate; lowering or adding one is metadata', () => {
    const at = (limits: object | undefined) => catalog({ t: tool([rev], limits === undefined ? {} : { limits }) });
    const raised = releaseGate(at({ per_session: 10 }), at({ per_session: 20 }));
    assert.equal(raised.ok, true);
    assert.deepEqual(raised.changes.map((c) => [c.class, c.reasons[0]?.code, c.reasons[0]?.text]), [['authority_widening', 'limit_raised', 'limit per_session 10 → 20']]);
    assert.deepEqual(codes(releaseGate(at({ in_flight: 2 }), at(undefined)).changes), ['limit_raised']);
    const lowered = releaseGate(at({ per_minute: 10 }), at({ per_minute: 5, per_run: 3 }));
    assert.deepEqual(lowered.changes.map((c) => [c.class, c.reasons.map((r) => r.text)]), [['metadata', ['limit per_minute 10 → 5', 'limit per_run none → 3']]]);
  });
  it("a target default raised is a widening of each tool that uses it", () => {
    const r = releaseGate(catalog({ t: tool([rev]) }, withDefaults({ per_minute: 10 })), catalog({ t: tool([rev]) }, withDefaults({ per_minute: 100 })));
    assert.ok(r.changes.some((c) => c.tool === 't' && c.class === 'authority_widening' && c.reasons.some((x) => x.code === 'limit_raised')));
  });
});
