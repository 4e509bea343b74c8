// @subject time: task lifetimes (run again a year ahead by .ci/run)
/**
 * A session's MCP task store on the test clock: ids, status transitions,
 * cancellation (the call's signal is aborted, the status stays cancelled),
 * ttl (a finished task is forgotten once its ttl has passed, a running one
 * never), the bound on tasks per session, paging, and the session's end.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { TaskStore, taskLimits, type TaskLimits, type TaskRun } from '../../../src/daemon/mcp/task-store.js';
import { isPosternError } from '../../../src/rules/errors.js';
import { toolErrorResult } from '../../../src/protocol/tool-result.js';
import { ManualClock } from '../../helpers/clock.js';

const limits: TaskLimits = { maxTasks: 3, defaultTtlMs: 10_000, minTtlMs: 1_000, maxTtlMs: 60_000, keepAfterEndMs: 0, pollIntervalMs: 500, pageSize: 2 };
const ok: CallToolResult = { content: [{ type: 'text', text: 'done' }], structuredContent: { ok: true } };
/** A call that ends at once with `ok`. */
const done = (): Promise<CallToolResult> => Promise.resolve(ok);

/** A call the test finishes by hand; `run` is what the store was handed. */
function controlled() {
  let finish: (r: CallToolResult) => void = () => undefined;
  let run: TaskRun | undefined;
  const body = (r: TaskRun): Promise<CallToolResult> => {
    run = r;
    return new Promise<CallToolResult>((resolve) => {
      finish = resolve;
      r.signal.addEventListener('abort', () => resolve(toolErrorResult('CALL_CANCELLED', 'the client gave up', false)));
    });
  };
  return { body, finish: (r: CallToolResult) => finish(r), run: () => run! };
}

const code = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (e) {
    return isPosternError(e) ? e.code : 'not a PosternError';
  }
  return undefined;
};

