/**
 * Journal shipping enabled without its connection string (no `ship`
 * credential in the vault, or one of another kind): the daemon starts and
 * serves calls — the local journal is the source of truth — and says why it
 * does not ship wherever shipping is watched: its log, `postern status`, and
 * the operator status the TUI's badge reads. No database is needed.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { install, type Installation } from '../helpers/daemon.js';

describe('journal shipping enabled but not started', () => {
  let inst: Installation;
  before(async () => {
    inst = await install({ secrets: [{ name: 'ship', kind: 'http_bearer', value: 'not-a-connection-string-0123' }], config: { ship: { enabled: true, home_name: 'laptop' } } });
    await inst.acceptCatalog({ version: 1, tools: {} });
    await inst.startDaemon();
  });
  after(() => inst.cleanup());

  it('a credential of another kind: the daemon runs, and its log, postern status and the operator status say why nothing ships', async () => {
    assert.match(inst.daemonLog, /journal shipping is enabled but not started: credential ship is of kind http_bearer, not postgres_url/);
    const st = await inst.sb.run(['status']);
    assert.equal(st.code, 0, st.stderr);
    assert.match(st.stdout, /shipping: stopped/);
    const op = await inst.operator();
    try {
      assert.match(String((await op.request('status', {})).ship_problem), /^SHIP_UNAVAILABLE: credential ship is of kind http_bearer, not postgres_url/);
    } finally {
      op.close();
    }
    assert.ok(!`${inst.daemonLog}${st.stdout}${st.stderr}`.includes('not-a-connection-string-0123'));
  });
});
