// Authority covers what changes the request's meaning (THREATS row 11): a
// revision that only adds a fixed header such as `X-HTTP-Method-Override:
// DELETE` makes the server run another method, so it widens authority — a
// session grant given for the earlier revision no longer applies and the call
// needs a per-call approval; `catalog check` classifies it as authority
// widening. The same holds for every request-meaning header and for a
// method-override query parameter, in any spelling.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { requiredApproval } from '../../../src/approvals/policy.ts';
import { GrantStore } from '../../../src/approvals/grants.ts';
import { authorityOf, classifyRevisionChange, type Catalog } from '../../../src/contracts/index.ts';
import { catalog, classes, objectSchema, str, tool, toolOf, type Obj } from '../contracts/helpers.ts';

const input = objectSchema({ title: str() }, ['title']);
const http = (extra: Obj): Obj => ({ target: 'api', method: 'POST', path: '/items', body: { title: '{title}' }, ...extra });

function twoRevisions(second: Obj, first: Obj = {}): Catalog {
  return catalog({
    t: tool([
      { revision: 1, input, http: http(first) },
      { revision: 2, input, http: http(second), previous: { policy: 'pin' } },
    ]),
  });
}

function afterGrantForRevision1(c: Catalog) {
  const t = toolOf(c, 't');
  const [r1, r2] = t.revisions;
  const grant = new GrantStore().give({ sessionId: 's', tool: 't', revision: 1, authority: authorityOf(t, r1!), grantedAt: 'then', grantedBy: 'operator', approvalId: 'a1' });
  return requiredApproval({ policy: 'session', current: authorityOf(t, r2!), grant });
}

describe('a revision that only adds X-HTTP-Method-Override: DELETE', () => {
  const c = twoRevisions({ headers: { 'X-HTTP-Method-Override': 'DELETE' } });

  it('widens authority, so the session grant for revision 1 no longer applies: per-call approval', () => {
    const need = afterGrantForRevision1(c);
    assert.equal(need.kind, 'ask');
    assert.ok(need.kind === 'ask');
    assert.equal(need.scope, 'per-call');
    assert.deepEqual(need.widening, ['new request override header x-http-method-override: DELETE']);
  });

  it('is classified as authority widening by catalog check', () => {
    const t = toolOf(c, 't');
    const changes = classifyRevisionChange(t, t.revisions[0]!, t, t.revisions[1]!);
    assert.ok(classes(changes).includes('authority_widening'), JSON.stringify(changes));
  });

  it('the same revision without the header keeps the grant', () => {
    const same = twoRevisions({ headers: { Accept: 'application/json' } }, { headers: { Accept: 'application/json' } });
    assert.equal(afterGrantForRevision1(same).kind, 'granted');
  });
});

describe('every request-meaning header and override, in any spelling', () => {
  const added: [string, Obj][] = [
    ['X-HTTP-Method', { headers: { 'X-HTTP-Method': 'DELETE' } }],
    ['X-Method-Override', { headers: { 'X-Method-Override': 'PUT' } }],
    ['x_http_method_override (underscores)', { headers: { x_http_method_override: 'DELETE' } }],
    ['X-Original-URL', { headers: { 'X-Original-URL': '/admin' } }],
    ['X-Rewrite-URL', { headers: { 'X-Rewrite-URL': '/admin' } }],
    ['X-Forwarded-Host', { headers: { 'X-Forwarded-Host': 'internal.example' } }],
    ['X-Forwarded-Prefix', { headers: { 'X-Forwarded-Prefix': '/admin' } }],
    ['X-Forwarded-Proto', { headers: { 'X-Forwarded-Proto': 'http' } }],
    ['X-Forwarded-For', { headers: { 'X-Forwarded-For': '127.0.0.1' } }],
    ['X-Host', { headers: { 'X-Host': 'internal.example' } }],
    ['Forwarded', { headers: { Forwarded: 'host=internal.example' } }],
    ['X-Real-IP', { headers: { 'X-Real-IP': '10.0.0.1' } }],
    ['an unlisted X-Forwarded-* header', { headers: { 'X-Forwarded-Whatever': '1' } }],
    ['a _method query parameter', { query: { _method: 'DELETE' } }],
    ['a fullwidth ＿method query parameter', { query: { '＿method': 'DELETE' } }],
    ['a _method body field', { body: { title: '{title}', _method: 'DELETE' } }],
  ];
  for (const [name, extra] of added) {
    it(`adding ${name} needs a per-call approval`, () => {
      const need = afterGrantForRevision1(twoRevisions(extra));
      assert.ok(need.kind === 'ask' && need.scope === 'per-call', JSON.stringify(need));
    });
  }
  it('changing the override value widens', () => {
    const need = afterGrantForRevision1(twoRevisions({ headers: { 'X-HTTP-Method-Override': 'DELETE' } }, { headers: { 'X-HTTP-Method-Override': 'PATCH' } }));
    assert.ok(need.kind === 'ask' && need.scope === 'per-call');
  });
  it('removing an override widens too (the method on the request line takes over again)', () => {
    const need = afterGrantForRevision1(twoRevisions({}, { headers: { 'X-HTTP-Method-Override': 'GET' } }));
    assert.ok(need.kind === 'ask' && need.scope === 'per-call');
  });
  it('an ordinary header added keeps the grant scope (asks again, session allowed)', () => {
    const need = afterGrantForRevision1(twoRevisions({ headers: { 'X-Trace': 'on' } }));
    assert.notEqual(need.kind === 'ask' ? need.scope : need.kind, 'per-call');
  });
  it('a broad tool\'s fixed override header is part of its authority', () => {
    const c = catalog({ b: tool([{ revision: 1, http_request: { target: 'api', methods: ['POST'], paths: ['/x'], headers: { 'X-HTTP-Method-Override': 'DELETE' } } }]) });
    const t = toolOf(c, 'b');
    assert.deepEqual(authorityOf(t, t.current).requestMeaning, ['header x-http-method-override: DELETE']);
  });
  it('an override header must be fixed text: the agent cannot choose the method through it', () => {
    const inputM = objectSchema({ title: str(), m: { enum: ['GET', 'DELETE'] } }, ['title', 'm']);
    assert.throws(() => catalog({ t: tool([{ revision: 1, input: inputM, http: http({ headers: { 'X-HTTP-Method-Override': '{m}' } }) }]) }), /must be fixed text/);
    assert.throws(() => catalog({ t: tool([{ revision: 1, input: inputM, http: http({ headers: { 'X-Forwarded-Host': '{m}.example' } }) }]) }), /must be fixed text/);
  });
});
