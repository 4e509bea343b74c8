/**
 * MCP tasks (2025-11-25) for long approval waits: the SDK 1.x client — the
 * one client here with a task runtime (`client.experimental.tasks`) — over
 * real stdio (`postern mcp`) → the real daemon → a loopback HTTP service
 * with its append-only request log; decisions go through the operator
 * channel, and the journal is read with `postern audit activity --json`.
 *
 * - A client that declares `capabilities.tasks` is offered them (capability,
 *   `execution.taskSupport` on tools that may wait); a call that needs
 *   approval becomes a task at once, stays `working` ("waiting for operator
 *   approval …") well past the wait after which a plain call is answered
 *   APPROVAL_PENDING, and once approved `tasks/result` gives the result; the
 *   target saw exactly one request.
 * - `tasks/cancel` while waiting: the card leaves the queue, the journal says
 *   cancelled, the target sees nothing; cancelling again is -32602.
 * - A denied call is a `failed` task whose `tasks/result` is the tool error.
 * - Unknown task ids are -32602 (TASK_NOT_FOUND); another session can
 *   neither see nor cancel a task; a session that ends cancels its tasks.
 * - Idempotency is unchanged: the same key again is replayed, never run twice.
 * - A client without task support (and the 2026-07-28 era) gets the old
 *   behaviour: no capability, no taskSupport, a `task` param ignored
 *   (APPROVAL_PENDING), `tasks/*` -32601.
 * - Tasks end with the daemon: a stopping daemon voids the pending approval
 *   (the waiting `tasks/result` gets that result); while it is away the
 *   `postern mcp` shim answers task requests itself (TASK_NOT_FOUND, an
 *   empty list, DAEMON_UNAVAILABLE for a new task), and a daemon killed
 *   mid-task has its waiting `tasks/result` answered by the shim.
 * Waits are on events (queue events, task status polls), never sleeps:
 * elapsed time is proven by counting polls, which the client spaces by the
 * task's pollInterval (the daemon's progress interval).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema, McpError, TaskStatusNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import type { ApprovalCard, ApprovalDecision } from '../../src/protocol/approvals.js';
import type { OperatorEvent } from '../../src/protocol/operator/index.js';
import type { CallView } from '../../src/journal/index.js';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import { childEnv, CLI } from '../helpers/cli.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture, TOOLS } from '../helpers/fixture.js';

const TOKEN = canary('tasks');
const key = (): string => `key-${randomBytes(8).toString('hex')}`;
/** Progress (and so the tasks' pollInterval) every 200 ms. */
const INTERVAL_S = 0.2;
/** A plain call without a progress token is answered APPROVAL_PENDING after this long. */
const WAIT_WITHOUT_PROGRESS_S = 1;
/** Eight polls span at least seven poll intervals (1.4 s): longer than that wait. */
const POLLS_PAST_PENDING = 8;
const RELATED_TASK = 'io.modelcontextprotocol/related-task';

type Result = { isError?: boolean; structuredContent?: Record<string, unknown>; content?: unknown[]; _meta?: Record<string, unknown> };

const tools = {
  ...TOOLS.gatedWrite,
  gated_read: {
    description: 'A read that needs a per-call approval.',
    effect: 'read',
    approval: 'per-call',
    revisions: [{ revision: 1, input: { type: 'object', properties: {} }, http: { target: 'local', method: 'GET', path: '/json' } }],
  },
  plain_read: {
    description: 'A read that needs no approval.',
    effect: 'read',
    approval: 'none',
    revisions: [{ revision: 1, input: { type: 'object', properties: {} }, http: { target: 'local', method: 'GET', path: '/json' } }],
  },
};

/** The JSON-RPC error a promise rejects with. */
async function rpcError(p: Promise<unknown>): Promise<McpError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof McpError, `expected a JSON-RPC error, got ${String(e)}`);
    return e;
  }
  assert.fail('expected a JSON-RPC error, got a result');
}

