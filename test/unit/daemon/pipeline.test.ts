// @subject time: approval timeouts, retention of idempotency keys (run again a year ahead by .ci/run)
/**
 * The call pipeline in-process: real vault (cheap KDF), real journals, real
 * loopback HTTP service, the pipeline's own approval queue — no sockets, no
 * MCP — so the rules of DESIGN §6 can be checked quickly and precisely.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { stringify } from 'yaml';
import { parseCatalog } from '../../../src/contracts/index.js';
import { createVault, openVault, withVaultWriter } from '../../../src/vault/index.js';
import { openJournals, type Journals } from '../../../src/journal/index.js';
import { snapshotOf } from '../../../src/daemon/services/state.js';
import { parseConfig } from '../../../src/daemon/services/config.js';
import { handleCall } from '../../../src/daemon/pipeline/call.js';
import type { Services, SessionInfo } from '../../../src/daemon/pipeline/context.js';
import { inProcessServices } from '../../../src/daemon/in-process.js';
import { startFakeHttp, type FakeHttpServer } from '../../helpers/fake-http.js';
import { CHEAP } from '../vault/helpers.js';
import Database from 'better-sqlite3';
import type { ApprovalCard } from '../../../src/protocol/approvals.js';
import { ManualClock } from '../../helpers/clock.js';
import { EventEmitter, once } from 'node:events';

type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };
const TOKEN = 'pipeline-canary-token-0123456789';

describe('call pipeline', () => {
  let dir: string;
  let http: FakeHttpServer;
  let journals: Journals;
  let svc: Services;
  // One clock for the pipeline and its journals, as the daemon composes them; its date is arbitrary.
  const clock = new ManualClock('2031-07-15T12:00:00Z');
  const logs = new EventEmitter();
  const session: SessionInfo = { id: 's-1', clientName: 'unit', clientVersion: '1', protocolVersion: '2025-11-25', pid: null, runId: null, agentRelease: null, seen: new Map(), listedToolset: null };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'postern-pipeline-'));
    http = await startFakeHttp();
    // A target that answers a write with JSON 5,000 deep, and one that echoes the request gzip-compressed.
    http.route('/deep', (_req, res) => void res.writeHead(201, { 'content-type': 'application/json' }).end(`${'['.repeat(5000)}1${']'.repeat(5000)}`));
    http.route('/gz-echo', (req, res) => void res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(gzipSync(JSON.stringify(req.headers))));
    const pass = Buffer.from('pipeline-passphrase');
    await createVault(join(dir, 'vault.pvlt'), pass, CHEAP);
    await withVaultWriter(join(dir, 'vault.pvlt'), pass, (v) => v.add({ name: 'api-token', kind: 'http_bearer', fields: {}, secret: { token: Buffer.from(TOKEN) } }), CHEAP);
    const vault = await openVault(join(dir, 'vault.pvlt'), pass, CHEAP);
    const obj = (props: Record<string, unknown>, required: string[]) => ({ type: 'object', properties: props, required });
    const text = stringify({
      targets: { local: { http: { origin: http.origin, credential: 'api-token', auth: 'bearer', allow_private: true } } },
      tools: {
        note: { description: 'Write a note.', effect: 'write', approval: 'none', revisions: [{ revision: 1, input: obj({ t: { type: 'string', maxLength: 50 } }, ['t']), http: { target: 'local', method: 'POST', path: '/echo', body: { t: '{t}' } } }] },
        memo: { description: 'Write a memo.', effect: 'write', approval: 'session', revisions: [{ revision: 1, input: obj({ t: { type: 'string', maxLength: 50 } }, ['t']), http: { target: 'local', method: 'POST', path: '/echo', body: { t: '{t}' } } }] },
        deep: { description: 'Deep.', effect: 'write', approval: 'none', revisions: [{ revision: 1, input: obj({}, []), http: { target: 'local', method: 'POST', path: '/deep' } }] },
        gz: { description: 'Gzip.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: obj({}, []), http: { target: 'local', method: 'GET', path: '/gz-echo' } }] },
      },
    });
    const catalog = parseCatalog(text, 'catalog.yaml');
    journals = openJournals(join(dir, 'journal'), { clock });
    svc = inProcessServices(
      { vault, catalog, digest: 'a'.repeat(64), journals, config: parseConfig('idempotency_retention_days: 1\napproval_timeout_seconds: 600', 'config.yaml'), clock, log: (line) => logs.emit('line', line) },
      { http: null },
    );
  });
  after(async () => {
    journals.close();
    await http.close();
    await rm(dir, { recursive: true, force: true });
  });

  const call = async (args: Record<string, unknown>, name = 'note', who: SessionInfo = session): Promise<Result> =>
    (await handleCall(svc, who, { name, arguments: args, meta: {}, signal: new AbortController().signal, progress: () => undefined })) as Result;

  /** Starts a call and resolves with it and its approval card once the card is queued. */
  const pending = async (args: Record<string, unknown>, who: SessionInfo): Promise<{ card: ApprovalCard; result: Promise<Result> }> => {
    const queued = new Promise<ApprovalCard>((resolve) => {
      const stop = svc.queue.subscribe((e) => {
        if (e.type === 'added') {
          stop();
          resolve(e.card);
        }
      });
    });
    const result = call(args, 'memo', who);
    return { card: await queued, result };
  };
  const newSession = (id: string): SessionInfo => ({ ...session, id, seen: new Map([['memo', 1]]) });

  it('the call profile counts each call and its phases, and holds no argument', async () => {
    const before = svc.profile.view();
    const canary = `profile-canary-${Date.now().toString(36)}`;
    const r = await call({ t: canary.slice(0, 40), idempotency_key: `profile-key-${before.calls}` });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    const after = svc.profile.view();
    assert.equal(after.calls, before.calls + 1);
    const phases = after.phases.map((p) => p.phase);
    for (const p of ['admit', 'validate', 'approve', 'journal:intent', 'execute', 'redact', 'journal:outcome', 'respond']) assert.ok(phases.includes(p), `${p} in ${phases.join(', ')}`);
    assert.ok(after.phases.every((p) => p.mean_ms >= 0 && p.per_call_ms <= after.mean_ms + 1e-9));
    assert.equal(JSON.stringify(after).includes(canary.slice(0, 40)), false);
  });

  it('runs once per key; replays within the retention window; refuses the key after it', async () => {
    const before = http.requests.length;
    const first = await call({ t: 'hello', idempotency_key: 'retention-key-1' });
    assert.equal(first.isError, undefined, JSON.stringify(first));
    const replay = await call({ t: 'hello', idempotency_key: 'retention-key-1' });
    assert.equal(replay.structuredContent?.['replayed'], true);
    clock.advance(2 * 86_400_000);
    const late = await call({ t: 'hello', idempotency_key: 'retention-key-1' });
    assert.equal(late.structuredContent?.['error_code'], 'IDEMPOTENCY_KEY_EXPIRED');
    assert.equal(http.requests.length, before + 1, 'one effect in all');
  });

  it('20 parallel calls with one key: one request, the rest replay or see it in progress', async () => {
    const before = http.requests.length;
    const results = await Promise.all(Array.from({ length: 20 }, () => call({ t: 'parallel', idempotency_key: 'parallel-key-1' })));
    assert.equal(http.requests.length, before + 1);
    const kinds = results.map((r) => (r.isError === true ? String(r.structuredContent?.['error_code']) : r.structuredContent?.['replayed'] === true ? 'replay' : 'ran'));
    assert.equal(kinds.filter((k) => k === 'ran').length, 1);
    assert.ok(kinds.every((k) => k === 'ran' || k === 'replay' || k === 'CALL_IN_PROGRESS'), kinds.join(','));
  });

  it('journals raw and normalized arguments, revisions and the handler revision; the secret never', async () => {
    const r = await call({ t: 'journaled', idempotency_key: 'journal-key-1' });
    const id = String(r.structuredContent?.['call_id']);
    const c = journals.activity.getCall(id);
    assert.ok(c);
    assert.deepEqual(c.call.raw_arguments, { t: 'journaled', idempotency_key: 'journal-key-1' });
    assert.deepEqual(c.call.normalized_arguments, { t: 'journaled' });
    assert.equal(c.call.revision_executed, 1);
    assert.match(c.call.handler_revision, /^postern\/\d+\.\d+\.\d+\+catalog\.a{16}$/);
    assert.deepEqual(c.call.decision_path.slice(0, 3), ['admit', 'resolve', 'resolve:current']);
    assert.equal(c.status, 'success');
    const rejected = await call({ t: `x${TOKEN}`, idempotency_key: 'journal-key-2' });
    assert.equal(rejected.structuredContent?.['error_code'], 'SECRET_IN_ARGUMENTS');
    let dump = '';
    journals.activity.exportJsonl((line) => (dump += line));
    assert.ok(!dump.includes(TOKEN), 'no secret in the journal');
    assert.ok(dump.includes('[REDACTED:api-token]'));
    assert.equal(journals.activity.verify().ok, true);
  });

  it('journals "approved once" apart from "approved for the session"; the card names the revision the session saw', async () => {
    const s = newSession('s-approvals');
    const once = await pending({ t: 'once', idempotency_key: 'approve-once-1' }, s);
    assert.equal(once.card.scope_allowed, 'session');
    assert.equal(once.card.revision_seen, 1, 'the session listed revision 1');
    svc.queue.decide(once.card.id, { verdict: 'approve', scope: 'once' }, 'op');
    const r1 = await once.result;
    assert.equal(r1.isError, undefined, JSON.stringify(r1));
    assert.equal(journals.activity.getCall(String(r1.structuredContent?.['call_id']))?.call.approval?.mode, 'per-call');

    const forSession = await pending({ t: 'session', idempotency_key: 'approve-session-1' }, s);
    svc.queue.decide(forSession.card.id, { verdict: 'approve', scope: 'session' }, 'op');
    const r2 = await forSession.result;
    assert.equal(journals.activity.getCall(String(r2.structuredContent?.['call_id']))?.call.approval?.mode, 'session');
    const r3 = await call({ t: 'granted', idempotency_key: 'approve-session-2' }, 'memo', s);
    assert.equal(journals.activity.getCall(String(r3.structuredContent?.['call_id']))?.call.approval?.mode, 'session');
  });

  describe('approval waits that fit the client', () => {
    /** The daemon answers a call without a progress token after 50 ms; progress goes out every 20 ms. */
    const quick = (): Services => ({ ...svc, config: parseConfig('approval_timeout_seconds: 600\napproval_wait_without_progress_seconds: 0.05\nprogress_interval_seconds: 0.02', 'config.yaml') });
    const nextCard = (): Promise<ApprovalCard> =>
      new Promise((resolve) => {
        const stop = svc.queue.subscribe((e) => {
          if (e.type === 'added') {
            stop();
            resolve(e.card);
          }
        });
      });
    const run = (s: Services, who: SessionInfo, args: Record<string, unknown>, meta: Record<string, unknown> = {}, progress: (m: string) => void = () => undefined): Promise<Result> =>
      handleCall(s, who, { name: 'memo', arguments: args, meta, signal: new AbortController().signal, progress }) as Promise<Result>;

    it('without a progress token: APPROVAL_PENDING, the card stays open, the same call again takes the decision once', async () => {
      const s = quick();
      const who = newSession('s-parked');
      const before = http.requests.length;
      const args = { t: 'parked', idempotency_key: 'parked-key-1' };
      const queued = nextCard();
      const first = await run(s, who, args);
      const card = await queued;
      assert.equal(first.structuredContent?.['error_code'], 'APPROVAL_PENDING', JSON.stringify(first));
      assert.equal(first.structuredContent?.['side_effect_started'], false);
      assert.equal(first.structuredContent?.['approval_id'], card.id);
      assert.equal(svc.queue.get(card.id)?.id, card.id, 'the card is still open');

      // Another session with the same key and arguments (an agent that reconnected) waits on this card; its end does not drop it.
      const other = await run(s, newSession('s-parked-other'), args);
      assert.equal(other.structuredContent?.['error_code'], 'APPROVAL_PENDING', JSON.stringify(other));
      assert.equal(other.structuredContent?.['approval_id'], card.id, 'the same card, not a second one');
      assert.equal(svc.queue.list().length, 1);
      assert.equal(svc.queue.parked.dropSession('s-parked-other'), 0);
      assert.equal(svc.queue.parked.dropSession(who.id), 0);
      assert.equal(svc.queue.get(card.id)?.id, card.id, 'the card outlives both sessions');

      svc.queue.decide(card.id, { verdict: 'deny', reason: 'not this one' }, 'op');
      const second = await run(s, who, args);
      assert.equal(second.structuredContent?.['error_code'], 'APPROVAL_DENIED', JSON.stringify(second));
      assert.match(String(second.structuredContent?.['message']), /not this one/);
      const third = await run(s, who, args);
      assert.equal(third.structuredContent?.['error_code'], 'APPROVAL_PENDING', 'the decision was consumed: a new card');
      assert.notEqual(third.structuredContent?.['approval_id'], card.id);
      svc.queue.parked.clear();

      const outcomes = [first, other, second, third].map((r) => journals.activity.getCall(String(r.structuredContent?.['call_id']))?.call.approval?.outcome);
      assert.deepEqual(outcomes, ['pending', 'pending', 'denied', 'pending']);
      assert.equal(http.requests.length, before, 'nothing ran');
    });

    it('with a progress token: the call waits past that limit, with progress, until the operator decides', async () => {
      const s = quick();
      const who = newSession('s-progress');
      const queued = nextCard();
      let past: () => void = () => undefined;
      const pastLimit = new Promise<void>((resolve) => (past = resolve));
      let n = 0;
      // Five notifications span at least four 20 ms intervals: longer than the 50 ms limit without a token.
      const result = run(s, who, { t: 'waits', idempotency_key: 'progress-key-1' }, { progressToken: 7 }, () => {
        if (++n === 5) past();
      });
      const card = await queued;
      await pastLimit;
      assert.equal(svc.queue.get(card.id)?.id, card.id);
      svc.queue.decide(card.id, { verdict: 'approve', scope: 'once' }, 'op');
      const r = await result;
      assert.equal(r.isError, undefined, JSON.stringify(r));
    });

    it('a client that gives up while it waits: the card leaves the queue and the journal says cancelled', async () => {
      const who = newSession('s-cancel');
      const ctl = new AbortController();
      const queued = nextCard();
      const result = handleCall(svc, who, { name: 'memo', arguments: { t: 'gone', idempotency_key: 'cancel-key-1' }, meta: { progressToken: 'p' }, signal: ctl.signal, progress: () => undefined }) as Promise<Result>;
      const card = await queued;
      ctl.abort();
      const r = await result;
      assert.equal(r.structuredContent?.['error_code'], 'CALL_CANCELLED');
      assert.equal(svc.queue.get(card.id), undefined);
      assert.equal(journals.activity.getCall(String(r.structuredContent?.['call_id']))?.call.approval?.outcome, 'cancelled');
    });
  });

  it('two different calls get different digests; approving B with A\'s digest is refused and runs nothing', async () => {
    const s = newSession('s-digests');
    const before = http.requests.length;
    const a = await pending({ t: 'call A', idempotency_key: 'digest-a-1' }, s);
    const b = await pending({ t: 'call B', idempotency_key: 'digest-b-1' }, s);
    assert.notEqual(a.card.call_digest, b.card.call_digest);
    assert.throws(() => svc.queue.decide(b.card.id, { verdict: 'approve', scope: 'once', call_digest: a.card.call_digest }, 'op'), /APPROVAL_MISMATCH|different call/);
    assert.equal(svc.queue.get(b.card.id)?.id, b.card.id, 'B is still waiting');
    assert.equal(http.requests.length, before, 'nothing ran');
    svc.queue.decide(a.card.id, { verdict: 'deny', reason: null }, 'op');
    svc.queue.decide(b.card.id, { verdict: 'deny', reason: null }, 'op');
    assert.equal((await a.result).structuredContent?.['error_code'], 'APPROVAL_DENIED');
    assert.equal((await b.result).structuredContent?.['error_code'], 'APPROVAL_DENIED');
    assert.equal(http.requests.length, before);
  });

  it('no intent, no request: a journal that cannot take the intent stops the call before it leaves', async () => {
    const before = http.requests.length;
    const lock = new Database(join(dir, 'journal', 'activity.db'));
    lock.exec('BEGIN EXCLUSIVE');
    try {
      const r = await call({ t: 'blocked', idempotency_key: 'intent-blocked-1' });
      assert.equal(r.structuredContent?.['error_code'], 'JOURNAL_UNAVAILABLE', JSON.stringify(r.structuredContent));
      assert.equal(r.structuredContent?.['side_effect_started'], false);
    } finally {
      lock.exec('ROLLBACK');
      lock.close();
    }
    assert.equal(http.requests.length, before, 'the target saw nothing');
    const retry = await call({ t: 'blocked', idempotency_key: 'intent-blocked-1' });
    assert.equal(retry.isError, undefined, 'the key was not consumed');
    assert.equal(http.requests.length, before + 1);
  });

  it('a response nested 5,000 deep: the facts of the effect come back and are journaled', async () => {
    const r = await call({ idempotency_key: 'deep-key-1' }, 'deep');
    assert.equal(r.isError, undefined, JSON.stringify(r).slice(0, 300));
    assert.equal(r.structuredContent?.['status'], 201);
    assert.equal(r.structuredContent?.['body_encoding'], 'text');
    const c = journals.activity.getCall(String(r.structuredContent?.['call_id']));
    assert.equal(c?.status, 'success');
    const replay = await call({ idempotency_key: 'deep-key-1' }, 'deep');
    assert.equal(replay.structuredContent?.['replayed'], true);
  });

  it('a gzip-compressed echo of the credential is decoded and redacted', async () => {
    const r = await call({}, 'gz');
    assert.equal(r.structuredContent?.['decoded_from'], 'gzip');
    const text = JSON.stringify(r);
    assert.ok(!text.includes(TOKEN));
    assert.ok(text.includes('[REDACTED:api-token]'), text);
  });

  it('an outcome the journal refuses (locked by another connection) is retried; meanwhile the key replays the result, marked not durable', async () => {
    const before = http.requests.length;
    const lock = new Database(join(dir, 'journal', 'activity.db'));
    // The target answers only once another connection holds the journal's write lock.
    http.route('/locked-outcome', (_req, res) => {
      lock.exec('BEGIN EXCLUSIVE');
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"done":true}');
    });
    const text = stringify({
      targets: { local: { http: { origin: http.origin, credential: 'api-token', auth: 'bearer', allow_private: true } } },
      tools: { locked: { description: 'A write whose outcome meets a locked journal.', effect: 'write', approval: 'none', revisions: [{ revision: 1, input: { type: 'object', properties: { t: { type: 'string', maxLength: 9 } }, required: ['t'] }, http: { target: 'local', method: 'POST', path: '/locked-outcome', body: { t: '{t}' } } }] } },
    });
    const previous = svc.state.snapshot();
    svc.state.setSnapshot(snapshotOf(parseCatalog(text, 'catalog.yaml'), 'b'.repeat(64), null));
    try {
      const first = await call({ t: 'x', idempotency_key: 'pending-key-1' }, 'locked');
      assert.equal(first.isError, undefined, JSON.stringify(first));
      assert.equal(first.structuredContent?.['outcome_durable'], false, 'the agent is told the outcome is not journaled yet');
      assert.equal(journals.activity.findByKey('locked', 'pending-key-1')?.state, 'in_progress');
      const again = await call({ t: 'x', idempotency_key: 'pending-key-1' }, 'locked');
      assert.equal(again.structuredContent?.['replayed'], true, JSON.stringify(again));
      assert.equal(again.structuredContent?.['outcome_durable'], false);
      const status = await call({ idempotency_key: 'pending-key-1' }, 'postern_call_status');
      assert.equal(status.structuredContent?.['status'], 'success');
      assert.equal(status.structuredContent?.['outcome_durable'], false);
      assert.equal(http.requests.length, before + 1, 'one effect');
      const written = once(logs, 'line');
      lock.exec('ROLLBACK');
      const [line] = (await written) as [string];
      assert.match(line, /journaled on retry/);
      assert.equal(svc.pendingOutcomes.size, 0);
      assert.equal(journals.activity.findByKey('locked', 'pending-key-1')?.state, 'completed');
      const later = await call({ t: 'x', idempotency_key: 'pending-key-1' }, 'locked');
      assert.equal(later.structuredContent?.['replayed'], true);
      assert.equal(later.structuredContent?.['outcome_durable'], undefined, 'durable now');
      assert.equal(http.requests.length, before + 1, 'still one effect');
    } finally {
      if (lock.inTransaction) lock.exec('ROLLBACK');
      lock.close();
      svc.state.setSnapshot(previous);
    }
  });

  it('a locked vault refuses calls and voids pending approvals', async () => {
    svc.state.onLock(() => svc.queue.voidAll('locked'));
    svc.state.lock('test');
    const r = await call({ t: 'after lock', idempotency_key: 'locked-key-1' });
    assert.equal(r.structuredContent?.['error_code'], 'VAULT_LOCKED');
    assert.equal(r.structuredContent?.['side_effect_started'], false);
  });
});
