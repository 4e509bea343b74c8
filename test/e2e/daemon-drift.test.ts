/**
 * Tool-schema drift with a long-running agent (the seeds' scenario): the
 * operator accepts new revisions while the daemon runs; sessions are told
 * `tools/list_changed`; a client still planning against an older revision is
 * adapted (and the request shows the adapted arguments) or rejected before
 * any effect; a revision that widens authority needs a fresh per-call
 * approval although the session holds a grant.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { Client } from '@modelcontextprotocol/client';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { watchEvents, type EventWatch } from '../helpers/operator-events.js';
import { waitFor } from '../helpers/wait.js';
import { catalogDigest } from '../../src/contracts/catalog/acceptance.js';

type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };
const key = (): string => `key-${randomBytes(8).toString('hex')}`;
const obj = (props: Record<string, unknown>, required: string[]) => ({ type: 'object', properties: props, required });
const title = { type: 'string', maxLength: 100 };

describe('daemon: contract drift while sessions run', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let planner: Client; // never re-lists: it keeps planning against what it saw first
  let watcher: Client; // re-lists when told the list changed
  const changed: unknown[] = [];
  let targets: Record<string, unknown>;
  let events: EventWatch; // the daemon's own events: adoption is waited for, not read from the log
  const r1 = { revision: 1, input: obj({ title }, ['title']), http: { target: 'local', method: 'POST', path: '/echo', body: { title: '{title}' } } };
  const r2 = {
    revision: 2,
    input: obj({ title, region: { enum: ['eu', 'us'] } }, ['title', 'region']),
    http: { target: 'local', method: 'POST', path: '/echo', body: { title: '{title}', region: '{region}' } },
    previous: { policy: 'adapt', defaults: { region: 'eu' } },
  };
  const r3 = { ...r2, revision: 3, previous: { policy: 'reject' } };
  const r4 = { ...r2, revision: 4, http: { ...r2.http, method: 'PUT' }, previous: { policy: 'adapt' } };
  const catalog = (revisions: unknown[]) => ({
    targets,
    tools: { create_issue: { description: 'Create an issue.', effect: 'write', approval: 'session', revisions } },
  });

  before(async () => {
    ({ http, inst } = await httpFixture({ token: canary('tok'), catalog: (t) => ((targets = t), catalog([r1])) }));
    planner = await inst.client({ name: 'planner' });
    watcher = await inst.client({ name: 'watcher', listChanged: (tools) => changed.push(tools) });
    await planner.listTools();
    await watcher.listTools();
    events = await watchEvents(() => inst.operator());
  });
  after(async () => {
    events.close();
    await inst.cleanup();
    await http.close();
  });

  const call = async (c: Client, args: Record<string, unknown>, meta?: Record<string, unknown>): Promise<Result> =>
    (await c.callTool({ name: 'create_issue', arguments: args, ...(meta === undefined ? {} : { _meta: meta }) })) as Result;

  /** The next card to reach the queue (from the daemon's events), and an operator connection to decide it. */
  async function nextCard() {
    const { card } = await events.next('approval.added');
    return { card, op: await inst.operator() };
  }

  it('r1: the planner gets a session grant', async () => {
    const pending = call(planner, { title: 'first', idempotency_key: key() });
    const { card, op } = await nextCard();
    assert.equal(card.scope_allowed, 'session');
    await op.request('approvals.decide', { approval_id: card.id, verdict: { verdict: 'approve', scope: 'session' } });
    const { grant } = await events.next('grant.added');
    assert.deepEqual([grant.id, grant.tool, grant.revision, grant.session_id], [card.id, 'create_issue', 1, card.session.id]);
    assert.deepEqual((await op.request('grants.list', {})).map((g) => g.id), [card.id]);
    op.close();
    assert.equal((await pending).isError, undefined);
    const done = await events.next('activity', (e) => e.record.status === 'success');
    assert.deepEqual([done.record.tool, done.record.decision, done.record.side_effect_started], ['create_issue', 'approved_session', true]);
  });

  it('r2 accepted while running: list_changed is sent, a stale call is adapted under the same grant', async () => {
    const before = http.requests.length;
    await inst.acceptCatalog(catalog([r1, r2]));
    await waitFor(() => changed.length > 0, 'the watcher was told tools/list_changed');
    const adopted = await events.next('catalog.adopted');
    assert.equal(adopted.catalog.sequence, 2);
    const r = await call(planner, { title: 'old shape', idempotency_key: key() });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(r.structuredContent?.['result_revision'], 2);
    assert.equal(http.requests.length, before + 1);
    assert.deepEqual(JSON.parse(http.requests[before]!.body.toString('utf8')), { title: 'old shape', region: 'eu' });
    const { tools } = await watcher.listTools();
    assert.equal(tools.find((t) => t.name === 'create_issue')?._meta?.['dev.postern/revision'], 2);
  });

  it('r3 rejects calls planned against r2: refused before any effect', async () => {
    await inst.acceptCatalog(catalog([r1, r2, r3]));
    await events.next('catalog.adopted', (e) => e.catalog.sequence === 3);
    const before = http.requests.length;
    const r = await call(planner, { title: 'stale', region: 'us', idempotency_key: key() }, { 'dev.postern/revision': 2 });
    assert.equal(r.structuredContent?.['error_code'], 'CONTRACT_STALE');
    assert.equal(r.structuredContent?.['current_revision'], 3);
    assert.equal(r.structuredContent?.['side_effect_started'], false);
    assert.equal(http.requests.length, before);
  });

  it('r4 widens authority (new method): the session grant no longer applies; per-call only', async () => {
    await inst.acceptCatalog(catalog([r1, r2, r3, r4]));
    await events.next('catalog.adopted', (e) => e.catalog.sequence === 4);
    await planner.listTools();
    const before = http.requests.length;
    const pending = call(planner, { title: 'wider', region: 'us', idempotency_key: key() });
    const { card, op } = await nextCard();
    try {
      assert.equal(card.scope_allowed, 'per-call');
      assert.match(card.widening.join(' '), /PUT/);
      await assert.rejects(op.request('approvals.decide', { approval_id: card.id, verdict: { verdict: 'approve', scope: 'session' } }));
      await assert.rejects(op.request('approvals.decide', { approval_id: card.id, verdict: { verdict: 'approve', scope: 'once', call_digest: 'f'.repeat(64) } }), /APPROVAL_MISMATCH|different call/);
      assert.equal(http.requests.length, before, 'nothing ran on a refused verdict');
      await op.request('approvals.decide', { approval_id: card.id, verdict: { verdict: 'approve', scope: 'once', call_digest: card.call_digest } });
    } finally {
      op.close();
    }
    assert.equal((await pending).isError, undefined);
    assert.equal(http.requests[before]?.method, 'PUT');
    // The approval was single use: the next call asks again.
    const again = await call(planner, { title: 'wider again', region: 'us', idempotency_key: key() });
    assert.equal(again.structuredContent?.['error_code'], 'APPROVAL_TIMEOUT');
    assert.equal(http.requests.length, before + 1);
  });

  it('an edited but unaccepted catalog.yaml changes nothing', async () => {
    const wider = catalog([r1, r2, r3, r4, { ...r4, revision: 5, http: { ...r4.http, method: 'DELETE' } }]);
    const text = stringify(wider);
    await writeFile(join(inst.sb.home, 'catalog.yaml'), text);
    // The daemon reads the edited file and offers it for review (catalog.pending): the point at
    // which it has seen the edit, and would have adopted it if an edit alone were enough.
    await events.next('catalog.pending', (e) => e.pending?.digest === catalogDigest(text));
    const { tools } = await watcher.listTools();
    assert.equal(tools.find((t) => t.name === 'create_issue')?._meta?.['dev.postern/revision'], 4);
  });
});
