/**
 * A call queued for approval when the catalog changes (seed 000: "una
 * notificación que llegue después de que una llamada haya entrado en la
 * cola"; seed 001: "Migrar el estado sin revisar las aprobaciones"; issue 12
 * item 2). The operator accepts a catalog while a call waits on its card:
 * the call is re-planned against the catalog in use; a plan that changed is
 * refused with CONTRACT_STALE before any effect (its card withdrawn, marked
 * stale first), and a declared `migrate` re-opens the approval with a new
 * card for the new arguments. Every refused path asserts the target's
 * request log holds nothing for it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { watchEvents, type EventWatch } from '../helpers/operator-events.js';
import { openJournals } from '../../src/journal/index.js';

type Result = { isError?: boolean; structuredContent?: Record<string, unknown>; _meta?: Record<string, unknown> };
const key = (): string => `key-${randomBytes(8).toString('hex')}`;
const obj = (props: Record<string, unknown>, required: string[]) => ({ type: 'object', properties: props, required });
const title = { type: 'string', maxLength: 100 };

describe('daemon: a call queued for approval when the catalog changes', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agent: Client;
  let events: EventWatch;
  let targets: Record<string, unknown>;
  const w1 = { revision: 1, input: obj({ title }, ['title']), http: { target: 'local', method: 'POST', path: '/echo', body: { title: '{title}', op: 'wipe' } } };
  const w2 = { ...w1, revision: 2, http: { ...w1.http, body: { title: '{title}', op: 'wipe', v: 2 } }, previous: { policy: 'reject' } };
  const w3 = { ...w1, revision: 3, http: { ...w1.http, body: { title: '{title}', op: 'wipe', v: 3 } }, previous: { policy: 'adapt' } };
  const w4 = { ...w3, revision: 4, http: { ...w3.http, method: 'PUT' }, previous: { policy: 'adapt' } };
  const w5 = {
    revision: 5,
    input: obj({ title, scope: { enum: ['one', 'all'] } }, ['title', 'scope']),
    http: { target: 'local', method: 'PUT', path: '/echo', body: { title: '{title}', op: 'wipe', scope: '{scope}' } },
    previous: { policy: 'migrate', defaults: { scope: 'one' } },
  };
  const w6 = { ...w5, revision: 6, previous: { policy: 'reject' } };
  const catalog = (revisions: unknown[]) => ({
    targets,
    tools: { wipe: { description: 'Wipe a thing.', effect: 'destructive', approval: 'per-call', revisions } },
  });

  /** Requests the target received carrying `title` (each test uses its own). */
  const reached = (t: string): number => http.requests.filter((r) => r.body.toString('utf8').includes(t)).length;
  /** A call that keeps waiting for its approval (it sends a progress token). */
  const waiting = (args: Record<string, unknown>): Promise<Result> =>
    agent.callTool({ name: 'wipe', arguments: args }, { onprogress: () => undefined, resetTimeoutOnProgress: true, timeout: 60_000 }) as Promise<Result>;
  const decide = async (id: string, verdict: Record<string, unknown>): Promise<unknown> => {
    const op = await inst.operator();
    try {
      return await op.request('approvals.decide', { approval_id: id, verdict: verdict as never });
    } finally {
      op.close();
    }
  };
  const relist = async (): Promise<unknown> => (await agent.listTools()).tools.find((t) => t.name === 'wipe')?._meta?.['dev.postern/revision'];

  function assertStale(r: Result): void {
    assert.equal(r.structuredContent?.['error_code'], 'CONTRACT_STALE', JSON.stringify(r));
    assert.equal(r.structuredContent?.['side_effect_started'], false);
    assert.equal(r.structuredContent?.['required_action'], 'refresh_tool_list');
    assert.equal(r.isError, true);
  }

  before(async () => {
    ({ http, inst } = await httpFixture({
      token: canary('tok'),
      // Long enough to outlast a `catalog accept` while the card waits; the no-progress wait is short.
      config: { approval_timeout_seconds: 120, approval_wait_without_progress_seconds: 1.5 },
      catalog: (t) => ((targets = t), catalog([w1])),
    }));
    agent = await inst.client({ name: 'queued' });
    assert.equal(await relist(), 1);
    events = await watchEvents(() => inst.operator());
  });
  after(async () => {
    events.close();
    await inst.cleanup();
    await http.close();
  });

  it('row "reject": queued under r1, r2 (previous: reject) accepted → the card is marked stale and withdrawn, the call gets CONTRACT_STALE, approving finds nothing, nothing at the target', async () => {
    const pending = waiting({ title: 'q-reject', idempotency_key: key() });
    const { card } = await events.next('approval.added');
    assert.equal(card.revision, 1);
    await inst.acceptCatalog(catalog([w1, w2]));
    const stale = await events.next('approval.stale', (e) => e.id === card.id);
    assert.match(stale.reason, /rejected/);
    const gone = await events.next('approval.resolved', (e) => e.id === card.id);
    assert.equal(gone.decision.kind, 'voided');
    const r = await pending;
    assertStale(r);
    assert.equal(r.structuredContent?.['current_revision'], 2);
    await assert.rejects(decide(card.id, { verdict: 'approve', scope: 'once', call_digest: card.call_digest }), /APPROVAL_NOT_FOUND|no pending approval/);
    assert.equal(reached('q-reject'), 0, 'revision 1 never ran');
  });

  it('row "retire": queued under r2, r2 retired (r3 current) → CONTRACT_STALE naming why; nothing at the target', async () => {
    assert.equal(await relist(), 2);
    const pending = waiting({ title: 'q-retire', idempotency_key: key() });
    const { card } = await events.next('approval.added');
    await inst.acceptCatalog(catalog([w1, { ...w2, retired: {} }, w3]));
    await events.next('approval.resolved', (e) => e.id === card.id);
    const r = await pending;
    assertStale(r);
    assert.match(String(r.structuredContent?.['message']), /retired/);
    assert.equal(reached('q-retire'), 0);
  });

  it('row "widen": queued under r3, r4 (a new method, previous: adapt) accepted → CONTRACT_STALE: the approval never covered the wider request', async () => {
    assert.equal(await relist(), 3);
    const pending = waiting({ title: 'q-widen', idempotency_key: key() });
    const { card } = await events.next('approval.added');
    await inst.acceptCatalog(catalog([w1, { ...w2, retired: {} }, w3, w4]));
    const stale = await events.next('approval.stale', (e) => e.id === card.id);
    assert.match(stale.reason, /widens.*PUT/);
    const r = await pending;
    assertStale(r);
    assert.match(String(r.structuredContent?.['message']), /widens/);
    assert.equal(reached('q-widen'), 0);
  });

  it('row "migrate": queued under r4, r5 declares previous: migrate → the old card is withdrawn, a new card asks for the migrated arguments; the old approval covers nothing', async () => {
    assert.equal(await relist(), 4);
    const k = key();
    const pending = waiting({ title: 'q-migrate', idempotency_key: k });
    const { card: old } = await events.next('approval.added');
    await inst.acceptCatalog(catalog([w1, { ...w2, retired: {} }, w3, w4, w5]));
    const withdrawn = await events.next('approval.resolved', (e) => e.id === old.id);
    assert.equal(withdrawn.decision.kind, 'voided');
    const { card } = await events.next('approval.added', (e) => e.card.id !== old.id);
    assert.equal(card.revision, 5);
    assert.equal(card.revision_seen, 4);
    assert.match(card.adapter ?? '', /defaulted scope = "one"/);
    assert.deepEqual(card.normalized_arguments, { title: 'q-migrate', scope: 'one' });
    assert.notEqual(card.call_digest, old.call_digest);
    await assert.rejects(decide(old.id, { verdict: 'approve', scope: 'once', call_digest: old.call_digest }), /APPROVAL_NOT_FOUND|no pending approval/);
    await assert.rejects(decide(card.id, { verdict: 'approve', scope: 'once', call_digest: old.call_digest }), /APPROVAL_MISMATCH|different call/);
    assert.equal(reached('q-migrate'), 0, 'nothing ran before the new approval');
    await decide(card.id, { verdict: 'approve', scope: 'once', call_digest: card.call_digest });
    const r = await pending;
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(r._meta?.['dev.postern/revision'], 5);
    assert.equal(reached('q-migrate'), 1);
    const sent = http.requests.find((x) => x.body.toString('utf8').includes('q-migrate'));
    assert.equal(sent?.method, 'PUT');
    assert.deepEqual(JSON.parse(sent.body.toString('utf8')), { title: 'q-migrate', op: 'wipe', scope: 'one' });
    const j = openJournals(join(inst.sb.home, 'journal'), { readonly: true });
    try {
      const row = j.activity.listCalls({ idempotency_key: k, limit: 10 }).find((c) => c.status === 'success');
      assert.equal(row?.call.approval?.id, card.id, 'the call ran on the new card');
      assert.equal(row?.call.revision_executed, 5);
      assert.ok(row?.call.decision_path.includes('recheck:migrated→r5'), JSON.stringify(row?.call.decision_path));
    } finally {
      j.close();
    }
  });

  it('a client that stopped waiting (APPROVAL_PENDING) and comes back after r6 (reject): its card is marked stale; even approved, the call is refused and nothing runs', async () => {
    assert.equal(await relist(), 5);
    const args = { title: 'q-parked', scope: 'all', idempotency_key: key() };
    const first = agent.callTool({ name: 'wipe', arguments: args }) as Promise<Result>;
    const { card } = await events.next('approval.added');
    assert.equal((await first).structuredContent?.['error_code'], 'APPROVAL_PENDING');
    await inst.acceptCatalog(catalog([w1, { ...w2, retired: {} }, w3, w4, w5, w6]));
    const stale = await events.next('approval.stale', (e) => e.id === card.id);
    assert.match(stale.reason, /rejected/);
    // Approved anyway (an operator using the CLI): the decision is parked, nothing runs by itself.
    await decide(card.id, { verdict: 'approve', scope: 'once', call_digest: card.call_digest });
    const again = (await agent.callTool({ name: 'wipe', arguments: args })) as Result;
    assertStale(again);
    assert.equal(again.structuredContent?.['current_revision'], 6);
    assert.equal(reached('q-parked'), 0);
  });
});
