/**
 * The agent socket's reading of the shim hello, over a real Unix socket with
 * raw JSON-RPC lines: a hello split across writes is still read whole; the
 * session starts from the listing it declares (the call is decided by the
 * declared revision, and `tools/list_changed` is sent first when the tools
 * differ); an invalid declaration is dropped whole (the plan is then unknown,
 * never assumed current); no hello at all is the same.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { parseCatalog } from '../../../src/contracts/index.js';
import { createVault, openVault, withVaultWriter } from '../../../src/vault/index.js';
import { openJournals, type Journals } from '../../../src/journal/index.js';
import { parseConfig } from '../../../src/daemon/services/config.js';
import type { Services, SessionInfo } from '../../../src/daemon/pipeline/context.js';
import { inProcessServices } from '../../../src/daemon/in-process.js';
import { startAgentSocket, type AgentEndpoint } from '../../../src/daemon/mcp/agent-socket.js';
import { startFakeHttp, type FakeHttpServer } from '../../helpers/fake-http.js';
import { CHEAP } from '../vault/helpers.js';
import { ManualClock } from '../../helpers/clock.js';
import { lineSplitter } from '../../../src/protocol/ndjson.js';

type Json = Record<string, unknown>;
const obj = (props: Json, required: string[]) => ({ type: 'object', properties: props, required });

describe('agent socket: the shim hello', () => {
  let dir: string;
  let http: FakeHttpServer;
  let journals: Journals;
  let agent: AgentEndpoint;
  const sessions: SessionInfo[] = [];
  const clock = new ManualClock('2031-07-15T12:00:00Z');
  let n = 0;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'postern-hello-'));
    http = await startFakeHttp();
    const pass = Buffer.from('hello-passphrase');
    await createVault(join(dir, 'vault.pvlt'), pass, CHEAP);
    await withVaultWriter(join(dir, 'vault.pvlt'), pass, (v) => v.add({ name: 'api-token', kind: 'http_bearer', fields: {}, secret: { token: Buffer.from('hello-canary-token-0123') } }), CHEAP);
    const vault = await openVault(join(dir, 'vault.pvlt'), pass, CHEAP);
    const n1 = { revision: 1, input: obj({ t: { type: 'string', maxLength: 50 } }, ['t']), http: { target: 'local', method: 'POST', path: '/echo', body: { t: '{t}' } } };
    const n2 = { ...n1, revision: 2, http: { ...n1.http, body: { t: '{t}', v: 2 } }, previous: 'reject' };
    const text = stringify({
      targets: { local: { http: { origin: http.origin, credential: 'api-token', auth: 'bearer', allow_private: true } } },
      tools: { note: { description: 'Write a note.', effect: 'write', approval: 'none', revisions: [n1, n2] } },
    });
    journals = openJournals(join(dir, 'journal'), { clock });
    const svc: Services = inProcessServices({ vault, catalog: parseCatalog(text, 'catalog.yaml'), digest: 'e'.repeat(64), journals, config: parseConfig('approval_timeout_seconds: 60', 'config.yaml'), clock }, { http: null });
    agent = await startAgentSocket(join(dir, 'agent.sock'), svc, { sessionStarted: (s) => sessions.push(s), sessionEnded: () => undefined });
  });
  after(async () => {
    await agent.close();
    journals.close();
    await http.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** Connects, writes `chunks` one by one (each in its own write), then initialize and one call; returns every line up to the call's answer. */
  async function session(chunks: string[]): Promise<Json[]> {
    const s: Socket = connect(join(dir, 'agent.sock'));
    await new Promise<void>((resolve) => s.once('connect', () => resolve()));
    const lines: Json[] = [];
    const done = new Promise<void>((resolve) => {
      s.on('data', lineSplitter(1 << 20, (line) => {
        const m = JSON.parse(line.toString('utf8')) as Json;
        lines.push(m);
        if (m['id'] === 2) resolve();
      }));
    });
    for (const c of chunks) {
      s.write(c);
      await new Promise((r) => setImmediate(r));
    }
    n++;
    s.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } })}\n`);
    s.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    s.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'note', arguments: { t: `hello-${n}`, idempotency_key: `hello-key-${n}-0000` } } })}\n`);
    await done;
    s.destroy();
    return lines;
  }
  const answer = (lines: Json[]): Json => ((lines.find((l) => l['id'] === 2)?.['result'] as Json | undefined)?.['structuredContent'] ?? {}) as Json;
  const listChangedBeforeAnswer = (lines: Json[]): boolean => {
    const i = lines.findIndex((l) => l['method'] === 'notifications/tools/list_changed');
    return i !== -1 && i < lines.findIndex((l) => l['id'] === 2);
  };
  const hello = (relayed: unknown): string => `${JSON.stringify({ postern_shim: 1, pid: 4242, relayed })}\n`;

  it('a hello split across writes declaring the current revision: the call runs as planned, no list_changed', async () => {
    const h = hello({ toolset: null, revisions: { note: 2 } });
    const before = http.requests.length;
    const lines = await session([h.slice(0, 10), h.slice(10, 30), h.slice(30)]);
    assert.equal(answer(lines)['error_code'], undefined, JSON.stringify(lines));
    assert.equal(http.requests.length, before + 1);
    assert.equal(listChangedBeforeAnswer(lines), false);
    const s = sessions.at(-1);
    assert.equal(s?.pid, 4242);
    assert.deepEqual([...(s?.seen ?? [])], [['note', 2]]);
  });

  it('a hello declaring an older revision: list_changed first, then CONTRACT_STALE by the declared revision; nothing sent', async () => {
    const before = http.requests.length;
    const lines = await session([hello({ toolset: null, revisions: { note: 1 } })]);
    assert.equal(answer(lines)['error_code'], 'CONTRACT_STALE', JSON.stringify(lines));
    assert.equal(listChangedBeforeAnswer(lines), true);
    assert.equal(http.requests.length, before);
  });

  it('an invalid declaration is dropped whole (the line is still the hello): the plan is unknown, counted as the oldest served revision', async () => {
    const before = http.requests.length;
    const lines = await session([hello({ toolset: null, revisions: { note: 2, 'bad name': 1 } })]);
    assert.equal(answer(lines)['error_code'], 'CONTRACT_STALE', JSON.stringify(lines));
    assert.equal(sessions.at(-1)?.pid, 4242);
    assert.equal(sessions.at(-1)?.seen.size, 0);
    assert.equal(http.requests.length, before);
  });

  it('no hello (a client on the socket directly): unknown plan, never assumed current', async () => {
    const before = http.requests.length;
    const lines = await session([]);
    assert.equal(answer(lines)['error_code'], 'CONTRACT_STALE', JSON.stringify(lines));
    assert.equal(sessions.at(-1)?.pid, null);
    assert.equal(http.requests.length, before);
  });
});
