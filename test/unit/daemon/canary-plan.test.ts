/**
 * The agent never selects the contract it runs under (docs/catalog.md,
 * "Canary"): with revision 2 of a tool in canary, whatever a session says it
 * planned against — `_meta["dev.postern/revision"]`, a declared listing, the
 * toolset in use — is a plan, checked against the revision the session is
 * shown. A session outside the cohort that names the canary revision is
 * refused (CONTRACT_STALE, nothing sent, nothing executed); one that names
 * the toolset runs the control revision; an older plan is pinned like any
 * other. The pipeline in-process, with a real loopback target that logs every
 * request.
 */
import { after, before, describe, it } from 'node:test';
import { randomUUID } from 'node:crypto';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { canaryBucket, parseCatalog, sessionPlan } from '../../../src/contracts/index.js';
import { createVault, openVault, withVaultWriter } from '../../../src/vault/index.js';
import { openJournals, type Journals } from '../../../src/journal/index.js';
import { parseConfig } from '../../../src/daemon/services/config.js';
import { handleCall } from '../../../src/daemon/pipeline/call.js';
import { META_REVISION, META_TOOLSET, type Services, type SessionInfo } from '../../../src/daemon/pipeline/context.js';
import { inProcessServices } from '../../../src/daemon/in-process.js';
import { startFakeHttp, type FakeHttpServer } from '../../helpers/fake-http.js';
import { CHEAP } from '../vault/helpers.js';
import { ManualClock } from '../../helpers/clock.js';

type Result = { isError?: boolean; structuredContent?: Record<string, unknown>; _meta?: Record<string, unknown> };
const obj = (props: Record<string, unknown>, required: string[]) => ({ type: 'object', properties: props, required });

/** The first session id (`prefix-N`) inside, or outside, the tool's 50% canary. */
function sessionId(inside: boolean, prefix: string): string {
  for (let i = 0; ; i++) {
    const id = `${prefix}-${i}`;
    if ((canaryBucket('pedido', id) < 50) === inside) return id;
  }
}
const sessionOf = (id: string, seen: [string, number][] = []): SessionInfo => ({ id, clientName: 'unit', clientVersion: '1', protocolVersion: '2025-11-25', pid: null, runId: null, agentRelease: null, seen: new Map(seen), listedToolset: null });