describe('MCP tasks for long approval waits', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let op: Awaited<ReturnType<Installation['operator']>>;
  const listeners = new Set<(e: OperatorEvent) => boolean>();
  const clients: ClientV1[] = [];

  function nextEvent<T>(pick: (e: OperatorEvent) => T | undefined): Promise<T> {
    return new Promise((resolve) => {
      listeners.add((e) => {
        const v = pick(e);
        if (v === undefined) return false;
        resolve(v);
        return true;
      });
    });
  }
  const nextCard = (): Promise<ApprovalCard> => nextEvent((e) => (e.type === 'approval.added' ? e.card : undefined));
  const resolvedOf = (id: string): Promise<ApprovalDecision> => nextEvent((e) => (e.type === 'approval.resolved' && e.id === id ? e.decision : undefined));

  /** An SDK 1.x client over its own `postern mcp`; `tasks: true` declares the tasks capability. */
  async function agent(tasks: boolean): Promise<ClientV1> {
    const client = new ClientV1({ name: tasks ? 'agent-tasks' : 'agent-plain', version: '1.0.0' }, tasks ? { capabilities: { tasks: {} } } : {});
    await client.connect(new StdioV1({ command: process.execPath, args: [CLI, 'mcp'], env: childEnv(inst.sb.home), stderr: 'pipe' }));
    await client.listTools();
    clients.push(client);
    return client;
  }

  /** Starts a task-augmented call and returns its id, and the stream to read on. */
  async function startTask(client: ClientV1, args: Record<string, unknown>, name = 'gated_write', onprogress?: (p: { message?: string }) => void) {
    const stream = client.experimental.tasks.callToolStream({ name, arguments: args }, CallToolResultSchema, { task: {}, ...(onprogress === undefined ? {} : { onprogress }) });
    const first = await stream.next();
    assert.equal(first.done, false);
    assert.equal(first.value.type, 'taskCreated', JSON.stringify(first.value));
    if (first.value.type !== 'taskCreated') throw new Error('unreachable');
    assert.equal(first.value.task.status, 'working');
    return { taskId: first.value.task.taskId, task: first.value.task, stream };
  }

  async function journalOf(k: string): Promise<CallView[]> {
    const r = await inst.sb.run(['audit', 'activity', '--json']);
    assert.equal(r.code, 0, r.stderr);
    return (JSON.parse(r.stdout) as CallView[]).filter((c) => c.call.idempotency_key === k);
  }
  /** The task events of the session that journaled the call with key `k`. */
  async function taskEventsOf(k: string): Promise<{ type: string; data: Record<string, unknown> }[]> {
    const session = (await journalOf(k))[0]?.call.session_id;
    assert.ok(typeof session === 'string');
    const r = await inst.sb.run(['audit', 'session', session, '--json']);
    assert.equal(r.code, 0, r.stderr);
    return (JSON.parse(r.stdout) as { events: { type: string; data: Record<string, unknown> }[] }).events.filter((e) => e.type.startsWith('task_'));
  }
  /** A watch for the next card of a restarted daemon, on a new operator connection (subscribed when this returns). */
  async function watchNextCard(): Promise<{ card: Promise<ApprovalCard> }> {
    const op2 = await inst.operator();
    let found: (c: ApprovalCard) => void = () => undefined;
    const card = new Promise<ApprovalCard>((resolve) => (found = resolve));
    await op2.subscribe((env) => {
      if (env.event.type !== 'approval.added') return;
      found(env.event.card);
      op2.close();
    });
    return { card };
  }
  const pendingIds = async (): Promise<string[]> => (await op.request('approvals.list', {})).map((c) => c.id);
  const approve = (id: string) => op.request('approvals.decide', { approval_id: id, verdict: { verdict: 'approve', scope: 'once' } });

  before(async () => {
    ({ http, inst } = await httpFixture({
      token: TOKEN,
      tools,
      config: { approval_timeout_seconds: 60, progress_interval_seconds: INTERVAL_S, approval_wait_without_progress_seconds: WAIT_WITHOUT_PROGRESS_S },
    }));
    op = await inst.operator();
    await op.subscribe((env) => {
      for (const l of [...listeners]) if (l(env.event)) listeners.delete(l);
    });
  });

  after(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    op.close();
    inst.sb.assertNeverPrinted(TOKEN, 'the token');
    await inst.cleanup();
    await http.close();
  });

  it('a client that declares tasks is offered them (the capability, taskSupport on the tools that may wait); its plain call stays plain, and the same call as a task takes its open card', async () => {
    const client = await agent(true);
    assert.deepEqual(client.getServerCapabilities()?.tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } });
    const { tools } = await client.listTools();
    const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport ?? null]));
    assert.deepEqual(support, { gated_write: 'optional', gated_read: 'optional', plain_read: null, postern_call_status: null });
    // taskSupport is "optional": the same client's plain call is a plain call (APPROVAL_PENDING after the wait without progress).
    const appeared = nextCard();
    const args = { title: 'not a task', idempotency_key: key() };
    const r = (await client.callTool({ name: 'gated_write', arguments: args })) as Result;
    const card = await appeared;
    assert.equal(r.structuredContent?.['error_code'], 'APPROVAL_PENDING', JSON.stringify(r));
    assert.equal(r.structuredContent?.['approval_id'], card.id);
    // The same call again, now as a task, waits on the card it left open (no second card), and runs once approved.
    const before = http.requests.length;
    const { stream } = await startTask(client, args);
    const waiting = await stream.next();
    assert.equal(waiting.value?.type, 'taskStatus');
    assert.deepEqual(await pendingIds(), [card.id], 'one card');
    await approve(card.id);
    let result: Result | undefined;
    for await (const m of stream) if (m.type === 'result') result = m.result;
    assert.equal(result?.isError, undefined, JSON.stringify(result));
    assert.equal(http.requests.length, before + 1);
    await client.close();
  });

  it('a call that needs approval becomes a task, waits past the plain-call limit, and once approved tasks/result gives the result; the target saw one request', async () => {
    const client = await agent(true);
    const before = http.requests.length;
    const k = key();
    const appeared = nextCard();
    // The optional status notification at the task's end.
    let notified: (status: string) => void = () => undefined;
    const statusNotice = new Promise<string>((resolve) => (notified = resolve));
    client.setNotificationHandler(TaskStatusNotificationSchema, (n) => notified(`${n.params.taskId} ${n.params.status}`));
    // A progress token sent with the call stays valid for the task's lifetime.
    const progress: string[] = [];
    const { taskId, task, stream } = await startTask(client, { title: 'as a task', idempotency_key: k }, 'gated_write', (p) => progress.push(p.message ?? ''));
    assert.match(taskId, /^[0-9a-f-]{36}$/);
    assert.equal(task.pollInterval, INTERVAL_S * 1000);
    assert.ok(typeof task.ttl === 'number' && task.ttl >= 60_000, `ttl ${task.ttl}`);
    const card = await appeared;
    // Polls are spaced by pollInterval: this many of them outlast the wait after which a plain call is answered APPROVAL_PENDING.
    let polls = 0;
    for (;;) {
      const m = await stream.next();
      assert.equal(m.done, false);
      assert.equal(m.value.type, 'taskStatus', JSON.stringify(m.value));
      if (m.value.type !== 'taskStatus') throw new Error('unreachable');
      if (m.value.task.status === 'working' && /waiting for operator approval/.test(m.value.task.statusMessage ?? '')) {
        assert.match(m.value.task.statusMessage ?? '', new RegExp(`waiting for operator approval ${card.id.slice(0, 8)}`));
        if (++polls === POLLS_PAST_PENDING) break;
      }
    }
    assert.ok((await pendingIds()).includes(card.id), 'the card is still open');
    assert.ok(progress.some((m) => m.includes(`operator approval ${card.id.slice(0, 8)}`)), `progress after the task was created: ${progress.join(' | ')}`);
    assert.equal(http.requests.length, before, 'nothing runs before the approval');
    await approve(card.id);
    let result: Result | undefined;
    for await (const m of stream) {
      if (m.type === 'result') result = m.result;
      if (m.type === 'error') assert.fail(String(m.error));
    }
    assert.equal(result?.isError, undefined, JSON.stringify(result));
    assert.equal(http.requests.length, before + 1, 'the approved call ran once');
    const done = await client.experimental.tasks.getTask(taskId);
    assert.equal(done.status, 'completed');
    assert.equal(await statusNotice, `${taskId} completed`);
    // tasks/result again: the same result, tied to its task.
    const again = (await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)) as Result;
    assert.deepEqual(again._meta?.[RELATED_TASK], { taskId });
    assert.deepEqual(again.structuredContent, result?.structuredContent);
    const listed = await client.experimental.tasks.listTasks();
    assert.deepEqual(listed.tasks.map((t) => [t.taskId, t.status]), [[taskId, 'completed']]);
    const rows = await journalOf(k);
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.call.approval?.outcome, 'approved');
    assert.deepEqual((await taskEventsOf(k)).map((e) => [e.type, e.data['task_id'], e.data['status'] ?? e.data['tool']]), [['task_started', taskId, 'gated_write'], ['task_ended', taskId, 'completed']]);
    assert.equal(http.requests.length, before + 1, 'still once');

    // Idempotency is unchanged: the same call again as a task is replayed, not run.
    const replay = await startTask(client, { title: 'as a task', idempotency_key: k });
    let replayed: Result | undefined;
    for await (const m of replay.stream) if (m.type === 'result') replayed = m.result;
    assert.equal(replayed?.structuredContent?.['replayed'], true, JSON.stringify(replayed));
    assert.equal(http.requests.length, before + 1, 'never twice');
    await client.close();
  });

  it('tasks/cancel while the call waits: the card is gone, the journal says cancelled, nothing reaches the target', async () => {
    const client = await agent(true);
    const before = http.requests.length;
    const k = key();
    const appeared = nextCard();
    const { taskId } = await startTask(client, { title: 'cancel me', idempotency_key: k });
    const card = await appeared;
    const resolved = resolvedOf(card.id);
    const cancelled = await client.experimental.tasks.cancelTask(taskId);
    assert.equal(cancelled.status, 'cancelled');
    assert.equal((await resolved).kind, 'cancelled');
    assert.ok(!(await pendingIds()).includes(card.id), 'the card left the queue');
    await assert.rejects(approve(card.id), (e: Error & { code?: string }) => e.code === 'APPROVAL_NOT_FOUND');
    assert.equal((await client.experimental.tasks.getTask(taskId)).status, 'cancelled');
    const result = (await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)) as Result;
    assert.equal(result.structuredContent?.['error_code'], 'CALL_CANCELLED');
    const again = await rpcError(client.experimental.tasks.cancelTask(taskId));
    assert.equal(again.code, -32602);
    assert.equal((again.data as Record<string, unknown>)['error_code'], 'TASK_ALREADY_ENDED');
    const rows = await journalOf(k);
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.rejection?.error_code, 'CALL_CANCELLED');
    assert.equal(rows[0]?.call.approval?.outcome, 'cancelled');
    assert.equal(rows[0]?.call.side_effect_started, false);
    assert.deepEqual((await taskEventsOf(k)).map((e) => [e.type, e.data['status'] ?? null]), [['task_started', null], ['task_ended', 'cancelled']]);
    assert.equal(http.requests.length, before, 'the target saw no request');
    await client.close();
  });

  it('a denied call is a failed task whose tasks/result is the tool error', async () => {
    const client = await agent(true);
    const appeared = nextCard();
    const { taskId, stream } = await startTask(client, { title: 'deny me', idempotency_key: key() });
    const card = await appeared;
    await op.request('approvals.decide', { approval_id: card.id, verdict: { verdict: 'deny', reason: 'not today' } });
    let last: unknown;
    for await (const m of stream) last = m;
    assert.equal((last as { type: string }).type, 'error', 'the SDK reports a failed task as an error');
    const task = await client.experimental.tasks.getTask(taskId);
    assert.equal(task.status, 'failed');
    assert.match(task.statusMessage ?? '', /^APPROVAL_DENIED: .*not today/);
    const result = (await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)) as Result;
    assert.equal(result.isError, true);
    assert.equal(result.structuredContent?.['error_code'], 'APPROVAL_DENIED');
    await client.close();
  });

  it('unknown task ids are -32602 TASK_NOT_FOUND; another session can neither see nor cancel a task', async () => {
    const a = await agent(true);
    const b = await agent(true);
    for (const call of [a.experimental.tasks.getTask('no-such-task'), a.experimental.tasks.cancelTask('no-such-task'), a.experimental.tasks.getTaskResult('no-such-task', CallToolResultSchema)]) {
      const e = await rpcError(call);
      assert.equal(e.code, -32602);
      assert.equal((e.data as Record<string, unknown>)['error_code'], 'TASK_NOT_FOUND');
    }
    const appeared = nextCard();
    const { taskId, stream } = await startTask(a, { title: 'mine', idempotency_key: key() });
    const card = await appeared;
    for (const call of [b.experimental.tasks.getTask(taskId), b.experimental.tasks.cancelTask(taskId), b.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)]) {
      const e = await rpcError(call);
      assert.equal(e.code, -32602, 'a foreign id answers as an unknown one');
      assert.equal((e.data as Record<string, unknown>)['error_code'], 'TASK_NOT_FOUND');
    }
    assert.deepEqual((await b.experimental.tasks.listTasks()).tasks, []);
    assert.ok((await pendingIds()).includes(card.id), "the other session's cancel changed nothing");
    await approve(card.id);
    let result: Result | undefined;
    for await (const m of stream) if (m.type === 'result') result = m.result;
    assert.equal(result?.isError, undefined, JSON.stringify(result));
    await a.close();
    await b.close();
  });

  it('a tool that cannot wait for the operator does not run as a task (-32601)', async () => {
    const client = await agent(true);
    for (const name of ['plain_read', 'postern_call_status', 'no_such_tool']) {
      const e = await rpcError(client.request({ method: 'tools/call', params: { name, arguments: {}, task: {} } }, CallToolResultSchema));
      assert.equal(e.code, -32601, name);
      assert.equal((e.data as Record<string, unknown>)['error_code'], 'TASK_NOT_SUPPORTED', name);
    }
    await client.close();
  });

  it('a session that ends cancels its running tasks: the card leaves the queue and the journal says cancelled', async () => {
    const client = await agent(true);
    const k = key();
    const appeared = nextCard();
    await startTask(client, { title: 'left behind', idempotency_key: k });
    const card = await appeared;
    const resolved = resolvedOf(card.id);
    await client.close();
    assert.equal((await resolved).kind, 'cancelled');
    assert.ok(!(await pendingIds()).includes(card.id));
    const rows = await journalOf(k);
    assert.equal(rows[0]?.rejection?.error_code, 'CALL_CANCELLED');
  });

  it('a client without task support gets the old behaviour: no capability, no taskSupport, a task param ignored, tasks/* -32601', async () => {
    const client = await agent(false);
    assert.equal(client.getServerCapabilities()?.tasks, undefined);
    const { tools } = await client.listTools();
    assert.ok(tools.every((t) => t.execution === undefined));
    const appeared = nextCard();
    // A `task` param from a session that was not offered tasks is ignored: a plain call, answered APPROVAL_PENDING.
    const r = (await client.request({ method: 'tools/call', params: { name: 'gated_write', arguments: { title: 'plain', idempotency_key: key() }, task: {} } }, CallToolResultSchema)) as Result;
    const card = await appeared;
    assert.equal(r.structuredContent?.['error_code'], 'APPROVAL_PENDING', JSON.stringify(r));
    assert.equal(r.structuredContent?.['approval_id'], card.id);
    const e = await rpcError(client.experimental.tasks.listTasks());
    assert.equal(e.code, -32601);
    await client.close();
  });

  it('the 2026-07-28 era is not offered tasks', async () => {
    const transport = new StdioV2({ command: process.execPath, args: [CLI, 'mcp'], env: childEnv(inst.sb.home), stderr: 'pipe' });
    const client = new ClientV2({ name: 'agent-2026', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(transport);
    assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
    assert.equal((client.getServerCapabilities() as Record<string, unknown> | undefined)?.['tasks'], undefined);
    const { tools } = await client.listTools();
    assert.ok(tools.every((t) => (t as { execution?: unknown }).execution === undefined));
    await client.close();
  });

  // Last: it stops the daemon.
  it('tasks end with the daemon: a waiting tasks/result gets the voided call, and while the daemon is away task requests say so', async () => {
    const client = await agent(true);
    const appeared = nextCard();
    const { taskId } = await startTask(client, { title: 'daemon goes', idempotency_key: key() });
    await appeared;
    const waiting = client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    // A round trip after it on the same connection: the daemon has read the tasks/result before it is stopped.
    await client.experimental.tasks.getTask(taskId);
    assert.equal(await inst.stopDaemon('SIGTERM'), 0);
    // A stopping daemon voids its pending approvals: the task ends, and its waiting tasks/result is answered with that.
    const voided = (await waiting) as Result;
    assert.equal(voided.isError, true);
    assert.equal(voided.structuredContent?.['error_code'], 'VAULT_LOCKED', JSON.stringify(voided));
    assert.match(String(voided.structuredContent?.['message']), /voided \(daemon stopping/);
    const gone = await rpcError(client.experimental.tasks.getTask(taskId));
    assert.equal(gone.code, -32602);
    assert.deepEqual((await client.experimental.tasks.listTasks()).tasks, []);
    const down = await rpcError(client.request({ method: 'tools/call', params: { name: 'gated_write', arguments: { title: 'x', idempotency_key: key() }, task: {} } }, CallToolResultSchema));
    assert.equal(down.code, -32603);
    assert.equal((down.data as Record<string, unknown>)['error_code'], 'DAEMON_UNAVAILABLE');
    assert.match(down.message, /postern daemon/);
    await client.close();
  });

  it('a daemon that dies mid-task: the shim answers the waiting tasks/result (-32602, the task is gone with the connection)', async () => {
    await inst.startDaemon();
    const client = await agent(true);
    const appeared = await watchNextCard();
    const { taskId } = await startTask(client, { title: 'daemon dies', idempotency_key: key() });
    await appeared.card;
    const waiting = rpcError(client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema));
    await client.experimental.tasks.getTask(taskId); // the daemon has read the tasks/result (see above)
    await inst.stopDaemon('SIGKILL');
    const lost = await waiting;
    assert.equal(lost.code, -32602, lost.message);
    assert.equal((lost.data as Record<string, unknown>)['error_code'], 'TASK_NOT_FOUND');
    assert.match(lost.message, /was lost/);
    await client.close();
  });
});
