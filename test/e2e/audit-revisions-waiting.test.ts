/**
 * `postern audit revisions --waiting` (seed 001 D1, "inventaria el trabajo
 * activo … aprobación pendiente"): the calls waiting for approval now, per
 * planned revision, asked of the running daemon's queue — a waiting call has
 * no journal entry until it is decided. The real daemon, the real agent over
 * `postern mcp`, the real operator socket.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/client';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { watchEvents, type EventWatch } from '../helpers/operator-events.js';

type Usage = { tool: string; revision: number | null; counts: Record<string, number>; awaiting_approval?: number };

describe('postern audit revisions --waiting', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agent: Client;
  let events: EventWatch;

  before(async () => {
    const input = { type: 'object', properties: { title: { type: 'string', maxLength: 200 } }, required: ['title'] };
    ({ http, inst } = await httpFixture({ token: canary('tok'), config: { approval_timeout_seconds: 60 }, tools: {
        create_issue: {
          description: 'Create an issue.',
          effect: 'write',
          approval: 'per-call',
          revisions: [{ revision: 1, input, http: { target: 'local', method: 'POST', path: '/echo', body: { title: '{title}' } } }],
        },
      } }));
    agent = await inst.client({ name: 'waiting-agent' });
    events = await watchEvents(() => inst.operator());
  });
  after(async () => {
    events.close();
    await inst.cleanup();
    await http.close();
  });

  const revisions = async (extra: string[] = []): Promise<{ code: number | null; rows: Usage[]; stdout: string; stderr: string }> => {
    const r = await inst.sb.run(['audit', 'revisions', '--json', ...extra]);
    return { code: r.code, rows: r.code === 0 ? (JSON.parse(r.stdout) as { revisions: Usage[] }).revisions : [], stdout: r.stdout, stderr: r.stderr };
  };
  const row = (rows: Usage[]): Usage | undefined => rows.find((x) => x.tool === 'create_issue' && x.revision === 1);
  const waitingFlags = (): string[] => ['--waiting', '--passphrase-file', inst.passFile];

  it('counts a call waiting for its approval under its planned revision, then nothing once it is decided', async () => {
    const call = agent.callTool({ name: 'create_issue', arguments: { title: 'first', idempotency_key: `k-${randomBytes(6).toString('hex')}` } });
    const { card } = await events.next('approval.added');
    const waiting = await revisions(waitingFlags());
    assert.equal(waiting.code, 0, waiting.stderr);
    assert.equal(row(waiting.rows)?.awaiting_approval, 1);
    assert.equal(row(waiting.rows)?.counts['current'], 0, 'not journaled yet: it has not run');
    const table = await inst.sb.run(['audit', 'revisions', ...waitingFlags()]);
    assert.match(table.stdout, /^TOOL\s+REV\s+STATUS.*\bLIVE\s+WAITING$/m);
    assert.match(table.stdout, /^create_issue\s+1\s+current\s.*\s1$/m);
    const plain = await revisions();
    assert.equal(plain.code, 0, plain.stderr);
    assert.ok(!('awaiting_approval' in (row(plain.rows) ?? {})), 'without --waiting the queue is not asked');

    const op = await inst.operator();
    await op.request('approvals.decide', { approval_id: card.id, verdict: { verdict: 'approve', scope: 'once', call_digest: card.call_digest } });
    op.close();
    assert.equal(((await call) as { isError?: boolean }).isError, undefined);
    const after = await revisions(waitingFlags());
    assert.deepEqual([row(after.rows)?.awaiting_approval, row(after.rows)?.counts['current']], [0, 1]);
  });

  it('--waiting with the daemon stopped says so, with its code', async () => {
    await inst.stopDaemon();
    const r = await revisions(waitingFlags());
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /DAEMON_UNAVAILABLE/);
    assert.equal(r.stdout, '');
    assert.equal((await revisions()).code, 0, 'the journal alone still answers');
  });
});
