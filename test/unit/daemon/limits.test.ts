// @subject time: per-minute windows (run again a year ahead by .ci/run)
/**
 * Limits through the real pipeline (real vault, journals and loopback HTTP
 * target, the pipeline's own approval queue): a call over a limit never
 * reaches the queue or the target; only executed calls cost; RATE_LIMITED
 * says which limit and when to retry; per-minute windows move with the
 * injected clock; at most N in flight under 16 concurrent sessions (counted
 * in the target's own log); counts per run id survive a restart because they
 * are rebuilt from the reopened journal.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventEmitter, once } from 'node:events';
import { stringify } from 'yaml';
import { parseCatalog, type Catalog } from '../../../src/contracts/index.js';
import { createVault, openVault } from '../../../src/vault/index.js';
import { withVaultWriter } from '../../../src/vault/index.js';
import { openJournals, type Journals } from '../../../src/journal/index.js';
import { parseConfig } from '../../../src/daemon/services/config.js';
import { handleCall } from '../../../src/daemon/pipeline/call.js';
import type { Services, SessionInfo } from '../../../src/daemon/pipeline/context.js';
import { inProcessServices } from '../../../src/daemon/in-process.js';
import { CallLimits } from '../../../src/daemon/services/limits.js';
import { startFakeHttp, type FakeHttpServer } from '../../helpers/fake-http.js';
import { CHEAP } from '../vault/helpers.js';
import { ManualClock } from '../../helpers/clock.js';
import type { ApprovalCard } from '../../../src/protocol/approvals.js';
import { describeUsage } from '../../../src/protocol/limit-usage.js';

type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };
const TOKEN = 'limits-canary-token-0123456789abc';

describe('limits in the call pipeline', () => {
  let dir: string;
  let http: FakeHttpServer;
  let journals: Journals;
  let vault: Awaited<ReturnType<typeof openVault>>;
  let catalog: Catalog;
  let svc: Services;
  const clock = new ManualClock('2031-07-15T12:00:00Z');
  /** Requests held open by /hold, and how many were open at most. */
  const held: (() => void)[] = [];
  const holds = new EventEmitter();
  let open = 0;
  let maxOpen = 0;

  const services = (): Services => inProcessServices({ vault, catalog, digest: 'b'.repeat(64), journals, config: parseConfig('approval_timeout_seconds: 600', 'config.yaml'), clock }, { http: null });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'postern-limits-'));
    http = await startFakeHttp();
    http.route('/hold', (_req, res) => {
      open += 1;
      maxOpen = Math.max(maxOpen, open);
      held.push(() => {
        open -= 1;
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
      holds.emit('held');
    });
    const pass = Buffer.from('limits-passphrase');
    await createVault(join(dir, 'vault.pvlt'), pass, CHEAP);
    await withVaultWriter(join(dir, 'vault.pvlt'), pass, (v) => v.add({ name: 'api-token', kind: 'http_bearer', fields: {}, secret: { token: Buffer.from(TOKEN) } }), CHEAP);
    vault = await openVault(join(dir, 'vault.pvlt'), pass, CHEAP);
    const input = { type: 'object', properties: { t: { type: 'string', maxLength: 50 } }, required: ['t'] };
    const rev = (path: string) => [{ revision: 1, input, http: { target: 'local', method: 'POST', path, body: { t: '{t}' } } }];
    catalog = parseCatalog(stringify({
      targets: { local: { http: { origin: http.origin, credential: 'api-token', auth: 'bearer', allow_private: true, limits: { per_session: 1000 } } } },
      tools: {
        minute: { description: 'Per minute.', effect: 'write', approval: 'none', limits: { per_minute: 2 }, revisions: rev('/echo') },
        budget: { description: 'Per session.', effect: 'write', approval: 'none', limits: { per_session: 2 }, revisions: rev('/echo') },
        asked: { description: 'Asked.', effect: 'write', approval: 'per-call', limits: { per_session: 1 }, revisions: rev('/echo') },
        runs: { description: 'Per run.', effect: 'write', approval: 'none', limits: { per_run: 2 }, revisions: rev('/echo') },
        slots: { description: 'In flight.', effect: 'write', approval: 'none', limits: { in_flight: 3 }, revisions: rev('/hold') },
        plain: { description: 'Target default.', effect: 'write', approval: 'none', revisions: rev('/echo') },
      },
    }), 'catalog.yaml');
    journals = openJournals(join(dir, 'journal'), { clock });
    svc = services();
  });
  after(async () => {
    for (const release of held.splice(0)) release();
    journals.close();
    await http.close();
    await rm(dir, { recursive: true, force: true });
  });

  const session = (id: string, runId: string | null = null): SessionInfo => ({ id, clientName: 'unit', clientVersion: '1', protocolVersion: '2025-11-25', pid: null, runId, agentRelease: null, seen: new Map(), listedToolset: null });
  let n = 0;
  const call = async (name: string, who: SessionInfo, key = `limits-key-${++n}`, s: Services = svc): Promise<Result> =>
    (await handleCall(s, who, { name, arguments: { t: 'x', idempotency_key: key }, meta: {}, signal: new AbortController().signal, progress: () => undefined })) as Result;
  const code = (r: Result): unknown => r.structuredContent?.['error_code'];

  it('per minute: the third call in a minute is RATE_LIMITED with retry_after, nothing sent; the window moves with the clock', async () => {
    const who = session('s-minute');
    const sent = http.requests.length;
    assert.equal((await call('minute', who)).isError, undefined);
    clock.advance(20_000);
    assert.equal((await call('minute', who)).isError, undefined);
    const over = await call('minute', who);
    assert.equal(code(over), 'RATE_LIMITED');
    assert.equal(over.structuredContent?.['limit'], 'per_minute');
    assert.equal(over.structuredContent?.['retry_after'], 40, 'the first call leaves the window in 40 s');
    assert.equal(over.structuredContent?.['side_effect_started'], false);
    assert.equal(over.structuredContent?.['required_action'], 'wait_retry_after_or_ask_operator');
    assert.equal(http.requests.length, sent + 2, 'the refused call sent nothing');
    clock.advance(40_000);
    assert.equal((await call('minute', who)).isError, undefined, 'one call left the window');
    assert.equal(code(await call('minute', session('s-minute-2'))), 'RATE_LIMITED', 'per minute spans sessions');
  });

  it('per session: spent is spent (retry_after null); another session has its own budget; a replay costs nothing', async () => {
    const who = session('s-budget');
    assert.equal((await call('budget', who, 'budget-1')).isError, undefined);
    const replay = await call('budget', who, 'budget-1');
    assert.equal(replay.structuredContent?.['replayed'], true);
    assert.equal((await call('budget', who, 'budget-2')).isError, undefined, 'the replay did not count');
    const over = await call('budget', who);
    assert.equal(code(over), 'RATE_LIMITED');
    assert.equal(over.structuredContent?.['limit'], 'per_session');
    assert.equal(over.structuredContent?.['retry_after'], null);
    assert.match(String(over.structuredContent?.['message']), /2 of 2 this session/);
    assert.equal((await call('budget', who, 'budget-1')).structuredContent?.['replayed'], true, 'a replay is served even over the limit');
    assert.equal((await call('budget', session('s-budget-2'))).isError, undefined);
    const c = journals.activity.listCalls({ tool: 'budget' }).find((v) => v.rejection?.error_code === 'RATE_LIMITED');
    assert.ok(c, 'the refusal is journaled');
    assert.equal(c.call.side_effect_started, false);
    const ran = journals.activity.listCalls({ tool: 'budget' }).filter((v) => v.status === 'success').map((v) => v.call.decision_path.find((p) => p.startsWith('limits:')));
    assert.deepEqual(ran.sort(), ['limits:per_session 0/2', 'limits:per_session 0/2', 'limits:per_session 1/2'], 'audit show reads the usage in the decision path');
  });

  it('a denied call costs nothing; the card shows the usage; a call over the limit never reaches the queue', async () => {
    const who = session('s-asked');
    const cards: ApprovalCard[] = [];
    const stop = svc.queue.subscribe((e) => {
      if (e.type === 'added') cards.push(e.card);
    });
    const nextCard = (): Promise<void> => new Promise((resolve) => {
      const off = svc.queue.subscribe((e) => {
        if (e.type === 'added') {
          off();
          resolve();
        }
      });
    });
    try {
      let queued = nextCard();
      const denied = call('asked', who);
      await queued;
      const first = cards[0];
      assert.ok(first);
      assert.deepEqual(first.limits, [{ limit: 'per_session', used: 0, max: 1 }]);
      assert.equal(describeUsage(first.limits[0]!), '0 of 1 this session');
      svc.queue.decide(first.id, { verdict: 'deny', reason: null }, 'op');
      assert.equal(code(await denied), 'APPROVAL_DENIED');

      queued = nextCard();
      const approved = call('asked', who);
      await queued;
      const second = cards[1];
      assert.ok(second);
      assert.equal(second.limits[0]?.used, 0, 'the denial cost nothing');
      svc.queue.decide(second.id, { verdict: 'approve', scope: 'once' }, 'op');
      assert.equal((await approved).isError, undefined);

      const over = await call('asked', who);
      assert.equal(code(over), 'RATE_LIMITED');
      assert.equal(cards.length, 2, 'no card for a call over the limit');
    } finally {
      stop();
    }
  });

  it('a target default applies to its tools; the tool has no other limit', async () => {
    const who = session('s-plain');
    assert.equal((await call('plain', who)).isError, undefined);
    assert.deepEqual(svc.limits?.usage({ tool: 'plain', limits: { per_session: 1000 }, sessionId: 's-plain', runId: null }), [{ limit: 'per_session', used: 1, max: 1000 }]);
  });

  it('at most 3 in flight under 16 concurrent sessions: the target never sees more than 3 open requests', async () => {
    const sent = http.requests.length;
    const threeHeld = new Promise<void>((resolve) => {
      const onHeld = (): void => {
        if (held.length === 3) {
          holds.off('held', onHeld);
          resolve();
        }
      };
      holds.on('held', onHeld);
    });
    const calls = Array.from({ length: 16 }, (_, i) => call('slots', session(`s-slot-${i}`)));
    await threeHeld;
    // Every call not holding a slot is answered while the three are still open.
    const settled: Result[] = [];
    await new Promise<void>((resolve) => {
      for (const p of calls) {
        void p.then((r) => {
          settled.push(r);
          if (settled.length === 13) resolve();
        });
      }
    });
    assert.equal(held.length, 3, 'the three are still open');
    for (const r of settled) {
      assert.equal(code(r), 'RATE_LIMITED');
      assert.equal(r.structuredContent?.['limit'], 'in_flight');
      assert.equal(r.structuredContent?.['retry_after'], 1);
    }
    for (const release of held.splice(0)) release();
    const results = await Promise.all(calls);
    assert.equal(results.filter((r) => r.isError === undefined).length, 3);
    assert.equal(maxOpen, 3);
    assert.equal(http.requests.length, sent + 3);
    // The slots are free again.
    const again = call('slots', session('s-slot-again'));
    await once(holds, 'held');
    for (const release of held.splice(0)) release();
    assert.equal((await again).isError, undefined);
  });

  it('per run id: counted across sessions, and still counted after a restart (rebuilt from the journal)', async () => {
    assert.equal((await call('runs', session('s-run-a', 'run-42'))).isError, undefined);
    assert.equal((await call('runs', session('s-run-b', 'run-42'))).isError, undefined);
    assert.equal(code(await call('runs', session('s-run-c', 'run-42'))), 'RATE_LIMITED');
    // The daemon restarts: the journal is reopened and the counts are derived from it alone.
    journals.close();
    clock.advance(3_600_000);
    journals = openJournals(join(dir, 'journal'), { clock });
    svc = services();
    const over = await call('runs', session('s-run-d', 'run-42'));
    assert.equal(code(over), 'RATE_LIMITED');
    assert.equal(over.structuredContent?.['limit'], 'per_run');
    assert.equal(over.structuredContent?.['retry_after'], null);
    assert.equal((await call('runs', session('s-run-e', 'run-43'))).isError, undefined, 'another run has its own budget');
    assert.equal((await call('runs', session('s-run-f'))).isError, undefined, 'a call without a run id is not counted per run');
  });

  it('the per-minute window survives a restart too; no secret in any result or journal line', async () => {
    const who = session('s-minute-restart');
    clock.advance(120_000);
    assert.equal((await call('minute', who)).isError, undefined);
    assert.equal((await call('minute', who)).isError, undefined);
    journals.close();
    clock.advance(10_000);
    journals = openJournals(join(dir, 'journal'), { clock });
    svc = services();
    const over = await call('minute', who);
    assert.equal(code(over), 'RATE_LIMITED');
    assert.equal(over.structuredContent?.['retry_after'], 50);
    assert.ok(!JSON.stringify(over).includes(TOKEN));
    let dump = '';
    journals.activity.exportJsonl((line) => (dump += line));
    assert.ok(!dump.includes(TOKEN));
  });
});

