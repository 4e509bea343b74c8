/**
 * The story's checks can fail: against a stand-in agent and operator that
 * behave as Postern does, the story passes; each deviation the demo must
 * catch — a replay that sends a request, a stale call that is not rejected,
 * a rejection that still reaches the target, a missing list_changed, a
 * leaked credential in a result — fails it with DEMO_FAILED naming the step.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentResult, DemoAgent, ListedTool } from '../../../src/demo/agent.js';
import type { DemoOperator, ApprovalRequest, DecidedApproval } from '../../../src/demo/operator.js';
import { RequestLog } from '../../../src/demo/request-log.js';
import { runStory } from '../../../src/demo/story.js';
import type { DemoWorld, GateChange } from '../../../src/demo/world.js';
import type { ApprovalCard } from '../../../src/protocol/approvals.js';

type Deviation = 'none' | 'replay_sends' | 'stale_runs' | 'reject_reaches_target' | 'no_list_changed' | 'echo_not_redacted';

function standIns(deviation: Deviation, log: RequestLog) {
  let revision = 1;
  let told: (() => void) | null = null;
  const done = new Map<string, AgentResult>();
  const pendingCards: ApprovalCard[] = [];
  const ok = (structured: Record<string, unknown>): AgentResult => ({ isError: false, structured, text: '' });
  const card = (tool: string, over: Partial<ApprovalCard>): ApprovalCard => ({
    id: `a-${tool}`, session: { id: 's', client_name: null, client_version: null, pid: null }, tool, effect: 'write', annotations: null, revision, revision_seen: 1,
    scope_allowed: 'per-call', reasons: [], widening: [], credential: 'tracker-token', raw_arguments: {}, normalized_arguments: {}, adapter: null,
    idempotency_key: null, call_digest: 'd', limits: [], requested_at: '', expires_at: '',
    target: { kind: 'http', method: 'POST', origin: 'http://127.0.0.1:1', host: '127.0.0.1', port: 1, path: '/tickets', query: [], headers: [], body: null },
    ...over,
  });
  const agent: DemoAgent = {
    received: [],
    listTools: () => Promise.resolve<ListedTool[]>(['list_tickets', 'create_ticket', 'deploy_preview'].map((name) => ({ name, revision: name === 'list_tickets' ? 1 : revision, required: ['x'] }))),
    nextListChanged: () => new Promise<void>((resolve) => (told = resolve)),
    close: () => Promise.resolve(),
    call(name, args, planned) {
      const key = typeof args['idempotency_key'] === 'string' ? args['idempotency_key'] : '';
      if (name === 'list_tickets') {
        log.append({ target: 'http', method: 'GET', path: '/tickets', auth: 'ok', idempotencyKey: null, body: '' });
        return Promise.resolve(ok({ status: 200, body: { tickets: [], debug: { authorization: deviation === 'echo_not_redacted' ? 'Bearer x' : '[REDACTED:tracker-token]' } } }));
      }
      if (name === 'create_ticket') {
        const stale = planned === 1 && revision === 2;
        if (stale && deviation !== 'stale_runs') {
          if (deviation === 'reject_reaches_target') log.append({ target: 'http', method: 'POST', path: '/tickets', auth: 'ok', idempotencyKey: key, body: '' });
          return Promise.resolve({ isError: true, structured: { error_code: 'CONTRACT_STALE', side_effect_started: false, current_revision: 2 }, text: '' });
        }
        const prior = done.get(key);
        if (prior !== undefined) {
          if (deviation === 'replay_sends') log.append({ target: 'http', method: 'POST', path: '/tickets', auth: 'ok', idempotencyKey: key, body: '' });
          return Promise.resolve(ok({ ...prior.structured, replayed: true }));
        }
        pendingCards.push(card('create_ticket', {}));
        log.append({ target: 'http', method: 'POST', path: '/tickets', auth: 'ok', idempotencyKey: key, body: '' });
        const r = ok({ status: 201, body: { ticket: { id: 'T-3' } } });
        done.set(key, r);
        return Promise.resolve(r);
      }
      const adapted = revision === 2;
      const ssh = { kind: 'ssh' as const, host: '127.0.0.1', port: 2, user: 'deploy', argv: [], command: '', host_key: null };
      pendingCards.push(card('deploy_preview', adapted
        ? { target: ssh, revision: 2, adapter: 'r1→r2: defaulted region', normalized_arguments: { region: 'us-east-preview' }, widening: ['new command'] }
        : { target: ssh, scope_allowed: 'session' }));
      log.append({ target: 'ssh', user: 'deploy', argv: ['/srv/deploy.sh', `--branch=${String(args['branch'])}`, 'us-east-preview'], auth: 'ok' });
      return Promise.resolve(ok({ exit_code: 0, stdout: '', result_revision: revision }));
    },
  };
  const operator: DemoOperator = {
    decide(request: ApprovalRequest): Promise<DecidedApproval> {
      const c = pendingCards.shift();
      assert.ok(c !== undefined && c.tool === request.tool);
      const scope = request.suggest === 'session' && c.scope_allowed === 'session' ? 'session' : 'once';
      return Promise.resolve({ card: c, verdict: { verdict: 'approve', scope, call_digest: c.call_digest } });
    },
    undecided: () => [...pendingCards],
    close: () => undefined,
  };
  const changes: GateChange[] = [
    { tool: 'deploy_preview', from: 1, to: 2, class: 'bounded_migration', policy: 'adapt' },
    { tool: 'create_ticket', from: 1, to: 2, class: 'breaking', policy: 'reject' },
  ];
  const world = {
    log,
    accept: () => {
      revision = 2;
      if (deviation !== 'no_list_changed') setImmediate(() => told?.());
      return Promise.resolve(changes);
    },
  } as unknown as DemoWorld;
  return { world, agent, operator };
}

async function storyWith(deviation: Deviation): Promise<unknown> {
  const dir = mkdtempSync(join(tmpdir(), 'postern-story-'));
  try {
    const parts = standIns(deviation, new RequestLog(join(dir, 'requests.jsonl')));
    return await runStory({ ...parts, narrate: () => undefined, listChangedWaitMs: 50 });
  } catch (e) {
    return e;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the story checks what it claims', () => {
  it('passes when everything behaves', async () => {
    const r = await storyWith('none');
    assert.ok(Array.isArray(r), String(r));
    assert.equal(r.length, 8);
  });
  const cases: [Deviation, RegExp][] = [
    ['echo_not_redacted', /^step 1 \(read\): the echoed credential was not redacted/],
    ['replay_sends', /^step 3 \(replay\)/],
    ['no_list_changed', /^step 5 \(drift\): the agent was not told notifications\/tools\/list_changed/],
    ['stale_runs', /^step 7 \(rejected\): expected CONTRACT_STALE/],
    ['reject_reaches_target', /^step 7 \(rejected\): the tracker received a request for a rejected call/],
  ];
  for (const [deviation, message] of cases) {
    it(`fails with DEMO_FAILED when ${deviation.replaceAll('_', ' ')}`, async () => {
      const e = (await storyWith(deviation)) as { code?: string; message?: string };
      assert.equal(e.code, 'DEMO_FAILED');
      assert.match(e.message ?? '', message);
    });
  }
});
