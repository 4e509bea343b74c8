/**
 * The daemon in this process, reached by the official SDK clients (2.x and
 * 1.x) over the linked in-memory transport pair (src/daemon/mcp/in-memory-agent.ts):
 * no process, no socket, the whole call pipeline. The echoing target hands
 * back the bearer token it was sent; the agent sees the marker, never the
 * canary. A keyed write retried with the same key and arguments gets the
 * stored result and the target's request log shows one request; a change of
 * arguments under the same key is refused before anything is sent. Every call
 * is in the Activity journal under the session the pair opened.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { Client } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { parseCatalog } from '../../../src/contracts/index.js';
import { createVault, openVault, withVaultWriter } from '../../../src/vault/index.js';
import { openJournals, type Journals } from '../../../src/journal/index.js';
import { parseConfig } from '../../../src/daemon/services/config.js';
import type { Services, SessionInfo } from '../../../src/daemon/pipeline/context.js';
import { inProcessServices } from '../../../src/daemon/in-process.js';
import { connectInMemory, type InMemoryAgent } from '../../../src/daemon/mcp/in-memory-agent.js';
import { startFakeHttp, type FakeHttpServer } from '../../helpers/fake-http.js';
import { CHEAP } from '../vault/helpers.js';
import { ManualClock } from '../../helpers/clock.js';

type Json = Record<string, unknown>;
type ToolResult = { isError?: boolean; content: { type: string; text?: string }[]; structuredContent?: Json };
const CANARY = 'inmem-canary-token-5f1e0c9a';
const obj = (props: Json, required: string[] = []) => ({ type: 'object', properties: props, required });

describe('the daemon in process, over an in-memory agent transport', () => {
  let dir: string;
  let http: FakeHttpServer;
  let journals: Journals;
  let svc: Services;
  const started: SessionInfo[] = [];
  const ended: SessionInfo[] = [];
  const agents: InMemoryAgent[] = [];
  const clock = new ManualClock('2031-07-15T12:00:00Z');

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'postern-inmem-'));
    http = await startFakeHttp();
    const pass = Buffer.from('inmem-passphrase');
    await createVault(join(dir, 'vault.pvlt'), pass, CHEAP);
    await withVaultWriter(join(dir, 'vault.pvlt'), pass, (v) => v.add({ name: 'api-token', kind: 'http_bearer', fields: {}, secret: { token: Buffer.from(CANARY) } }), CHEAP);
    const vault = await openVault(join(dir, 'vault.pvlt'), pass, CHEAP);
    const text = stringify({
      targets: { local: { http: { origin: http.origin, credential: 'api-token', auth: 'bearer', allow_private: true } } },
      tools: {
        echo: { description: 'Echo the request.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: obj({}), http: { target: 'local', method: 'GET', path: '/echo' } }] },
        note: { description: 'Write a note.', effect: 'write', approval: 'none', revisions: [{ revision: 1, input: obj({ t: { type: 'string', maxLength: 50 } }, ['t']), http: { target: 'local', method: 'POST', path: '/echo', body: { t: '{t}' } } }] },
      },
    });
    journals = openJournals(join(dir, 'journal'), { clock });
    svc = inProcessServices({ vault, catalog: parseCatalog(text, 'catalog.yaml'), digest: 'f'.repeat(64), journals, config: parseConfig('approval_timeout_seconds: 60', 'config.yaml'), clock }, { http: null });
  });
  after(async () => {
    for (const a of agents) await a.close();
    journals.close();
    await http.close();
    await rm(dir, { recursive: true, force: true });
  });

  const open = (): InMemoryAgent => {
    const a = connectInMemory(svc, { sessionStarted: (s) => started.push(s), sessionEnded: (s) => ended.push(s) });
    agents.push(a);
    return a;
  };

  it('SDK 2.x: lists the tools, reads through the pipeline, and never sees the credential the target echoed', async () => {
    const agent = open();
    const client = new Client({ name: 'inmem-v2', version: '2.0.0' });
    await client.connect(agent.client);
    const { tools } = await client.listTools();
    assert.ok(['echo', 'note', 'postern_call_status'].every((n) => tools.some((t) => t.name === n)), JSON.stringify(tools.map((t) => t.name)));
    const before = http.requests.length;
    const r = (await client.callTool({ name: 'echo', arguments: {} })) as ToolResult;
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(http.requests.length, before + 1);
    const sent = http.requests.at(-1)?.headers.find(([k]) => k.toLowerCase() === 'authorization')?.[1];
    assert.equal(sent, `Bearer ${CANARY}`, 'the target got the credential');
    const seen = JSON.stringify(r);
    assert.ok(!seen.includes(CANARY), seen);
    assert.match(seen, /\[REDACTED:api-token\]/);
    assert.equal(started.at(-1)?.id, agent.session.id);
    assert.equal(agent.session.clientName, 'inmem-v2');
    await client.close();
  });

  it('SDK 1.x: a keyed write retried with the same key is the stored result, one request; other arguments under that key are refused, none sent', async () => {
    const agent = open();
    const client = new ClientV1({ name: 'inmem-v1', version: '1.0.0' });
    await client.connect(agent.client);
    const call = async (t: string): Promise<ToolResult> => (await client.callTool({ name: 'note', arguments: { t, idempotency_key: 'inmem-key-0001' } })) as ToolResult;
    const before = http.requests.length;
    const first = await call('hello');
    assert.equal(first.isError, undefined, JSON.stringify(first));
    const again = await call('hello');
    assert.equal(again.isError, undefined, JSON.stringify(again));
    assert.deepEqual(again.content[0], first.content[0]);
    assert.match(again.content.at(-1)?.text ?? '', /replayed result of call .*nothing was run again/);
    assert.equal(http.requests.length, before + 1, 'the retry never reached the target');
    const other = await call('changed');
    assert.equal(other.isError, true);
    assert.equal(other.structuredContent?.['side_effect_started'], false);
    assert.equal(http.requests.length, before + 1);
    const rows = journals.activity.listCalls({ session_id: agent.session.id });
    assert.ok(rows.length >= 2, JSON.stringify(rows.map((row) => row.status)));
    assert.ok(!JSON.stringify(rows).includes(CANARY));
    await agent.close();
    assert.ok(ended.some((s) => s.id === agent.session.id), 'closing the pair ends the session');
  });
});
