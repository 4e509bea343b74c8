/**
 * The pipeline's re-check of a call waiting for approval, in-process (real
 * vault with a cheap KDF, real journals, real loopback HTTP service, the
 * pipeline's own queue): catalog swaps while a card waits withdraw the card
 * and refuse the call, or ask again — and nothing ever runs on a card that
 * was withdrawn, even when the catalog changes back before the call resumes.
 * A call refused before anything ran names no executed revision (answer
 * `_meta` and journal row alike); one that ran names the revision it ran.
 * The re-check after the intent: a catalog accepted while the intent's
 * commit waited (held by the group commit's test hook) still stops the call.
 */
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { parseCatalog } from '../../../src/contracts/index.js';
import { createVault, openVault, withVaultWriter } from '../../../src/vault/index.js';
import { openJournals, type Journals } from '../../../src/journal/index.js';
import { type QueueEvent } from '../../../src/approvals/queue.js';
import { snapshotOf } from '../../../src/daemon/services/state.js';
import { parseConfig } from '../../../src/daemon/services/config.js';
import { handleCall } from '../../../src/daemon/pipeline/call.js';
import type { Services, SessionInfo } from '../../../src/daemon/pipeline/context.js';
import { inProcessServices } from '../../../src/daemon/in-process.js';
import { startFakeHttp, type FakeHttpServer } from '../../helpers/fake-http.js';
import { CHEAP } from '../vault/helpers.js';
import type { ApprovalCard, ApprovalDecision } from '../../../src/protocol/approvals.js';
import { ManualClock } from '../../helpers/clock.js';

type Result = { isError?: boolean; structuredContent?: Record<string, unknown>; _meta?: Record<string, unknown> };
const obj = (props: Record<string, unknown>, required: string[]) => ({ type: 'object', properties: props, required });
const title = { type: 'string', maxLength: 50 };

