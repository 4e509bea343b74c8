/**
 * The daemon core in a worker thread (src/daemon/lifecycle/worker.ts, for `postern
 * up`): it unlocks with the passphrase it is handed, serves an in-process
 * operator port, lets a real MCP client's call wait for approval, is decided
 * over that port, and stops cleanly (the vault locked, the socket gone).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { startDaemonWorker } from '../../src/daemon/lifecycle/worker.js';
import { TEST_KDF_PROFILE } from '../../src/vault/index.js';
import { createOperatorClient } from '../../src/protocol/operator/operator-client.js';
import { connectPortTransport } from '../../src/protocol/operator/port-transport.js';
import type { OperatorEventEnvelope } from '../../src/protocol/operator/index.js';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { PASSPHRASE, type Installation } from '../helpers/daemon.js';

describe('daemon in a worker thread', () => {
  let inst: Installation;
  let http: FakeHttpServer;

  before(async () => {
    ({ http, inst } = await httpFixture({ token: canary('tok'), config: { approval_timeout_seconds: 60 }, tools: { ping: { description: 'Ping.', effect: 'write', approval: 'per-call', revisions: [{ revision: 1, input: { type: 'object', properties: {} }, http: { target: 'local', method: 'POST', path: '/echo' } }] } }, start: false }));
  });
  after(async () => {
    await inst.cleanup();
    await http.close();
  });

  it('serves the private port, a call waits for approval and is approved over it, then stops cleanly', async () => {
    const logs: string[] = [];
    const d = await startDaemonWorker(inst.sb.home, Buffer.from(PASSPHRASE), { log: (l) => logs.push(l), kdf: TEST_KDF_PROFILE });
    assert.ok(logs.some((l) => l.startsWith('daemon ready')));
    const client = createOperatorClient(await connectPortTransport(d.attach(), { role: 'operator' }));
    const status = await client.request('status', {});
    assert.equal(status.locked, false);
    assert.equal(status.catalog.tools, 1);
    const seen: OperatorEventEnvelope[] = [];
    let wake: () => void = () => undefined;
    await client.subscribe((e) => {
      seen.push(e);
      wake();
    });
    const added = new Promise<OperatorEventEnvelope>((resolve) => {
      wake = () => {
        const e = seen.find((x) => x.event.type === 'approval.added');
        if (e !== undefined) resolve(e);
      };
    });
    const agent = await inst.client({ name: 'worker-agent' });
    const call = agent.callTool({ name: 'ping', arguments: { idempotency_key: `k-${randomBytes(6).toString('hex')}` } });
    const env = await added;
    assert.ok(env.event.type === 'approval.added');
    const d1 = await client.request('approvals.decide', { approval_id: env.event.card.id, verdict: { verdict: 'approve', scope: 'once', call_digest: env.event.card.call_digest } });
    assert.equal(d1.kind, 'approved');
    assert.equal(((await call) as { isError?: boolean }).isError, undefined);
    await agent.close();
    await d.stop('test over');
    assert.equal(await d.exited, null);
    assert.ok(!existsSync(join(inst.sb.home, 'run', 'operator.sock')), 'the operator socket is removed');
    const why = await client.closed;
    assert.ok(why === null || why.code === 'DAEMON_UNAVAILABLE');
  });

  it('a wrong passphrase is refused with the vault\'s own error, and no worker is left', async () => {
    await assert.rejects(startDaemonWorker(inst.sb.home, Buffer.from('not the passphrase'), { log: () => undefined, kdf: TEST_KDF_PROFILE }), (e: Error & { code?: string }) => e.code === 'VAULT_AUTH');
  });
});