describe('TaskStore', () => {
  it('a task starts working with a random id, says where its call stands, and completes (or fails on isError)', async () => {
    const clock = new ManualClock('2026-12-01T09:00:00Z');
    const store = new TaskStore(clock, limits);
    const a = controlled();
    const t = store.start(undefined, a.body);
    assert.match(t.taskId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.deepEqual({ ...t, taskId: '' }, { taskId: '', status: 'working', statusMessage: 'the call is running', createdAt: '2026-12-01T09:00:00.000Z', lastUpdatedAt: '2026-12-01T09:00:00.000Z', ttl: 10_000, pollInterval: 500 });
    await Promise.resolve();
    clock.advance(1000);
    a.run().status('waiting for operator approval 1234abcd');
    assert.equal(store.get(t.taskId).statusMessage, 'waiting for operator approval 1234abcd');
    assert.equal(store.get(t.taskId).lastUpdatedAt, '2026-12-01T09:00:01.000Z');
    const waiting = store.result(t.taskId);
    a.finish(ok);
    assert.deepEqual((await waiting).result, ok);
    assert.equal(store.get(t.taskId).status, 'completed');

    const b = controlled();
    const f = store.start(undefined, b.body);
    await Promise.resolve();
    b.finish(toolErrorResult('APPROVAL_DENIED', 'the operator denied the call', false));
    await store.result(f.taskId);
    assert.equal(store.get(f.taskId).status, 'failed');
    assert.equal(store.get(f.taskId).statusMessage, 'APPROVAL_DENIED: the operator denied the call');
  });

  it('cancel aborts the call and the task stays cancelled whatever the call returns; a second cancel is TASK_ALREADY_ENDED', async () => {
    const store = new TaskStore(new ManualClock(0), limits);
    let signal: AbortSignal | undefined;
    let finish: (r: CallToolResult) => void = () => undefined;
    const ends: string[] = [];
    const t = store.start(
      undefined,
      (r) => {
        signal = r.signal;
        return new Promise((resolve) => (finish = resolve));
      },
      (v) => ends.push(v.status),
    );
    await Promise.resolve();
    assert.equal(store.cancel(t.taskId).status, 'cancelled');
    assert.equal(signal?.aborted, true);
    finish(ok); // the call ran to completion anyway
    await store.result(t.taskId);
    assert.equal(store.get(t.taskId).status, 'cancelled');
    assert.deepEqual(ends, ['cancelled'], 'its end is told once');
    assert.equal(code(() => store.cancel(t.taskId)), 'TASK_ALREADY_ENDED');
    assert.equal(code(() => store.get('nope')), 'TASK_NOT_FOUND');
  });

  it('ttl is clamped, counts from creation, and forgets only finished tasks', async () => {
    const clock = new ManualClock(0);
    const store = new TaskStore(clock, { ...limits, maxTasks: 10 });
    assert.equal(store.start(5, done).ttl, 1_000, 'raised to the minimum');
    assert.equal(store.start(1e12, done).ttl, 60_000, 'lowered to the maximum');
    const running = controlled();
    const r = store.start(2_000, running.body);
    const finished = store.start(2_000, done);
    await store.result(finished.taskId);
    clock.advance(1_999);
    assert.equal(store.get(finished.taskId).status, 'completed', 'kept within its ttl');
    clock.advance(1);
    assert.equal(code(() => store.get(finished.taskId)), 'TASK_NOT_FOUND', 'forgotten once its ttl passed');
    assert.equal(store.get(r.taskId).status, 'working', 'a running task never expires');
    running.finish(ok);
    await store.result(r.taskId);
    assert.equal(code(() => store.get(r.taskId)), 'TASK_NOT_FOUND', 'and goes once it has ended past its ttl');
  });

  it('a result stays keepAfterEndMs after its call ended, even past its ttl (a late approval still leaves time to fetch it)', async () => {
    const clock = new ManualClock(0);
    const store = new TaskStore(clock, { ...limits, keepAfterEndMs: 5_000 });
    const late = controlled();
    const t = store.start(1_000, late.body);
    await Promise.resolve();
    clock.advance(30_000);
    late.finish(ok);
    await store.result(t.taskId);
    clock.advance(4_999);
    assert.equal(store.get(t.taskId).status, 'completed');
    clock.advance(1);
    assert.equal(code(() => store.get(t.taskId)), 'TASK_NOT_FOUND');
  });

  it('at most maxTasks: a new task evicts the oldest finished one, and is refused when all are running', async () => {
    const store = new TaskStore(new ManualClock(0), limits);
    const first = store.start(undefined, done);
    await store.result(first.taskId);
    const calls = [controlled(), controlled()];
    for (const c of calls) store.start(undefined, c.body);
    const third = controlled();
    store.start(undefined, third.body);
    assert.equal(code(() => store.get(first.taskId)), 'TASK_NOT_FOUND', 'the finished one made room');
    assert.equal(store.size, 3);
    assert.equal(code(() => store.start(undefined, done)), 'TASK_LIMIT_REACHED');
  });

  it('lists oldest first in pages; a cursor it never gave is refused', () => {
    const store = new TaskStore(new ManualClock(0), limits);
    const ids = [store.start(undefined, done), store.start(undefined, done), store.start(undefined, done)].map((t) => t.taskId);
    const p1 = store.list();
    assert.deepEqual(p1.tasks.map((t) => t.taskId), ids.slice(0, 2));
    assert.equal(typeof p1.nextCursor, 'string');
    const p2 = store.list(p1.nextCursor);
    assert.deepEqual(p2.tasks.map((t) => t.taskId), ids.slice(2));
    assert.equal(p2.nextCursor, undefined);
    assert.equal(code(() => store.list('made-up')), 'VALIDATION_FAILED');
  });

  it('closeAll (the session ended) aborts every running call and forgets every task; no new task starts', async () => {
    const store = new TaskStore(new ManualClock(0), limits);
    const a = controlled();
    const t = store.start(undefined, a.body);
    const waiting = store.result(t.taskId);
    await Promise.resolve();
    assert.equal(store.closeAll(), 1);
    assert.equal(a.run().signal.aborted, true);
    const answered = (await waiting).result.structuredContent as Record<string, unknown> | undefined;
    assert.equal(answered?.['error_code'], 'CALL_CANCELLED', 'a waiting tasks/result still gets its answer');
    assert.equal(store.size, 0);
    assert.equal(code(() => store.start(undefined, done)), 'TASK_LIMIT_REACHED');
  });

  it('a client that stops waiting for tasks/result does not cancel the task', async () => {
    const store = new TaskStore(new ManualClock(0), limits);
    const a = controlled();
    const t = store.start(undefined, a.body);
    const ctl = new AbortController();
    const waiting = store.result(t.taskId, ctl.signal);
    ctl.abort();
    await assert.rejects(waiting, (e: unknown) => isPosternError(e, 'CALL_CANCELLED'));
    await Promise.resolve();
    assert.equal(a.run().signal.aborted, false);
    assert.equal(store.get(t.taskId).status, 'working');
  });

  it('the daemon limits: polls as often as progress is sent, within 0.1–5 s; no ttl shorter than the approval timeout plus a minute', () => {
    const at = (progress: number, approval = 120) => taskLimits({ progress_interval_seconds: progress, approval_timeout_seconds: approval });
    assert.equal(at(5).pollIntervalMs, 5000);
    assert.equal(at(0.01).pollIntervalMs, 100);
    assert.equal(at(60).pollIntervalMs, 5000);
    assert.equal(at(5).minTtlMs, 180_000);
    assert.equal(at(5).defaultTtlMs, 15 * 60_000);
    const long = at(5, 7200);
    assert.equal(long.minTtlMs, 7_260_000);
    assert.ok(long.defaultTtlMs >= long.minTtlMs && long.maxTtlMs >= long.minTtlMs);
  });
});
