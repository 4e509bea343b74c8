// Seed 004 phase 1 ("Shadow"): the candidate plans the live call too, with no
// effect, and its verdict feeds the divergence gate (1%).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { shadowVerdict } from '../../../src/daemon/pipeline/stages/planning/shadow.js';
import { planCall } from '../../../src/daemon/pipeline/stages/planning/plan.js';
import { shadowReport } from '../../../src/cli/shadow-report.js';
import type { CallHead, CallRecord, ShadowRecord } from '../../../src/journal/index.js';
import { catalog, objectSchema, str, tool } from '../contracts/helpers.ts';

const rev = (n: number, extra: Record<string, unknown> = {}) => ({
  revision: n,
  input: objectSchema({ pedido_id: str() }, ['pedido_id']),
  http: { target: 'api', method: 'POST', path: '/pedidos', body: { id: '{pedido_id}' } },
  ...extra,
});
const live = catalog({ crear: tool([rev(1)]) });
const input = { tool: 'crear', session: 's-1', planned: 1, args: { pedido_id: 'P-1' }, key: 'key-0123456789' };
const verdict = (cand: ReturnType<typeof catalog>) => shadowVerdict({ digest: 'd'.repeat(64), catalog: cand }, input, planCall(live, input));

describe('shadow verdicts', () => {
  it('same catalog: same', () => assert.equal(verdict(live).verdict, 'same'));
  it('a candidate that refuses the call: would_fail with its code', () => {
    const v = verdict(catalog({ crear: tool([rev(1), rev(2, { previous: 'reject' })]) }));
    assert.deepEqual([v.verdict, v.error_code], ['would_fail', 'CONTRACT_STALE']);
    assert.equal(verdict(catalog({ otro: tool([rev(1)]) })).error_code, 'TOOL_NOT_FOUND');
  });
  it('another request under the same authority: other_request', () => {
    assert.equal(verdict(catalog({ crear: tool([rev(1), rev(2, { previous: 'adapt', http: { target: 'api', method: 'POST', path: '/pedidos', body: { id: '{pedido_id}', v: 2 } } })]) })).verdict, 'other_request');
  });
  it('a wider authority: new_approval', () => {
    assert.equal(verdict(catalog({ crear: tool([rev(1), rev(2, { previous: 'adapt', http: { target: 'api2', method: 'POST', path: '/pedidos', body: { id: '{pedido_id}' } } })]) })).verdict, 'new_approval');
  });
});

describe('shadow report', () => {
  const D = 'a'.repeat(64);
  const head = (tool: string, shadow: ShadowRecord | undefined): CallHead => ({ kind: 'intent', at: '2031-01-01T00:00:00.000Z', error_code: null, call: { tool, ...(shadow === undefined ? {} : { shadow }) } as unknown as CallRecord });
  const same = { digest: D, verdict: 'same' } as const;
  it('fails a tool above 1%, passes at 1%, ignores other digests and unshadowed calls', () => {
    const heads = [
      ...Array.from({ length: 99 }, () => head('a', same)), head('a', { digest: D, verdict: 'would_fail', error_code: 'VALIDATION_FAILED' }),
      ...Array.from({ length: 98 }, () => head('b', same)), head('b', { digest: D, verdict: 'other_request' }), head('b', { digest: D, verdict: 'new_approval' }),
      head('c', { digest: 'b'.repeat(64), verdict: 'would_fail' }), head('c', undefined),
    ];
    const r = shadowReport(heads, D);
    assert.deepEqual(r.tools.map((t) => [t.tool, t.shadowed, t.divergent, t.ok]), [['a', 100, 1, true], ['b', 100, 2, false]]);
    assert.deepEqual(r.tools[0]?.would_fail, { VALIDATION_FAILED: 1 });
    assert.equal(r.ok, false);
  });
  it('no shadowed call is not a pass', () => {
    assert.deepEqual([shadowReport([], D).shadowed, shadowReport([], D).ok], [0, false]);
  });
});
