/** The approval rule as a table: policy × session history × grants → requirement. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Authority } from '../../../src/contracts/index.js';
import { requiredApproval, type ApprovalPolicy } from '../../../src/approvals/policy.js';
import { GrantStore } from '../../../src/approvals/grants.js';

const base: Authority = {
  effect: 'write',
  credentials: ['gh'],
  origins: ['https://api.example.com:443'],
  methods: ['POST'],
  paths: ['/repos/{}/issues'],
  requestMeaning: [],
  privateNetwork: 'refused',
  ssh: [],
  programs: [],
  commands: [],
};
const wider: Authority = { ...base, methods: ['DELETE', 'POST'] };
const otherHost: Authority = { ...base, origins: ['https://api.example.com:443', 'https://evil.example:443'] };
const narrower: Authority = { ...base, credentials: ['gh'], paths: [] };

function grantFor(a: Authority) {
  return new GrantStore().give({ sessionId: 's', tool: 't', revision: 1, authority: a, grantedAt: 'now', grantedBy: 'op', approvalId: 'a1' });
}

describe('requiredApproval', () => {
  const rows: { name: string; policy: ApprovalPolicy; current: Authority; seen?: Authority; grant?: Authority; expect: string; widening?: RegExp }[] = [
    { name: 'none → auto', policy: 'none', current: base, expect: 'auto' },
    { name: 'session, no grant → ask session', policy: 'session', current: base, expect: 'ask:session' },
    { name: 'per-call → ask per-call', policy: 'per-call', current: base, expect: 'ask:per-call' },
    { name: 'session with matching grant → granted', policy: 'session', current: base, grant: base, expect: 'granted' },
    { name: 'grant for a narrower authority, current wider → per-call', policy: 'session', current: wider, grant: base, expect: 'ask:per-call', widening: /DELETE/ },
    { name: 'grant for a wider authority, current narrower → ask again (session)', policy: 'session', current: base, grant: wider, expect: 'ask:session' },
    { name: 'session saw a narrower revision → per-call even for none', policy: 'none', current: otherHost, seen: base, expect: 'ask:per-call', widening: /evil\.example/ },
    { name: 'seen revision equal → policy applies', policy: 'session', current: base, seen: base, expect: 'ask:session' },
    { name: 'seen wider than current → policy applies', policy: 'none', current: base, seen: wider, expect: 'auto' },
    { name: 'seen narrower beats a matching grant', policy: 'session', current: base, seen: narrower, grant: base, expect: 'ask:per-call' },
  ];
  for (const r of rows) {
    it(r.name, () => {
      const current = r.current;
      const req = requiredApproval({ policy: r.policy, current, seen: r.seen, grant: r.grant === undefined ? undefined : grantFor(r.grant) });
      const got = req.kind === 'ask' ? `ask:${req.scope}` : req.kind;
      assert.equal(got, r.expect);
      if (r.widening !== undefined) {
        assert.equal(req.kind, 'ask');
        if (req.kind === 'ask') assert.match(req.widening.join(' '), r.widening);
      }
    });
  }
});
