// @subject time: HTTP timeouts and journal times (run again a year ahead by .ci/run)
/**
 * An agent calls HTTP tools end to end: the official MCP client over real
 * stdio (`postern mcp`) → the real daemon → a loopback HTTP service that keeps
 * an append-only request log. Approvals go through the authenticated operator
 * channel. Every rejected path asserts that the service's log did not grow.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import { encodingsOf } from '../helpers/cli.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { waitFor } from '../helpers/wait.js';

const TOKEN = canary('tok');
const key = (): string => `key-${randomBytes(8).toString('hex')}`;

type Result = { isError?: boolean; structuredContent?: Record<string, unknown>; content?: { type: string; text?: string }[] };

function catalogFor(origin: string, port: number) {
  const obj = (props: Record<string, unknown>, required: string[] = []) => ({ type: 'object', properties: props, required });
  return {
    targets: {
      local: { http: { origin, credential: 'api-token', auth: 'bearer', allow_private: true, idempotency_header: true } },
      // This machine's own name resolves to a loopback address (/etc/hosts): only the connected address can tell.
      guarded: { http: { origin: `https://${hostname()}:${port}`, credential: 'api-token', auth: 'bearer' } },
    },
    tools: {
      get_json: { description: 'Read JSON.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: obj({}), http: { target: 'local', method: 'GET', path: '/json' } }] },
      echo_read: { description: 'Echo the request.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: obj({ q: { type: 'string', maxLength: 200 } }), http: { target: 'local', method: 'GET', path: '/echo', query: { q: '{q}' } } }] },
      create_note: {
        description: 'Create a note.',
        effect: 'write',
        approval: 'session',
        revisions: [{ revision: 1, input: obj({ title: { type: 'string', maxLength: 100 } }, ['title']), http: { target: 'local', method: 'POST', path: '/echo', body: { title: '{title}' } } }],
      },
      delete_note: {
        description: 'Delete a note.',
        effect: 'destructive',
        approval: 'per-call',
        revisions: [{ revision: 1, input: obj({ id: { type: 'string', pattern: '^[a-z0-9]{1,20}$' } }, ['id']), http: { target: 'local', method: 'DELETE', path: '/echo', query: { id: '{id}' } } }],
      },
      internal_read: { description: 'A target that is not marked local.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: obj({}), http: { target: 'guarded', method: 'GET', path: '/json' } }] },
    },
  };
}

describe('daemon: HTTP tools over MCP', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agent: Client;

  before(async () => {
    ({ http, inst } = await httpFixture({ token: TOKEN, catalog: (_targets, target) => catalogFor(target.origin, target.port) }));
    agent = await inst.client();
  });

  after(async () => {
    inst.sb.assertNeverPrinted(TOKEN, 'the token');
    await inst.cleanup();
    await http.close();
  });

  const call = async (name: string, args: Record<string, unknown>): Promise<Result> => (await agent.callTool({ name, arguments: args })) as Result;

  /** Approves (or denies) the next pending card for `tool` through the operator channel. */
  async function decideNext(tool: string, verdict: { verdict: 'approve'; scope: 'once' | 'session' } | { verdict: 'deny'; reason: string | null }): Promise<void> {
    const op = await inst.operator();
    try {
      const found: { card?: { id: string; tool: string; call_digest: string } } = {};
      await waitFor(async () => {
        found.card = ((await op.request('approvals.list', {})) as { id: string; tool: string; call_digest: string }[]).find((c) => c.tool === tool);
        return found.card !== undefined;
      }, `a pending approval for ${tool}`);
      await op.request('approvals.decide', { approval_id: found.card!.id, verdict });
    } finally {
      op.close();
    }
  }

  it('lists tools with annotations, revisions in _meta, an idempotency_key for effects, and the status tool', async () => {
    const { tools } = await agent.listTools();
    const names = tools.map((t) => t.name).sort();
    assert.deepEqual(names, ['create_note', 'delete_note', 'echo_read', 'get_json', 'internal_read', 'postern_call_status']);
    const del = tools.find((t) => t.name === 'delete_note')!;
    assert.equal(del.annotations?.destructiveHint, true);
    assert.deepEqual(del._meta?.['dev.postern/revision'], 1);
    assert.ok((del.inputSchema.required as string[]).includes('idempotency_key'));
    const get = tools.find((t) => t.name === 'get_json')!;
    assert.equal(get.annotations?.readOnlyHint, true);
    assert.ok(!(get.inputSchema.required ?? []).includes('idempotency_key'));
  });

  it('runs a read call with the vault credential, which never comes back', async () => {
    const before = http.requests.length;
    const r = await call('get_json', {});
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.deepEqual(r.structuredContent?.['body'], { ok: true, items: [1, 2, 3] });
    assert.equal(http.requests.length, before + 1);
    assert.equal(http.header(before, 'authorization'), `Bearer ${TOKEN}`);
    const echo = await call('echo_read', { q: 'hello' });
    const text = JSON.stringify(echo);
    assert.ok(text.includes('[REDACTED:api-token]'), 'the echoed Authorization header is redacted');
    for (const form of encodingsOf(TOKEN)) assert.ok(!text.includes(form));
  });

  it('keeps the connection to a target alive between calls', async () => {
    const before = { requests: http.requests.length, connections: http.connections };
    for (let i = 0; i < 5; i++) {
      const r = await call('get_json', {});
      assert.equal(r.isError, undefined, JSON.stringify(r));
    }
    assert.equal(http.requests.length, before.requests + 5);
    // One kept-alive connection (a second at most, when a call follows before undici marks the first free).
    assert.ok(http.connections - before.connections <= 2, `${http.connections - before.connections} connections for 5 calls`);
  });

  it('refuses a secret in the arguments before anything is sent', async () => {
    const before = http.requests.length;
    const r = await call('echo_read', { q: `x${Buffer.from(TOKEN).toString('base64')}` });
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent?.['error_code'], 'SECRET_IN_ARGUMENTS');
    assert.equal(r.structuredContent?.['side_effect_started'], false);
    assert.equal(http.requests.length, before);
  });

  it('validation, unknown tool and a missing idempotency key are repairable errors with no request', async () => {
    const before = http.requests.length;
    let r = await call('create_note', { title: 'x'.repeat(101), idempotency_key: key() });
    assert.equal(r.structuredContent?.['error_code'], 'VALIDATION_FAILED');
    r = await call('create_note', { title: 'ok' });
    assert.equal(r.structuredContent?.['error_code'], 'IDEMPOTENCY_KEY_REQUIRED');
    r = await call('no_such_tool', {});
    assert.equal(r.structuredContent?.['error_code'], 'TOOL_NOT_FOUND');
    r = await call('create_note', { title: 'ok', idempotency_key: key(), extra: 1 });
    assert.equal(r.structuredContent?.['error_code'], 'VALIDATION_FAILED');
    assert.equal(http.requests.length, before);
  });

  it('a session approval covers later calls of the same session; replay and conflict by key', async () => {
    const k = key();
    const before = http.requests.length;
    const pending = call('create_note', { title: 'first', idempotency_key: k });
    await decideNext('create_note', { verdict: 'approve', scope: 'session' });
    const r1 = await pending;
    assert.equal(r1.isError, undefined, JSON.stringify(r1));
    assert.equal(http.requests.length, before + 1);
    assert.equal(http.header(before, 'idempotency-key'), k, 'forwarded to a target that honours it');
    const r2 = await call('create_note', { title: 'second', idempotency_key: key() });
    assert.equal(r2.isError, undefined, 'granted for the session: no new approval');
    assert.equal(http.requests.length, before + 2);
    const replay = await call('create_note', { title: 'first', idempotency_key: k });
    assert.equal(replay.structuredContent?.['replayed'], true);
    assert.equal(http.requests.length, before + 2, 'a replay sends nothing');
    const conflict = await call('create_note', { title: 'other', idempotency_key: k });
    assert.equal(conflict.structuredContent?.['error_code'], 'IDEMPOTENCY_KEY_CONFLICT');
    assert.equal(http.requests.length, before + 2);
    const status = await call('postern_call_status', { idempotency_key: k });
    assert.equal(status.structuredContent?.['status'], 'success');
  });

  it('per-call approval: approved, denied with a reason, timed out', async () => {
    const before = http.requests.length;
    let pending = call('delete_note', { id: 'n1', idempotency_key: key() });
    await decideNext('delete_note', { verdict: 'approve', scope: 'once' });
    const approved = await pending;
    assert.equal(approved.isError, undefined, JSON.stringify(approved));
    assert.equal(http.requests.length, before + 1);
    assert.equal(http.requests[before]?.method, 'DELETE');

    pending = call('delete_note', { id: 'n2', idempotency_key: key() });
    await decideNext('delete_note', { verdict: 'deny', reason: 'not today' });
    const denied = await pending;
    assert.equal(denied.structuredContent?.['error_code'], 'APPROVAL_DENIED');
    assert.match(String(denied.structuredContent?.['message']), /not today/);
    assert.equal(denied.structuredContent?.['side_effect_started'], false);

    const timedOut = await call('delete_note', { id: 'n3', idempotency_key: key() });
    assert.equal(timedOut.structuredContent?.['error_code'], 'APPROVAL_TIMEOUT');
    assert.equal(http.requests.length, before + 1, 'only the approved call reached the target');
  });

  it('a denied call does not consume its key', async () => {
    const k = key();
    const pending = call('delete_note', { id: 'n4', idempotency_key: k });
    await decideNext('delete_note', { verdict: 'deny', reason: null });
    assert.equal((await pending).structuredContent?.['error_code'], 'APPROVAL_DENIED');
    const again = call('delete_note', { id: 'n4', idempotency_key: k });
    await decideNext('delete_note', { verdict: 'approve', scope: 'once' });
    assert.equal((await again).isError, undefined);
  });

  it('another OS user cannot connect to the agent or operator socket', { skip: process.getuid?.() !== 0 ? 'needs root to act as another user' : false }, () => {
    for (const sock of ['agent.sock', 'operator.sock']) {
      const path = join(inst.sb.home, 'run', sock);
      const r = spawnSync(process.execPath, ['-e', `require('net').connect(${JSON.stringify(path)}).on('connect',()=>{console.log('connected');process.exit(0)}).on('error',e=>{console.log(e.code);process.exit(1)})`], { uid: 65534, gid: 65534, encoding: 'utf8' });
      assert.notEqual(r.stdout.trim(), 'connected', `${sock} accepted another user`);
      assert.match(r.stdout.trim(), /EACCES|EPERM|ENOENT/);
    }
    assert.equal((statSync(join(inst.sb.home, 'run')).mode & 0o777), 0o700);
    assert.equal((statSync(join(inst.sb.home, 'run', 'agent.sock')).mode & 0o777), 0o600);
  });

  it('refuses a name that resolves to loopback for a target that is not marked local', async () => {
    const before = http.requests.length;
    const connectionsBefore = http.connections;
    const r = await call('internal_read', {});
    assert.equal(r.structuredContent?.['error_code'], 'EGRESS_BLOCKED');
    assert.equal(r.structuredContent?.['side_effect_started'], false);
    assert.equal(http.requests.length, before);
    assert.equal(http.connections, connectionsBefore, 'not even a TCP connection was made');
  });
});
