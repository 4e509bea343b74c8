/**
 * Drift across reconnects (seed 000: "un cliente que se reconecte a mitad de
 * la transición"; issue 12 item 1) and execution identity (seed 001:
 * agentRelease, toolContractVersion, runId; issue 12 item 4), with the
 * official client over the real `postern mcp` shim and a daemon restarted
 * under it. The shim declares the listing it relayed when it reconnects; the
 * new session decides the client's calls by the revisions it planned against
 * and tells it to list again when the tools changed. A call whose plan is
 * unknown is never assumed current. Every refused path asserts the target saw
 * nothing.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { childEnv, CLI } from '../helpers/cli.js';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { openJournals, type CallView } from '../../src/journal/index.js';

type Result = { isError?: boolean; structuredContent?: Record<string, unknown>; _meta?: Record<string, unknown> };
const key = (): string => `key-${randomBytes(8).toString('hex')}`;
const obj = (props: Record<string, unknown>, required: string[]) => ({ type: 'object', properties: props, required });
const title = { type: 'string', maxLength: 100 };
const region = { enum: ['eu', 'us'] };
const label = { type: 'string', maxLength: 20 };

describe('daemon: drift across a reconnect with a daemon restart', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let targets: Record<string, unknown>;
  const r1 = { revision: 1, input: obj({ title }, ['title']), http: { target: 'local', method: 'POST', path: '/echo', body: { title: '{title}' } } };
  const r2 = {
    revision: 2,
    input: obj({ title, region }, ['title', 'region']),
    http: { target: 'local', method: 'POST', path: '/echo', body: { title: '{title}', region: '{region}' } },
    previous: { policy: 'adapt', defaults: { region: 'eu' } },
  };
  // Revision 3: previous: reject, another path.
  const r3 = { ...r2, revision: 3, http: { ...r2.http, path: '/json' }, previous: { policy: 'reject' } };
  // Revision 4: a new required field with a safe default for plans on revision 3.
  const r4 = {
    revision: 4,
    input: obj({ title, region, label }, ['title', 'region', 'label']),
    http: { target: 'local', method: 'POST', path: '/json', body: { title: '{title}', region: '{region}', label: '{label}' } },
    previous: { policy: 'adapt', defaults: { label: 'none' } },
  };
  const catalog = (revisions: unknown[]) => ({
    targets,
    tools: { create_issue: { description: 'Create an issue.', effect: 'write', approval: 'none', revisions } },
  });

  /** An agent that never re-lists by itself; it counts the list_changed notifications it is sent. */
  async function agent(name: string): Promise<{ c: Client; changed: () => number }> {
    const c = await inst.client({ name });
    let n = 0;
    c.setNotificationHandler('notifications/tools/list_changed', () => {
      n++;
    });
    return { c, changed: () => n };
  }
  const call = async (c: Client, args: Record<string, unknown>, meta?: Record<string, unknown>): Promise<Result> =>
    (await c.callTool({ name: 'create_issue', arguments: args, ...(meta === undefined ? {} : { _meta: meta }) })) as Result;
  const listedRevision = async (c: Client): Promise<unknown> => (await c.listTools()).tools.find((t) => t.name === 'create_issue')?._meta?.['dev.postern/revision'];
  const toolsetOf = async (c: Client): Promise<string> => String((await c.listTools()).tools.find((t) => t.name === 'create_issue')?._meta?.['dev.postern/toolset']);
  const restart = async (next?: unknown): Promise<void> => {
    await inst.stopDaemon();
    if (next !== undefined) await inst.acceptCatalog(next);
    await inst.startDaemon();
  };
  function journaled(k: string): CallView[] {
    const j = openJournals(join(inst.sb.home, 'journal'), { readonly: true });
    try {
      return j.activity.listCalls({ idempotency_key: k, limit: 100 });
    } finally {
      j.close();
    }
  }

  before(async () => {
    ({ http, inst } = await httpFixture({ token: canary('tok'), catalog: (t) => ((targets = t), catalog([r1, r2])) }));
  });
  after(async () => {
    await inst.cleanup();
    await http.close();
  });

  it('a client that reconnects mid-transition: listed r2, the daemon restarts, r3 (previous: reject, other path) is accepted → CONTRACT_STALE, list_changed, nothing sent', async () => {
    const a = await agent('reconnecting');
    assert.equal(await listedRevision(a.c), 2);
    await restart(catalog([r1, r2, r3]));
    const before = http.requests.length;
    const k = key();
    // Still built from revision 2: the shim reconnects and declares what it relayed.
    const r = await call(a.c, { title: 'planned on r2', region: 'us', idempotency_key: k });
    assert.equal(r.structuredContent?.['error_code'], 'CONTRACT_STALE', JSON.stringify(r));
    assert.equal(r.structuredContent?.['current_revision'], 3);
    assert.equal(r.structuredContent?.['side_effect_started'], false);
    assert.equal(http.requests.length, before, 'nothing reached the target');
    // The notification was written before the call's answer, on the same stream.
    assert.ok(a.changed() >= 1, 'the reconnected session was told tools/list_changed');
    const [row] = journaled(k);
    assert.equal(row?.status, 'rejected');
    assert.equal(row?.call.revision_seen, 2, 'journaled as planned against r2, not r3');
    assert.equal(row?.rejection?.error_code, 'CONTRACT_STALE');

    // Listing again repairs it: the call now runs under r3, at r3's path.
    assert.equal(await listedRevision(a.c), 3);
    const ok = await call(a.c, { title: 'planned on r3', region: 'us', idempotency_key: key() });
    assert.equal(ok.isError, undefined, JSON.stringify(ok));
    assert.equal(http.requests.length, before + 1);
    assert.equal(http.requests[before]?.url, '/json');
  });

  it('variant: nothing changed across the restart → no list_changed, the call runs under the revision it listed', async () => {
    const b = await agent('steady');
    assert.equal(await listedRevision(b.c), 3);
    await restart();
    const before = http.requests.length;
    const k = key();
    const r = await call(b.c, { title: 'steady', region: 'eu', idempotency_key: k });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(b.changed(), 0, 'no list_changed: the declared listing is the current one');
    assert.equal(http.requests.length, before + 1);
    assert.equal(journaled(k).find((c) => c.status === 'success')?.call.revision_seen, 3);
  });

  it('variant: r4 (adapt) accepted across the restart → the r3 plan is adapted under r4 and the client is told to re-list', async () => {
    const c = await agent('adapted');
    assert.equal(await listedRevision(c.c), 3);
    await restart(catalog([r1, r2, r3, r4]));
    const before = http.requests.length;
    const r = await call(c.c, { title: 'planned on r3', region: 'eu', idempotency_key: key() });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.ok(c.changed() >= 1);
    assert.equal(r._meta?.['dev.postern/revision'], 4, 'the result names the revision that ran');
    assert.deepEqual(JSON.parse(http.requests[before]!.body.toString('utf8')), { title: 'planned on r3', region: 'eu', label: 'none' });
  });

  it('variant: the daemon restarts twice; the shim still declares the last listing it relayed', async () => {
    const d = await agent('twice');
    assert.equal(await listedRevision(d.c), 4);
    await restart();
    const first = await call(d.c, { title: 'after one restart', region: 'eu', label: 'x', idempotency_key: key() });
    assert.equal(first.isError, undefined, JSON.stringify(first));
    assert.equal(d.changed(), 0);
    await restart(catalog([r1, r2, r3, r4, { ...r4, revision: 5, previous: { policy: 'reject' } }]));
    const before = http.requests.length;
    const r = await call(d.c, { title: 'planned on r4', region: 'eu', label: 'x', idempotency_key: key() });
    assert.equal(r.structuredContent?.['error_code'], 'CONTRACT_STALE', JSON.stringify(r));
    assert.equal(r.structuredContent?.['current_revision'], 5);
    assert.equal(http.requests.length, before);
    assert.ok(d.changed() >= 1);
  });

  it('unknown plan: a host that cached the list across connections calls without listing → planned against the oldest served revision; a reject on the way refuses it', async () => {
    const e = await agent('cached-list');
    const before = http.requests.length;
    const k = key();
    // Shaped for the current revision, but nothing says what this client planned against.
    const r = await call(e.c, { title: 'from a cached list', region: 'eu', label: 'x', idempotency_key: k });
    assert.equal(r.structuredContent?.['error_code'], 'CONTRACT_STALE', JSON.stringify(r));
    assert.equal(http.requests.length, before);
    const [row] = journaled(k);
    assert.equal(row?.call.revision_seen, 1, 'counted as planned against r1, the oldest served');
    assert.ok(row?.call.decision_path.includes('plan:unknown→r1'), JSON.stringify(row?.call.decision_path));

    // A call declaring a toolset the daemon does not serve is an unknown plan too.
    const odd = await call(e.c, { title: 'odd toolset', region: 'eu', label: 'x', idempotency_key: key() }, { 'dev.postern/toolset': 'not-a-toolset' });
    assert.equal(odd.structuredContent?.['error_code'], 'CONTRACT_STALE');
    assert.equal(http.requests.length, before);

    // Declaring the toolset in use says what it planned against: it runs as current.
    const ts = await toolsetOf((await agent('lister')).c);
    const ok = await call(e.c, { title: 'declared toolset', region: 'eu', label: 'x', idempotency_key: key() }, { 'dev.postern/toolset': ts });
    assert.equal(ok.isError, undefined, JSON.stringify(ok));
    assert.equal(http.requests.length, before + 1);
  });

  it('execution identity in the journal: run id per call, agent release, toolset planned against; every result echoes toolset and revision', async () => {
    const f = await agent('identified');
    const ts = await toolsetOf((await agent('lister-2')).c);
    const k1 = key();
    const k2 = key();
    const base = { 'dev.postern/agent_release': 'support-agent-2026-10-29.1', 'dev.postern/toolset': ts };
    const one = await call(f.c, { title: 'run a', region: 'eu', label: 'a', idempotency_key: k1 }, { ...base, 'dev.postern/run_id': 'run_7f2' });
    const two = await call(f.c, { title: 'run b', region: 'eu', label: 'b', idempotency_key: k2 }, { ...base, 'dev.postern/run_id': 'run_8a1' });
    for (const r of [one, two]) {
      assert.equal(r.isError, undefined, JSON.stringify(r));
      assert.equal(r._meta?.['dev.postern/toolset'], ts);
      assert.equal(r._meta?.['dev.postern/revision'], 5);
    }
    const a = journaled(k1).find((c) => c.status === 'success');
    const b = journaled(k2).find((c) => c.status === 'success');
    assert.deepEqual([a?.call.run_id, a?.call.agent_release, a?.call.toolset_planned], ['run_7f2', 'support-agent-2026-10-29.1', ts]);
    assert.deepEqual([b?.call.run_id, b?.call.agent_release, b?.call.toolset_planned], ['run_8a1', 'support-agent-2026-10-29.1', ts]);
    // An error result carries them too.
    const bad = await call(f.c, { title: 'bad', region: 'mars', label: 'x', idempotency_key: key() }, base);
    assert.equal(bad.structuredContent?.['error_code'], 'VALIDATION_FAILED');
    assert.equal(bad._meta?.['dev.postern/toolset'], ts);
    // The Sessions row of this session has the agent release its first request declared.
    const j = openJournals(join(inst.sb.home, 'journal'), { readonly: true });
    try {
      const session = j.sessions.listSessions({ limit: 1000 }).find((s) => s.session_id === a?.call.session_id);
      assert.equal(session?.agent_release, 'support-agent-2026-10-29.1');
    } finally {
      j.close();
    }
  });

  it('the Sessions row of an ordinary client (initialize → tools/list → tools/call with _meta) has the run id and agent release it declared', async () => {
    const g = await agent('ordinary-flow');
    await g.c.listTools();
    const k = key();
    const r = await call(g.c, { title: 'ordinary', region: 'eu', label: 'o', idempotency_key: k }, { 'dev.postern/run_id': 'run_ord_1', 'dev.postern/agent_release': 'ordinary-agent-2026.2' });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    // A later call declaring another run does not rewrite what the session declared first.
    await call(g.c, { title: 'ordinary 2', region: 'eu', label: 'o', idempotency_key: key() }, { 'dev.postern/run_id': 'run_ord_2' });
    const sessionId = journaled(k).find((c) => c.status === 'success')?.call.session_id;
    assert.equal(typeof sessionId, 'string');
    const j = openJournals(join(inst.sb.home, 'journal'), { readonly: true });
    try {
      const session = j.sessions.listSessions({ limit: 1000 }).find((s) => s.session_id === sessionId);
      assert.deepEqual([session?.run_id, session?.agent_release], ['run_ord_1', 'ordinary-agent-2026.2']);
    } finally {
      j.close();
    }
    const audit = await inst.sb.run(['audit', 'sessions', '--json', '--limit', '500']);
    const shown = (JSON.parse(audit.stdout) as { session_id: string; run_id: unknown; agent_release: unknown }[]).find((x) => x.session_id === sessionId);
    assert.deepEqual([shown?.run_id, shown?.agent_release], ['run_ord_1', 'ordinary-agent-2026.2']);
  });

  it('variant on 2026-07-28 (no initialize to replay): the listing says it may not be cached; across a restart the shim still declares it, and a reject refuses the old plan', async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], env: childEnv(inst.sb.home), stderr: 'pipe' });
    const m = new Client({ name: 'modern-agent', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await m.connect(transport);
    try {
      assert.equal(m.getNegotiatedProtocolVersion(), '2026-07-28');
      const listed = (await m.listTools()) as { tools: { name: string; _meta?: Record<string, unknown> }[]; ttlMs?: unknown; cacheScope?: unknown };
      assert.equal(listed.tools.find((t) => t.name === 'create_issue')?._meta?.['dev.postern/revision'], 5);
      assert.equal(listed.ttlMs, 0, 'a listing is good only until the next accepted catalog');
      assert.equal(listed.cacheScope, 'private');
      const r6 = { ...r4, revision: 6, http: { ...r4.http, path: '/echo' }, previous: { policy: 'reject' } };
      await restart(catalog([r1, r2, r3, r4, { ...r4, revision: 5, previous: { policy: 'reject' } }, r6]));
      const before = http.requests.length;
      const r = (await m.callTool({ name: 'create_issue', arguments: { title: 'planned on r5', region: 'eu', label: 'x', idempotency_key: key() } })) as Result;
      assert.equal(r.structuredContent?.['error_code'], 'CONTRACT_STALE', JSON.stringify(r));
      assert.equal(r.structuredContent?.['current_revision'], 6);
      assert.equal(http.requests.length, before);
    } finally {
      await m.close();
    }
  });
});
