// The re-check of a call that waited (seed 000: "a notification that arrives after a call
// entered the queue"; seed 001: "Migrar el estado sin revisar las aprobaciones"): the call is
// planned again from its raw arguments under the catalog in use, and runs only when nothing it
// was approved for changed; a declared `migrate` re-plans it for a new approval; anything else
// is CONTRACT_STALE before any effect.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { releaseGate, type Catalog } from '../../../src/contracts/index.ts';
import type { CallPlan } from '../../../src/daemon/pipeline/stages/call-state.ts';
import { planCall } from '../../../src/daemon/pipeline/stages/planning/plan.ts';
import { recheckPlan } from '../../../src/daemon/pipeline/stages/recheck/replan.ts';
import { planOrigin, oldestServed } from '../../../src/daemon/pipeline/stages/planning/origin.ts';
import { catalog, objectSchema, str, TARGETS, tool, toolOf, type Obj } from '../contracts/helpers.ts';

const r1: Obj = { revision: 1, input: objectSchema({ title: str() }, ['title']), http: { target: 'api', method: 'POST', path: '/wipe', body: { title: '{title}' } } };
const r2 = (extra: Obj = {}): Obj => ({
  revision: 2,
  input: objectSchema({ title: str(), region: { enum: ['eu', 'us'] } }, ['title', 'region']),
  http: { target: 'api', method: 'POST', path: '/wipe', body: { title: '{title}', region: '{region}' } },
  ...extra,
});
const wipe = (revisions: Obj[], targets: Obj = TARGETS): Catalog => catalog({ wipe: tool(revisions, { approval: 'per-call' }) }, targets);
const args = { title: 'all' };
const admitted = (c: Catalog, planned?: number): CallPlan => planCall(c, { tool: 'wipe', session: 's-1', planned, args, key: 'k-1' });

function staleOf(r: ReturnType<typeof recheckPlan>) {
  assert.equal(r.kind, 'stale', JSON.stringify(r));
  if (r.kind !== 'stale') throw new Error('unreachable');
  assert.equal(r.error.code, 'CONTRACT_STALE');
  assert.equal(r.error.sideEffectStarted, false);
  assert.ok('current_revision' in r.error.details);
  assert.doesNotMatch(r.error.message, /\n/);
  return r;
}

