// @subject time: idle locking (run again a year ahead by .ci/run)
/**
 * The idle lock: after `idle_lock_minutes` without calls or approvals the
 * daemon zeroes the vault, voids grants, journals the lock, and answers every
 * call with VAULT_LOCKED saying what the human must do — without sending
 * anything to the target.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture, TOOLS } from '../helpers/fixture.js';
import { waitFor } from '../helpers/wait.js';
import { openJournals } from '../../src/journal/index.js';

describe('daemon: idle lock', () => {
  let inst: Installation;
  let http: FakeHttpServer;

  before(async () => {
    ({ http, inst } = await httpFixture({ token: canary('tok'), config: { idle_lock_minutes: 0.02 }, tools: TOOLS.getJson }));
  });
  after(async () => {
    await inst.cleanup();
    await http.close();
  });

  it('locks when idle and refuses calls with what to do', async () => {
    const agent = await inst.client();
    await waitFor(() => inst.daemonLog.includes('vault locked (idle)'), () => `the daemon to lock when idle; its log:\n${inst.daemonLog}`, { timeoutMs: 60_000, everyMs: 50 });
    assert.match(inst.daemonLog, /vault locked \(idle\)/);
    const before = http.requests.length;
    const r = (await agent.callTool({ name: 'get_json', arguments: {} })) as { structuredContent?: Record<string, unknown> };
    assert.equal(r.structuredContent?.['error_code'], 'VAULT_LOCKED');
    assert.match(String(r.structuredContent?.['message']), /restart the daemon/);
    assert.equal(http.requests.length, before);
    const j = openJournals(join(inst.sb.home, 'journal'), { readonly: true });
    try {
      assert.ok(j.sessions.events(null).some((e) => e.type === 'lock' && e.data['reason'] === 'idle'));
    } finally {
      j.close();
    }
  });
});
