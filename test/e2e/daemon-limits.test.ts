/**
 * Limits end to end: the official MCP client over real stdio (`postern mcp`)
 * → the real daemon → a loopback HTTP service with an append-only request
 * log. A run's budget (`per_run`) is spent, the daemon is stopped and started
 * again on the same home, and the budget is still spent — the counts are
 * rebuilt from the journal — while another run id has its own.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/client';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';

const TOKEN = canary('lim');
const key = (): string => `key-${randomBytes(8).toString('hex')}`;
type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };

describe('daemon: limits survive a restart', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agent: Client;

  before(async () => {
    ({ http, inst } = await httpFixture({
      token: TOKEN,
      tools: {
        budgeted: {
          description: 'A write with a budget per run.',
          effect: 'write',
          approval: 'none',
          limits: { per_run: 2 },
          revisions: [{ revision: 1, input: { type: 'object', properties: { t: { type: 'string', maxLength: 20 } }, required: ['t'] }, http: { target: 'local', method: 'POST', path: '/echo', body: { t: '{t}' } } }],
        },
      },
    }));
    agent = await inst.client();
  });
  after(async () => {
    inst.sb.assertNeverPrinted(TOKEN, 'the token');
    await inst.cleanup();
    await http.close();
  });

  const call = async (c: Client, run: string): Promise<Result> =>
    (await c.callTool({ name: 'budgeted', arguments: { t: 'x', idempotency_key: key() }, _meta: { 'dev.postern/run_id': run } })) as Result;

  it('a spent run budget stays spent after a restart; another run id has its own; nothing is sent when refused', async () => {
    assert.equal((await call(agent, 'run-e2e-1')).isError, undefined);
    assert.equal((await call(agent, 'run-e2e-1')).isError, undefined);
    const sent = http.requests.length;
    const over = await call(agent, 'run-e2e-1');
    assert.equal(over.isError, true);
    assert.equal(over.structuredContent?.['error_code'], 'RATE_LIMITED');
    assert.equal(over.structuredContent?.['limit'], 'per_run');
    assert.equal(over.structuredContent?.['retry_after'], null);
    assert.equal(over.structuredContent?.['side_effect_started'], false);

    await inst.stopDaemon();
    await inst.startDaemon();
    const fresh = await inst.client();
    const after = await call(fresh, 'run-e2e-1');
    assert.equal(after.structuredContent?.['error_code'], 'RATE_LIMITED', JSON.stringify(after));
    assert.equal(http.requests.length, sent, 'nothing was sent for a refused call');
    assert.equal((await call(fresh, 'run-e2e-2')).isError, undefined, 'another run has its own budget');
    assert.equal(http.requests.length, sent + 1);
  });
});