describe('re-check of a queued call against the catalog in use', () => {
  it('the same catalog: same (it may run)', () => {
    const c = wipe([r1]);
    assert.deepEqual(recheckPlan(admitted(c), c, args, 'k-1'), { kind: 'same' });
  });

  it('an equal catalog parsed again (another acceptance, no change to this tool): same', () => {
    assert.deepEqual(recheckPlan(admitted(wipe([r1])), wipe([r1]), args, 'k-1'), { kind: 'same' });
  });

  it('a new revision with previous: pin: the admitted revision still runs as approved → same', () => {
    assert.deepEqual(recheckPlan(admitted(wipe([r1])), wipe([r1, r2({ previous: 'pin' })]), args, 'k-1'), { kind: 'same' });
  });

  it('a forced catalog whose revision 2 declares a semantic change, even with previous: pin → CONTRACT_STALE (the meaning changed)', () => {
    const r = staleOf(recheckPlan(admitted(wipe([r1])), wipe([r1, { ...r1, revision: 2, semantic_change: 'wipe now empties the whole account', previous: 'pin' }]), args, 'k-1'));
    assert.match(r.error.message, /change of meaning/);
    assert.equal(r.error.details['reason'], 'semantic_change');
  });

  it('a forced catalog whose revision 2 drops an output field old readers rely on (pin keeps it: same; adapt without an output adapter: CONTRACT_STALE)', () => {
    const out1 = { type: 'object', properties: { id: str() }, required: ['id'] };
    const out2 = { type: 'object', properties: { url: str() }, required: ['url'] };
    const withOut = [{ ...r1, output: out1 }];
    assert.deepEqual(recheckPlan(admitted(wipe(withOut)), wipe([...withOut, { ...r1, revision: 2, output: out2, previous: 'pin' }]), args, 'k-1'), { kind: 'same' });
    const r = staleOf(recheckPlan(admitted(wipe(withOut)), wipe([...withOut, { ...r1, revision: 2, output: out2 }]), args, 'k-1'));
    assert.equal(r.error.details['reason'], 'output_incompatible');
  });

  it('row "reject": revision 2 says previous: reject → CONTRACT_STALE naming the current revision', () => {
    const r = staleOf(recheckPlan(admitted(wipe([r1])), wipe([r1, r2({ previous: 'reject' })]), args, 'k-1'));
    assert.equal(r.error.details['current_revision'], 2);
    assert.equal(r.error.details['planned_revision'], 1);
    assert.match(r.reason, /rejected/);
  });

  it('row "retire": the admitted revision is retired meanwhile → CONTRACT_STALE with the replacement', () => {
    const c = catalog({ wipe: tool([{ ...r1, retired: { replacement: 'wipe2' } }, r2({ previous: 'adapt' })], { approval: 'per-call' }), wipe2: tool([r1]) });
    const r = staleOf(recheckPlan(admitted(wipe([r1])), c, args, 'k-1'));
    assert.equal(r.error.details['refused_with'], 'REVISION_RETIRED');
    assert.equal(r.error.details['replacement'], 'wipe2');
  });

  it('the tool is retired or gone → CONTRACT_STALE', () => {
    staleOf(recheckPlan(admitted(wipe([r1])), catalog({ other: tool([r1]) }), args, 'k-1'));
    staleOf(recheckPlan(admitted(wipe([r1])), wipe([r1, { ...r2({ previous: 'adapt' }), retired: {} }]), args, 'k-1'));
  });

  it('row "widen": revision 2 reaches another host (adapt declared) → CONTRACT_STALE that says it widens', () => {
    const wider = r2({ previous: { policy: 'adapt', defaults: { region: 'eu' } }, http: { target: 'api2', method: 'POST', path: '/wipe', body: { title: '{title}', region: '{region}' } } });
    const r = staleOf(recheckPlan(admitted(wipe([r1])), wipe([r1, wider]), args, 'k-1'));
    assert.match(r.reason, /widens/);
    assert.match(r.reason, /api2\.example\.com/);
  });

  it('widen in place: the target of the same revision now allows private addresses → CONTRACT_STALE', () => {
    const edited = { ...TARGETS, api: { http: { ...TARGETS.api.http, allow_private: true } } };
    const r = staleOf(recheckPlan(admitted(wipe([r1])), wipe([r1], edited), args, 'k-1'));
    assert.match(r.reason, /widens/);
  });

  it('revision 1 edited in place (a forced accept): another request → CONTRACT_STALE', () => {
    const edited = { ...r1, http: { ...(r1['http'] as Obj), path: '/wipe-all' } };
    const r = staleOf(recheckPlan(admitted(wipe([r1])), wipe([edited]), args, 'k-1'));
    assert.match(r.reason, /another request|widens/);
  });

  it('adapt is not migrate: an adapted call would be new arguments, which the approval never covered → CONTRACT_STALE', () => {
    const r = staleOf(recheckPlan(admitted(wipe([r1])), wipe([r1, r2({ previous: { policy: 'adapt', defaults: { region: 'eu' } } })]), args, 'k-1'));
    assert.match(r.reason, /no migrate policy/);
  });

  it('row "migrate": the queued call is transformed, recorded and re-planned under revision 2 (a new call digest to approve)', () => {
    const old = admitted(wipe([r1]));
    const r = recheckPlan(old, wipe([r1, r2({ previous: { policy: 'migrate', defaults: { region: 'eu' } } })]), args, 'k-1');
    assert.equal(r.kind, 'migrated');
    if (r.kind !== 'migrated') return;
    assert.equal(r.plan.revision.revision, 2);
    assert.deepEqual(r.plan.normalized, { title: 'all', region: 'eu' });
    assert.deepEqual(r.plan.adapted, ['r1→r2: defaulted region = "eu"']);
    assert.notEqual(r.plan.callDigest, old.callDigest);
    assert.equal(r.plan.action.kind === 'http' ? r.plan.action.bodyText : '', '{"region":"eu","title":"all"}');
  });

  it('migrate that cannot carry the call (the new revision needs a field with no default) → CONTRACT_STALE, never a guess', () => {
    staleOf(recheckPlan(admitted(wipe([r1])), wipe([r1, r2({ previous: 'migrate' })]), args, 'k-1'));
  });

  it('a chain where one accepted link only adapts → CONTRACT_STALE (every link past the admitted revision must migrate)', () => {
    const m2 = r2({ previous: { policy: 'migrate', defaults: { region: 'eu' } } });
    const r3 = { ...r2(), revision: 3, previous: 'adapt' };
    staleOf(recheckPlan(admitted(wipe([r1])), wipe([r1, m2, r3]), args, 'k-1'));
  });

  it('a call already adapted r1→r2 when admitted, then r3 migrates: re-planned from its raw arguments under r3', () => {
    const a2 = r2({ previous: { policy: 'adapt', defaults: { region: 'eu' } } });
    const old = admitted(wipe([r1, a2]), 1);
    assert.equal(old.revision.revision, 2);
    const r3 = { ...r2(), revision: 3, http: { target: 'api', method: 'POST', path: '/wipe/v3', body: { title: '{title}', region: '{region}' } }, previous: 'migrate' };
    const r = recheckPlan(old, wipe([r1, a2, r3]), args, 'k-1');
    assert.equal(r.kind, 'migrated');
    assert.equal(r.kind === 'migrated' ? r.plan.revision.revision : 0, 3);
  });
});