describe('pipeline: a call waiting for approval across catalog swaps', () => {
  let dir: string;
  let http: FakeHttpServer;
  let journals: Journals;
  let svc: Services;
  let targets: Record<string, unknown>;
  let n = 0;
  const clock = new ManualClock('2031-07-15T12:00:00Z');
  const session: SessionInfo = { id: 's-r', clientName: 'unit', clientVersion: '1', protocolVersion: '2025-11-25', pid: null, runId: null, agentRelease: null, seen: new Map([['wipe', 1]]), listedToolset: null };
  const w1 = { revision: 1, input: obj({ title }, ['title']), http: { target: 'local', method: 'POST', path: '/echo', body: { title: '{title}' } } };
  const w2 = (previous: unknown) => ({ revision: 2, input: obj({ title, scope: { enum: ['one', 'all'] } }, ['title', 'scope']), http: { target: 'local', method: 'POST', path: '/echo', body: { title: '{title}', scope: '{scope}' } }, previous });
  const swap = (revisions: unknown[]): void => {
    const text = stringify({ targets, tools: { wipe: { description: 'Wipe.', effect: 'destructive', approval: 'per-call', revisions } } });
    n++;
    svc.state.setSnapshot(snapshotOf(parseCatalog(text, 'catalog.yaml'), String(n).padStart(64, '0'), null));
  };
  const events: QueueEvent[] = [];
  const next = (pred: (e: QueueEvent) => boolean): Promise<QueueEvent> =>
    new Promise((resolve) => {
      const found = events.find(pred);
      if (found !== undefined) return resolve(found);
      const stop = svc.queue.subscribe((e) => {
        if (pred(e)) {
          stop();
          resolve(e);
        }
      });
    });
  const added = async (except: string[] = []): Promise<ApprovalCard> => {
    const e = await next((x) => x.type === 'added' && !except.includes(x.card.id));
    return (e as Extract<QueueEvent, { type: 'added' }>).card;
  };
  const resolved = async (id: string): Promise<ApprovalDecision> => ((await next((x) => x.type === 'resolved' && x.id === id)) as Extract<QueueEvent, { type: 'resolved' }>).decision;
  const call = (t: string): Promise<Result> =>
    handleCall(svc, session, { name: 'wipe', arguments: { title: t, idempotency_key: `key-${t}-000000` }, meta: {}, signal: new AbortController().signal, progress: () => undefined }) as Promise<Result>;
  const reached = (t: string): number => http.requests.filter((r) => r.body.toString('utf8').includes(t)).length;
  /** What the call's answer and its journal row say ran: both null when nothing did. */
  const executed = (t: string, r: Result): [unknown, unknown] => {
    const rows = journals.activity.listCalls({ idempotency_key: `key-${t}-000000`, limit: 10 });
    assert.equal(rows.length, 1, JSON.stringify(rows));
    return [r._meta?.['dev.postern/revision'], rows[0]?.call.revision_executed];
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'postern-recheck-'));
    http = await startFakeHttp();
    const pass = Buffer.from('recheck-passphrase');
    await createVault(join(dir, 'vault.pvlt'), pass, CHEAP);
    await withVaultWriter(join(dir, 'vault.pvlt'), pass, (v) => v.add({ name: 'api-token', kind: 'http_bearer', fields: {}, secret: { token: Buffer.from('recheck-canary-token-0123') } }), CHEAP);
    const vault = await openVault(join(dir, 'vault.pvlt'), pass, CHEAP);
    targets = { local: { http: { origin: http.origin, credential: 'api-token', auth: 'bearer', allow_private: true } } };
    journals = openJournals(join(dir, 'journal'), { clock });
    const first = stringify({ targets, tools: { wipe: { description: 'Wipe.', effect: 'destructive', approval: 'per-call', revisions: [w1] } } });
    svc = inProcessServices(
      { vault, catalog: parseCatalog(first, 'catalog.yaml'), digest: 'f'.repeat(64), journals, config: parseConfig('approval_timeout_seconds: 600\napproval_wait_without_progress_seconds: 600', 'config.yaml'), clock },
      { http: null },
    );
    svc.queue.subscribe((e) => events.push(e));
  });
  // Each test reads only its own queue events.
  beforeEach(() => {
    events.length = 0;
  });
  after(async () => {
    journals.close();
    await http.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('a swap to a catalog that rejects the plan: the card is withdrawn (voided) and the call is CONTRACT_STALE; nothing sent', async () => {
    const result = call('swap-reject');
    const card = await added();
    swap([w1, w2('reject')]);
    assert.equal((await resolved(card.id)).kind, 'voided');
    const r = await result;
    assert.equal(r.structuredContent?.['error_code'], 'CONTRACT_STALE', JSON.stringify(r));
    assert.equal(r.structuredContent?.['current_revision'], 2);
    assert.equal(reached('swap-reject'), 0);
    assert.equal(svc.queue.list().length, 0);
    assert.deepEqual(executed('swap-reject', r), [null, null], 'nothing executed: no revision in the answer or the journal');
  });

  it('a swap away and straight back: the withdrawn card approved nothing — the call asks again with a new card', async () => {
    swap([w1]);
    const result = call('swap-back');
    const first = await added();
    swap([w1, w2('reject')]);
    swap([w1]); // before the waiting call resumes
    const second = await added([first.id]);
    assert.equal((await resolved(first.id)).kind, 'voided');
    assert.equal(reached('swap-back'), 0, 'nothing ran without an approval');
    assert.equal(second.call_digest, first.call_digest);
    svc.queue.decide(second.id, { verdict: 'approve', scope: 'once', call_digest: second.call_digest }, 'op');
    const r = await result;
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(reached('swap-back'), 1);
  });

  it('a swap to an equal catalog (another acceptance, this tool unchanged) keeps the card; approved, it runs', async () => {
    const result = call('swap-equal');
    const card = await added();
    swap([w1]);
    assert.equal(svc.queue.get(card.id)?.id, card.id, 'the card is still pending');
    svc.queue.decide(card.id, { verdict: 'approve', scope: 'once', call_digest: card.call_digest }, 'op');
    assert.equal((await result).isError, undefined);
    assert.equal(reached('swap-equal'), 1);
  });

  it('approved, then a swap before the intent: refused by the re-check after the decision (no effect)', async () => {
    const result = call('swap-after');
    const card = await added();
    // The decision and the swap land in the same turn: the call resumes after both.
    svc.queue.decide(card.id, { verdict: 'approve', scope: 'once', call_digest: card.call_digest }, 'op');
    swap([w1, w2('reject')]);
    const r = await result;
    assert.equal(r.structuredContent?.['error_code'], 'CONTRACT_STALE', JSON.stringify(r));
    assert.equal(reached('swap-after'), 0);
    assert.deepEqual(executed('swap-after', r), [null, null]);
    swap([w1]);
  });

  it('approved, the intent committed while a catalog that rejects the plan is accepted: the re-check after the intent refuses (CONTRACT_STALE), nothing reaches the target, the key is released', async () => {
    swap([w1]);
    const hold = svc.commits.holdIntents();
    const result = call('held-intent');
    const card = await added();
    svc.queue.decide(card.id, { verdict: 'approve', scope: 'once', call_digest: card.call_digest }, 'op');
    // The intent waits behind the held commit; the catalog changes in that window.
    await hold.waiting;
    swap([w1, w2('reject')]);
    hold.release();
    const r = await result;
    assert.equal(r.structuredContent?.['error_code'], 'CONTRACT_STALE', JSON.stringify(r));
    assert.equal(reached('held-intent'), 0, 'nothing at the target');
    const rows = journals.activity.listCalls({ idempotency_key: 'key-held-intent-000000', limit: 10 });
    assert.equal(rows.length, 1);
    assert.deepEqual([rows[0]?.outcome?.error_code, rows[0]?.outcome?.side_effect_started, rows[0]?.outcome?.claim], ['CONTRACT_STALE', false, 'released'], JSON.stringify(rows[0]));
    // Released, not held: the same key and arguments run once the plan is valid again (after a new approval).
    swap([w1]);
    const again = call('held-intent');
    const second = await added([card.id]);
    svc.queue.decide(second.id, { verdict: 'approve', scope: 'once', call_digest: second.call_digest }, 'op');
    const r2 = await again;
    assert.equal(r2.isError, undefined, JSON.stringify(r2));
    assert.notEqual(r2.structuredContent?.['replayed'], true);
    assert.equal(reached('held-intent'), 1);
  });

  it('denied by the operator: nothing executed, no revision in the answer or the journal', async () => {
    const result = call('denied');
    const card = await added();
    svc.queue.decide(card.id, { verdict: 'deny', reason: null }, 'op');
    const r = await result;
    assert.equal(r.structuredContent?.['error_code'], 'APPROVAL_DENIED', JSON.stringify(r));
    assert.deepEqual(executed('denied', r), [null, null]);
  });

  it('migrate: a new card for the migrated arguments; the old approval is gone; approved, the migrated request runs', async () => {
    const result = call('swap-migrate');
    const old = await added();
    swap([w1, w2({ policy: 'migrate', defaults: { scope: 'one' } })]);
    const card = await added([old.id]);
    assert.equal((await resolved(old.id)).kind, 'voided');
    assert.equal(card.revision, 2);
    assert.deepEqual(card.normalized_arguments, { title: 'swap-migrate', scope: 'one' });
    assert.throws(() => svc.queue.decide(old.id, { verdict: 'approve', scope: 'once' }, 'op'), /no pending approval/);
    svc.queue.decide(card.id, { verdict: 'approve', scope: 'once', call_digest: card.call_digest }, 'op');
    const r = await result;
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(r._meta?.['dev.postern/revision'], 2);
    assert.deepEqual(executed('swap-migrate', r), [2, 2], 'what ran is named in both');
    const sent = http.requests.find((x) => x.body.toString('utf8').includes('swap-migrate'));
    assert.deepEqual(JSON.parse(sent?.body.toString('utf8') ?? 'null'), { title: 'swap-migrate', scope: 'one' });
  });
});