describe('a canary revision is never chosen by the agent', () => {
  let dir: string;
  let http: FakeHttpServer;
  let journals: Journals;
  let svc: Services;
  const clock = new ManualClock('2031-07-15T12:00:00Z');
  const r1 = { revision: 1, input: obj({ id: { type: 'string', maxLength: 20 } }, ['id']), http: { target: 'local', method: 'POST', path: '/echo', body: { id: '{id}' } } };
  const r2 = { ...r1, revision: 2, http: { ...r1.http, body: { id: '{id}', via: 'canary' } }, previous: { policy: 'pin' }, canary: { sessions_percent: 50 } };
  const text = (http: FakeHttpServer): string =>
    stringify({
      targets: { local: { http: { origin: http.origin, credential: 'api-token', auth: 'bearer', allow_private: true } } },
      tools: { pedido: { description: 'Look an order up.', effect: 'read', approval: 'none', revisions: [r1, r2] } },
    });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'postern-canary-plan-'));
    http = await startFakeHttp();
    const pass = Buffer.from('canary-plan-passphrase');
    await createVault(join(dir, 'vault.pvlt'), pass, CHEAP);
    await withVaultWriter(join(dir, 'vault.pvlt'), pass, (v) => v.add({ name: 'api-token', kind: 'http_bearer', fields: {}, secret: { token: Buffer.from('canary-plan-token-0123') } }), CHEAP);
    const vault = await openVault(join(dir, 'vault.pvlt'), pass, CHEAP);
    journals = openJournals(join(dir, 'journal'), { clock });
    svc = inProcessServices({ vault, catalog: parseCatalog(text(http), 'catalog.yaml'), digest: 'c'.repeat(64), journals, config: parseConfig('approval_timeout_seconds: 60', 'config.yaml'), clock }, { http: null });
  });
  after(async () => {
    journals.close();
    await http.close();
    await rm(dir, { recursive: true, force: true });
  });

  const call = async (who: SessionInfo, meta: Record<string, unknown>): Promise<Result> =>
    (await handleCall(svc, who, { name: 'pedido', arguments: { id: 'P-1' }, meta, signal: new AbortController().signal, progress: () => undefined })) as Result;
  const via = (n: number): unknown => (JSON.parse(http.requests[n]!.body.toString('utf8')) as Record<string, unknown>)['via'];

  const refusedOutside: [string, (outside: string) => [SessionInfo, Record<string, unknown>]][] = [
    ['declaring the canary revision in _meta, never listed', (id) => [sessionOf(id), { [META_REVISION]: 2 }]],
    ['declaring the canary revision in _meta after listing the control one', (id) => [sessionOf(id, [['pedido', 1]]), { [META_REVISION]: 2 }]],
    ['with a listing that claims the canary revision (a forged shim hello)', (id) => [sessionOf(id, [['pedido', 2]]), {}]],
    ['declaring the canary revision and the toolset in use', (id) => [sessionOf(id), { [META_REVISION]: 2, [META_TOOLSET]: svc.state.snapshot().toolset }]],
  ];
  for (const [what, make] of refusedOutside) {
    it(`outside the cohort, ${what}: CONTRACT_STALE, nothing reaches the target, nothing executed`, async () => {
      const before = http.requests.length;
      const [who, meta] = make(sessionId(false, `out-${what.length}`));
      const r = await call(who, meta);
      assert.equal(r.isError, true, JSON.stringify(r));
      assert.equal(r.structuredContent?.['error_code'], 'CONTRACT_STALE');
      assert.equal(r.structuredContent?.['side_effect_started'], false);
      assert.equal(r.structuredContent?.['required_action'], 'refresh_tool_list');
      assert.match(String(r.structuredContent?.['message']), /revision 2 is not served to this session, which is shown revision 1/);
      assert.equal(r._meta?.[META_REVISION], null, 'nothing executed');
      assert.equal(http.requests.length, before, 'no request reached the target');
    });
  }

  it('outside the cohort, the toolset in use means the control revision it is shown, not the canary', async () => {
    const before = http.requests.length;
    const r = await call(sessionOf(sessionId(false, 'toolset')), { [META_TOOLSET]: svc.state.snapshot().toolset });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(r.structuredContent?.['result_revision'], 1);
    assert.equal(via(before), undefined);
  });

  it('outside the cohort, a plan against the control revision runs it (pinned)', async () => {
    const before = http.requests.length;
    const r = await call(sessionOf(sessionId(false, 'declared-1')), { [META_REVISION]: 1 });
    assert.equal(r.structuredContent?.['result_revision'], 1, JSON.stringify(r));
    assert.equal(via(before), undefined);
  });

  it('inside the cohort the canary revision runs, declared or listed; a plan against revision 1 is pinned there', async () => {
    const inside = sessionId(true, 'in');
    const before = http.requests.length;
    assert.equal((await call(sessionOf(inside), { [META_REVISION]: 2 })).structuredContent?.['result_revision'], 2);
    assert.equal(via(before), 'canary');
    assert.equal((await call(sessionOf(inside, [['pedido', 2]]), {})).structuredContent?.['result_revision'], 2);
    assert.equal((await call(sessionOf(inside), { [META_REVISION]: 1 })).structuredContent?.['result_revision'], 1);
  });

  it('sessionPlan, the one rule: a plan after the shown revision is not served; no plan is the shown one', () => {
    const tool = parseCatalog(text(http), 'catalog.yaml').tools.get('pedido')!;
    const outside = sessionId(false, 'rule');
    const inside = sessionId(true, 'rule');
    assert.deepEqual(sessionPlan(tool, outside, 2), { kind: 'not_served', shown: 1 });
    assert.deepEqual(sessionPlan(tool, outside, undefined), { kind: 'plan', revision: 1 });
    assert.deepEqual(sessionPlan(tool, outside, 1), { kind: 'plan', revision: 1 });
    assert.deepEqual(sessionPlan(tool, outside, 9), { kind: 'plan', revision: 9 }, 'an unknown revision is left to the contract decision (unknown_revision)');
    assert.deepEqual(sessionPlan(tool, inside, 2), { kind: 'plan', revision: 2 });
    assert.deepEqual(sessionPlan(tool, inside, undefined), { kind: 'plan', revision: undefined });
  });

  it('one agent reconnecting 200 times: each session runs only the revision its own cohort shows, whatever it names (docs/catalog.md, "What reconnecting gains")', () => {
    const tool = parseCatalog(text(http), 'catalog.yaml').tools.get('pedido')!;
    const ran = new Set<number | undefined>();
    let inside = 0;
    for (let i = 0; i < 200; i++) {
      const session = randomUUID(); // a reconnect is a new session id, minted by the daemon
      const shown = canaryBucket('pedido', session) < 50 ? 2 : 1;
      if (shown === 2) inside++;
      for (const named of [undefined, 1, 2]) {
        const plan = sessionPlan(tool, session, named);
        if (shown === 1 && named === 2) {
          assert.deepEqual(plan, { kind: 'not_served', shown: 1 }, 'outside the cohort the canary is refused, however often asked');
          continue;
        }
        assert.equal(plan.kind, 'plan');
        if (plan.kind === 'plan') ran.add(plan.revision ?? shown);
      }
      assert.deepEqual(sessionPlan(tool, session, 2), sessionPlan(tool, session, 2), 'fixed for the session: no randomness at call time');
    }
    assert.deepEqual([...ran].sort(), [1, 2], 'only the two revisions the operator accepted for the rollout');
    assert.ok(inside > 0 && inside < 200, `both cohorts occur across reconnects (${inside} of 200 inside)`);
  });
});
