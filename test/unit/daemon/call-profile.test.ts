/**
 * The daemon's call profile (daemon/services/call-profile.ts): sums per phase, means
 * over the calls that ran the phase and over all calls, and a bounded set of
 * names — no agent can grow it past MAX_PHASES, and a name never carries more
 * than its phase.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CallProfile } from '../../../src/daemon/services/call-profile.js';
import { CallsProfileViewSchema } from '../../../src/protocol/operator/index.js';

describe('CallProfile', () => {
  it('means per phase and per call; the view validates', () => {
    const p = new CallProfile();
    p.add('admit', 1);
    p.add('execute', 4);
    p.ended(6);
    p.add('admit', 3);
    p.ended(4);
    const v = CallsProfileViewSchema.parse(p.view());
    assert.equal(v.calls, 2);
    assert.equal(v.mean_ms, 5);
    assert.deepEqual(v.phases, [
      { phase: 'admit', calls: 2, mean_ms: 2, per_call_ms: 2 },
      { phase: 'execute', calls: 1, mean_ms: 4, per_call_ms: 2 },
    ]);
  });

  it('a step with detail keeps only its phase; past the cap every new name counts as other', () => {
    const p = new CallProfile();
    p.add('limits:per_session 3/10', 1);
    for (let i = 0; i < 100; i++) p.add(`phase-${i}`, 1);
    const v = CallsProfileViewSchema.parse(p.view());
    assert.equal(v.phases.length, 48);
    assert.equal(v.phases[0]?.phase, 'limits:per_session');
    assert.equal(v.phases.at(-1)?.phase, 'other');
    assert.equal(v.phases.at(-1)?.calls, 100 - 46, '47 names, then other');
  });
});
