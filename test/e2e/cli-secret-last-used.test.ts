/**
 * `postern secret list` fills LAST USED from the Activity journal (issue 25
 * §7): after a call through a real MCP client, the credential its target
 * names shows the time of that call's intent, with the daemon running and
 * after it stopped; a credential no call used stays unknown. No vault write
 * per call is needed for it. Canary secrets are never printed.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@modelcontextprotocol/client';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture, TOOLS } from '../helpers/fixture.js';

const TOKEN = canary('used');
const SPARE = canary('spare');

type Meta = { name: string; last_used_at: string | null };

describe('secret list: LAST USED from the journal', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agent: Client;

  before(async () => {
    ({ http, inst } = await httpFixture({ token: TOKEN, secrets: [{ name: 'spare-token', kind: 'http_bearer', value: SPARE }], tools: TOOLS.getJson }));
    agent = await inst.client();
  });

  after(async () => {
    inst.sb.assertNeverPrinted(TOKEN, 'the used token');
    inst.sb.assertNeverPrinted(SPARE, 'the spare token');
    await inst.cleanup();
    await http.close();
  });

  const list = async (): Promise<Map<string, string | null>> => {
    const r = await inst.sb.run(['secret', 'list', '--json', '--passphrase-file', inst.passFile]);
    assert.equal(r.code, 0, r.stderr);
    return new Map((JSON.parse(r.stdout) as Meta[]).map((m) => [m.name, m.last_used_at]));
  };

  it('shows the time of the last call that used the credential, while the daemon runs and after it stopped', async () => {
    assert.equal((await list()).get('api-token'), null, 'no call yet');
    const r = await agent.callTool({ name: 'get_json', arguments: {} });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    const activity = await inst.sb.run(['audit', 'activity', '--json']);
    assert.equal(activity.code, 0, activity.stderr);
    const calls = (JSON.parse(activity.stdout) as { call: { tool: string; at: string }; journaled_at: string }[]).filter((c) => c.call.tool === 'get_json');
    assert.equal(calls.length, 1, activity.stdout);

    const running = await list();
    assert.equal(running.get('api-token'), calls[0]!.journaled_at, 'the time the call was journaled to run');
    assert.equal(running.get('spare-token'), null, 'no call used the spare credential');
    await agent.close();
    assert.equal(await inst.stopDaemon(), 0);
    const stopped = await list();
    assert.equal(stopped.get('api-token'), running.get('api-token'), 'kept once the daemon is gone');
    const table = await inst.sb.run(['secret', 'list', '--passphrase-file', inst.passFile]);
    assert.match(table.stdout, new RegExp(`^api-token\\s+http_bearer\\s+\\S+\\s+-\\s+${String(stopped.get('api-token')).replace(/[.]/g, '\\.')}`, 'm'));
  });
});
