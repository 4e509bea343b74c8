// Adapters and contract resolution: deterministic, always valid for the new
// revision or a clear error, and — the link between static and runtime — when
// the gate calls a link a bounded migration, no valid old call fails to adapt.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { adaptArguments, classifyRevisionChange, prepareCall, resolveContract, validateArguments } from '../../../src/contracts/index.ts';
import { catalog, objectSchema, str, tool, toolOf, type Obj } from './helpers.ts';

const v1 = {
  revision: 1,
  input: objectSchema({ title: str({ maxLength: 20 }), details: str({ maxLength: 50 }), state: { enum: ['open', 'wip', 'done'] }, n: { type: 'integer', minimum: 0, maximum: 9 } }, ['title', 'details']),
  http: { target: 'tracker', method: 'POST', path: '/t', body: { t: '{title}', d: '{details}', s: '{state}', n: '{n}' } },
};
const v2 = (previous: Obj): Obj => ({
  revision: 2,
  input: objectSchema({ subject: str({ maxLength: 20 }), body: str({ maxLength: 50 }), state: { enum: ['open', 'in_progress', 'closed'] }, n: { type: 'integer', minimum: 0, maximum: 9 }, priority: { enum: ['low', 'normal', 'high'] } }, ['subject', 'body', 'priority']),
  http: { target: 'tracker', method: 'POST', path: '/t', body: { t: '{subject}', d: '{body}', s: '{state}', n: '{n}', p: '{priority}' } },
  previous,
});
const complete = { policy: 'adapt', renames: { title: 'subject', details: 'body' }, mappings: { state: [{ from: 'wip', to: 'in_progress' }, { from: 'done', to: 'closed' }] }, defaults: { priority: 'normal' } };
const incomplete = { policy: 'adapt', renames: { title: 'subject', details: 'body' }, defaults: { priority: 'normal' } }; // forgets the state mapping

function pair(previous: Obj) {
  const c = catalog({ t: tool([v1, v2(previous)]) });
  const t = toolOf(c, 't');
  return { t, from: t.revisions[0]!, to: t.revisions[1]! };
}

// Raw arguments: mostly valid for v1, sometimes not (wrong types, unknown keys, missing fields).
const rawArgs = fc.record(
  {
    title: fc.oneof(fc.string({ maxLength: 25 }), fc.integer()),
    details: fc.string({ maxLength: 60 }),
    state: fc.constantFrom('open', 'wip', 'done', 'closed', 'bogus'),
    n: fc.oneof(fc.integer({ min: -2, max: 12 }), fc.constant(1.5)),
    extra: fc.string(),
  },
  { requiredKeys: [] },
);
const validV1 = fc.record(
  { title: fc.string({ maxLength: 20 }), details: fc.string({ maxLength: 50 }), state: fc.constantFrom('open', 'wip', 'done'), n: fc.integer({ min: 0, max: 9 }) },
  { requiredKeys: ['title', 'details'] },
);

describe('adaptArguments, properties', () => {
  for (const [name, policy] of [['complete adapter', complete], ['incomplete adapter', incomplete]] as const) {
    it(`${name}: deterministic, and valid for the new revision or a clear error`, () => {
      const { from, to } = pair(policy);
      fc.assert(
        fc.property(rawArgs, (raw) => {
          const a = adaptArguments(from, to, to.previous, raw);
          assert.deepEqual(adaptArguments(from, to, to.previous, structuredClone(raw)), a);
          switch (a.kind) {
            case 'adapted':
              assert.ok(validateArguments(to.input, a.args).ok);
              break;
            case 'invalid_for_old':
            case 'invalid_for_new':
              assert.ok(a.issues.length > 0);
              for (const i of a.issues) assert.ok(i.field.length > 0 && i.problem.length > 0);
              break;
            case 'pinned':
            case 'rejected':
              assert.fail(`unexpected ${a.kind}`);
          }
        }),
        { numRuns: 400 },
      );
    });
  }

  it('a link the gate calls a bounded migration adapts every valid old call', () => {
    const { t, from, to } = pair(complete);
    assert.ok(classifyRevisionChange(t, from, t, to).some((c) => c.class === 'bounded_migration'));
    fc.assert(fc.property(validV1, (raw) => assert.equal(adaptArguments(from, to, to.previous, raw).kind, 'adapted')), { numRuns: 400 });
  });

  it('a link whose adapter has a gap is not a bounded migration, and the gap is real', () => {
    const { t, from, to } = pair(incomplete);
    const changes = classifyRevisionChange(t, from, t, to);
    assert.ok(changes.some((c) => c.class === 'breaking' && c.reasons.some((r) => r.code === 'adapter_gap' && r.text.includes('state: enum value wip removed'))));
    const r = adaptArguments(from, to, to.previous, { title: 'a', details: 'b', state: 'wip' });
    assert.deepEqual(r.kind === 'invalid_for_new' ? r.issues : [], [{ field: 'state', problem: 'must be one of "open", "in_progress", "closed"' }]);
  });

  it('pin and reject', () => {
    const pin = pair({ policy: 'pin' });
    assert.deepEqual(adaptArguments(pin.from, pin.to, pin.to.previous, { title: 'a', details: 'b' }), { kind: 'pinned', args: { title: 'a', details: 'b' } });
    const rej = pair({ policy: 'reject' });
    assert.deepEqual(adaptArguments(rej.from, rej.to, rej.to.previous, { title: 'a', details: 'b' }), { kind: 'rejected', revision: 1 });
  });
});

