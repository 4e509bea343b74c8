/**
 * A session grant does not carry over to a revision that adds a request
 * override (THREATS row 11), end to end through the call pipeline: real
 * vault (cheap KDF), real journals, the pipeline's approval queue, a real
 * loopback HTTP service. Revision 1 is granted for the session; revision 2
 * only adds the fixed header `X-HTTP-Method-Override: DELETE`; its call is
 * held for a per-call approval that names the widening, and nothing reaches
 * the target until the operator approves it.
 */
import { after, before, describe, it } from 'node:test';
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
import type { ApprovalCard, OperatorVerdict } from '../../../src/protocol/approvals.js';
import { startFakeHttp, type FakeHttpServer } from '../../helpers/fake-http.js';
import { CHEAP } from '../vault/helpers.js';
import { ManualClock } from '../../helpers/clock.js';

type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };

describe('a session grant and a revision that adds X-HTTP-Method-Override: DELETE', () => {
  let dir: string;
  let http: FakeHttpServer;
  let journals: Journals;
  let svc: Services;
  const clock = new ManualClock('2031-07-15T12:00:00Z');
  const session: SessionInfo = { id: 's-override', clientName: 'unit', clientVersion: '1', protocolVersion: '2025-11-25', pid: null, runId: null, agentRelease: null, seen: new Map(), listedToolset: null };

  const input = { type: 'object', properties: { t: { type: 'string', maxLength: 50 } }, required: ['t'] };
  const revision = (n: number, headers: Record<string, string>) => ({ revision: n, input, http: { target: 'local', method: 'POST', path: '/echo', headers, body: { t: '{t}' } } });
  const catalogText = (origin: string, revisions: unknown[]) =>
    stringify({
      targets: { local: { http: { origin, credential: 'api-token', auth: 'bearer', allow_private: true } } },
      tools: { note: { description: 'Write a note.', effect: 'write', approval: 'session', revisions } },
    });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'postern-override-'));
    http = await startFakeHttp();
    const pass = Buffer.from('override-passphrase');
    await createVault(join(dir, 'vault.pvlt'), pass, CHEAP);
    await withVaultWriter(join(dir, 'vault.pvlt'), pass, (v) => v.add({ name: 'api-token', kind: 'http_bearer', fields: {}, secret: { token: Buffer.from('override-canary-token-0123') } }), CHEAP);
    const vault = await openVault(join(dir, 'vault.pvlt'), pass, CHEAP);
    journals = openJournals(join(dir, 'journal'), { clock });
    svc = inProcessServices(
      { vault, catalog: parseCatalog(catalogText(http.origin, [revision(1, { Accept: 'application/json' })]), 'catalog.yaml'), digest: 'a'.repeat(64), journals, config: parseConfig('approval_timeout_seconds: 600', 'config.yaml'), clock },
      { http: null },
    );
  });
  after(async () => {
    journals.close();
    await http.close();
    await rm(dir, { recursive: true, force: true });
  });

  const call = async (t: string, key: string): Promise<Result> =>
    (await handleCall(svc, session, { name: 'note', arguments: { t, idempotency_key: key }, meta: {}, signal: new AbortController().signal, progress: () => undefined })) as Result;

  /** Runs a call and answers its approval card (if one is shown) with `verdict`; returns the card and the result. */
  async function callAnswering(t: string, key: string, verdict: OperatorVerdict): Promise<{ card: ApprovalCard | undefined; result: Result; sentBeforeVerdict: number }> {
    let card: ApprovalCard | undefined;
    let sentBeforeVerdict = -1;
    const stop = svc.queue.subscribe((e: QueueEvent) => {
      if (e.type !== 'added') return;
      card = e.card;
      sentBeforeVerdict = http.requests.length;
      queueMicrotask(() => svc.queue.decide(e.card.id, verdict, 'operator'));
    });
    try {
      return { result: await call(t, key), card, sentBeforeVerdict };
    } finally {
      stop();
    }
  }

  it('revision 1: approved for the session, later calls run on the grant', async () => {
    const first = await callAnswering('one', 'override-key-01', { verdict: 'approve', scope: 'session' });
    assert.equal(first.result.isError, undefined, JSON.stringify(first.result));
    assert.equal(first.card?.scope_allowed, 'session');
    const second = await callAnswering('two', 'override-key-02', { verdict: 'deny', reason: null });
    assert.equal(second.card, undefined, 'no card: the session grant applies');
    assert.equal(second.result.isError, undefined);
  });

  it('revision 2 only adds the header: the grant no longer applies, the call needs a per-call approval', async () => {
    const next = parseCatalog(catalogText(http.origin, [revision(1, { Accept: 'application/json' }), { ...revision(2, { Accept: 'application/json', 'X-HTTP-Method-Override': 'DELETE' }), previous: { policy: 'adapt' } }]), 'catalog.yaml');
    svc.state.setSnapshot(snapshotOf(next, 'b'.repeat(64), null));
    const before = http.requests.length;

    const denied = await callAnswering('three', 'override-key-03', { verdict: 'deny', reason: null });
    assert.ok(denied.card, 'a card is shown despite the session grant');
    assert.equal(denied.card.scope_allowed, 'per-call');
    assert.match(denied.card.widening.join(' '), /x-http-method-override: DELETE/);
    assert.equal(denied.sentBeforeVerdict, before, 'nothing was sent while the card waited');
    assert.equal(denied.result.structuredContent?.['error_code'], 'APPROVAL_DENIED');
    assert.equal(http.requests.length, before, 'a denied call sends nothing');

    const approved = await callAnswering('four', 'override-key-04', { verdict: 'approve', scope: 'once' });
    assert.equal(approved.card?.scope_allowed, 'per-call');
    assert.equal(approved.result.isError, undefined, JSON.stringify(approved.result));
    assert.equal(http.requests.length, before + 1);
    assert.equal(http.header(http.requests.length - 1, 'x-http-method-override'), 'DELETE');

    const again = await callAnswering('five', 'override-key-05', { verdict: 'deny', reason: null });
    assert.ok(again.card, 'approved once is not a session grant: the next call asks again');
    assert.equal(again.card.scope_allowed, 'per-call');
  });
});