describe('migrate in the catalog: declared like adapt, validated by the release gate', () => {
  it('a complete migrate passes the gate as a bounded migration', () => {
    const c = wipe([r1, r2({ previous: { policy: 'migrate', defaults: { region: 'eu' } } })]);
    const gate = releaseGate(undefined, c);
    assert.equal(gate.ok, true, gate.failures.map((f) => f.message).join('\n'));
    assert.ok(gate.changes.some((ch) => ch.class === 'bounded_migration' && ch.policy === 'migrate'));
  });

  it('an incomplete migrate fails the gate (adapter_incomplete)', () => {
    const gate = releaseGate(undefined, wipe([r1, r2({ previous: 'migrate' })]));
    assert.ok(gate.failures.some((f) => f.rule === 'adapter_incomplete'), JSON.stringify(gate.failures));
  });

  it('a migrate that renames a field the old revision lacks is refused when the catalog is parsed', () => {
    assert.throws(() => wipe([r1, r2({ previous: { policy: 'migrate', renames: { nope: 'title' } } })]), /no field "nope"/);
  });
});

describe('calls whose plan is unknown are never assumed current', () => {
  const c = wipe([r1, r2({ previous: { policy: 'adapt', defaults: { region: 'eu' } } })]);
  const t = toolOf(c, 'wipe');
  const none = new Map<string, number>();

  it('declared in _meta first, then the listing, then a declared toolset in use', () => {
    assert.deepEqual(planOrigin(t, { 'dev.postern/revision': 1 }, new Map([['wipe', 2]]), 'ts'), { revision: 1, source: 'declared' });
    assert.deepEqual(planOrigin(t, {}, new Map([['wipe', 2]]), 'ts'), { revision: 2, source: 'listed' });
    assert.deepEqual(planOrigin(t, { 'dev.postern/toolset': 'ts' }, none, 'ts'), { revision: undefined, source: 'toolset' });
  });

  it('nothing listed, nothing declared (or an unknown toolset): planned against the oldest served revision', () => {
    assert.deepEqual(planOrigin(t, {}, none, 'ts'), { revision: 1, source: 'unknown' });
    assert.deepEqual(planOrigin(t, { 'dev.postern/toolset': 'not-served' }, none, 'ts'), { revision: 1, source: 'unknown' });
  });

  it('retired revisions are not served: the oldest served one counts; a tool with one served revision is current', () => {
    const c2 = wipe([{ ...r1, retired: {} }, r2({ previous: 'adapt' })]);
    assert.equal(oldestServed(toolOf(c2, 'wipe')), 2);
    assert.deepEqual(planOrigin(toolOf(c2, 'wipe'), {}, none, 'ts'), { revision: undefined, source: 'unknown' });
    assert.deepEqual(planOrigin(toolOf(wipe([r1]), 'wipe'), {}, none, 'ts'), { revision: undefined, source: 'unknown' });
  });

  it('the policies then decide: previous: reject refuses an unknown plan before any effect', () => {
    const rej = wipe([r1, r2({ previous: 'reject' })]);
    const o = planOrigin(toolOf(rej, 'wipe'), {}, none, 'ts');
    assert.throws(() => planCall(rej, { tool: 'wipe', session: 's-1', planned: o.revision, args: { title: 'x', region: 'us' }, key: 'k' }), (e: Error & { code?: string }) => e.code === 'CONTRACT_STALE');
  });
});