describe('CallLimits: charge, end and refund', () => {
  const subject = { tool: 't', limits: { per_minute: 5, per_session: 5, per_run: 5, in_flight: 5 }, sessionId: 's', runId: 'r' };
  const used = (l: CallLimits): number[] => l.usage(subject).map((u) => u.used);
  it('end frees only the in-flight slot; refund undoes the whole charge, once', () => {
    const l = new CallLimits(new ManualClock('2031-07-15T12:00:00Z'));
    const a = l.charge(subject);
    const b = l.charge(subject);
    assert.ok(a.kind === 'charged' && b.kind === 'charged');
    assert.deepEqual(used(l), [2, 2, 2, 2], 'session, run, minute, in flight');
    a.charge.end();
    a.charge.end();
    assert.deepEqual(used(l), [2, 2, 2, 1]);
    b.charge.refund();
    b.charge.refund();
    assert.deepEqual(used(l), [1, 1, 1, 0]);
  });
  it('a journal time in the future counts as now; one older than a minute counts only per session and run', () => {
    const clock = new ManualClock('2031-07-15T12:00:00Z');
    const head = (at: string) => ({ kind: 'intent' as const, at, error_code: null, call: { tool: 't', session_id: 's', run_id: 'r' } as never });
    const l = CallLimits.fromJournal(clock, [head('2031-07-15T12:05:00.000Z'), head('2031-07-15T11:58:00.000Z'), { ...head('2031-07-15T11:59:30.000Z'), kind: 'rejected' as const }]);
    assert.deepEqual(used(l), [2, 2, 1, 0]);
    clock.advance(60_000);
    assert.deepEqual(used(l), [2, 2, 0, 0]);
  });
});