describe('resolveContract along a revision chain', () => {
  const r = (n: number, extra: Obj = {}): Obj => ({ revision: n, input: objectSchema({ a: str() }, ['a']), http: { target: 'api', method: 'GET', path: '/x/{a}' }, ...extra });
  const renameTo = (n: number, name: string, from: string, extra: Obj = {}): Obj => ({ revision: n, input: objectSchema({ [name]: str() }, [name]), http: { target: 'api', method: 'GET', path: `/x/{${name}}` }, previous: { policy: 'adapt', renames: { [from]: name } }, ...extra });

  it('adapt then hand on unchanged: both steps applied, the current revision runs', () => {
    const c = catalog({ t: tool([r(1), renameTo(2, 'b', 'a'), { ...renameTo(3, 'b', 'a'), previous: undefined, input: objectSchema({ b: str(), z: str() }, ['b']), http: { target: 'api', method: 'GET', path: '/x/{b}', query: { z: '{z}' } } }]) });
    const d = resolveContract(toolOf(c, 't'), 1);
    assert.equal(d.kind, 'bridge');
    const p = prepareCall(d, { a: 'v' });
    assert.deepEqual(p.kind === 'ready' ? [p.revision.revision, p.normalized, p.adapted] : p, [3, { b: 'v' }, ['r1→r2: renamed a → b']]);
  });

  it('a pin in the chain stops there', () => {
    const c = catalog({ t: tool([r(1), renameTo(2, 'b', 'a'), { ...renameTo(3, 'c', 'b'), previous: 'pin' }]) });
    const p = prepareCall(resolveContract(toolOf(c, 't'), 1), { a: 'v' });
    assert.deepEqual(p.kind === 'ready' ? [p.revision.revision, p.normalized] : p, [2, { b: 'v' }]);
  });

  it('a reject anywhere in the chain rejects', () => {
    const c = catalog({ t: tool([r(1), r(2, { previous: 'reject' }), r(3, { previous: 'adapt' })]) });
    const d = resolveContract(toolOf(c, 't'), 1);
    assert.deepEqual(d.kind === 'reject' ? [d.reason, d.currentRevision] : d, ['policy_reject', 3]);
    assert.equal(resolveContract(toolOf(c, 't'), 2).kind, 'bridge');
  });

  it('retired revisions and tools name their replacement; unknown and absent revisions', () => {
    const c = catalog({ t: tool([r(1, { retired: { replacement: 'u' } }), r(2)]), u: tool([r(1)]), gone: tool([r(1), r(2, { retired: { replacement: 'u' } })]) });
    const d = resolveContract(toolOf(c, 't'), 1);
    assert.deepEqual(d.kind === 'reject' ? [d.reason, d.replacement] : d, ['revision_retired', 'u']);
    const g = resolveContract(toolOf(c, 'gone'), undefined);
    assert.deepEqual(g.kind === 'reject' ? [g.reason, g.replacement, g.message] : g, ['tool_retired', 'u', 'gone: the tool is retired; use u; current revision is 2']);
    assert.equal(resolveContract(toolOf(c, 't'), 5).kind, 'reject');
    assert.equal(resolveContract(toolOf(c, 't'), undefined).kind, 'current');
  });

  it('the old call is validated against the revision it was planned for, with that revision\'s defaults', () => {
    const c = catalog({
      t: tool([
        { revision: 1, input: objectSchema({ a: str(), mode: { enum: ['fast', 'safe'], default: 'safe' } }, ['a']), http: { target: 'api', method: 'GET', path: '/x/{a}', query: { mode: '{mode}' } } },
        { revision: 2, input: objectSchema({ a: str(), mode: { enum: ['fast', 'safe'], default: 'fast' } }, ['a']), http: { target: 'api', method: 'GET', path: '/x/{a}', query: { mode: '{mode}' } } },
      ]),
    });
    const p = prepareCall(resolveContract(toolOf(c, 't'), 1), { a: 'v' });
    assert.deepEqual(p.kind === 'ready' ? p.normalized : p, { a: 'v', mode: 'safe' }); // what the old call meant
    const fresh = prepareCall(resolveContract(toolOf(c, 't'), 2), { a: 'v' });
    assert.deepEqual(fresh.kind === 'ready' ? fresh.normalized : fresh, { a: 'v', mode: 'fast' });
  });
});
