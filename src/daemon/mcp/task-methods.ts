/**
 * The MCP 2025-11-25 task methods — `tasks/get`, `tasks/result`, `tasks/list`
 * and `tasks/cancel` — served from one session's TaskStore. SDK 2.4 keeps
 * these only as wire vocabulary (its typed `setRequestHandler` excludes
 * them), so they are registered through its schema form with our own zod
 * params; its 2025 era dispatches them, its 2026-07-28 era answers
 * `tasks/result` and `tasks/list` "Method not found" itself and lets
 * `tasks/get` / `tasks/cancel` through (SEP-2663 reuses the names), which we
 * answer the same way: tasks are offered in the 2025-11-25 era only.
 *
 * Invariants: every failure is a JSON-RPC error (the spec's codes: -32602
 * for an unknown or foreign task id, a bad cursor, or cancelling a task that
 * ended; -32601 where tasks are not offered) whose `data` carries the stable
 * Postern `error_code` and `required_action`; `tasks/result` blocks until the
 * task ends and returns exactly the call's CallToolResult with the
 * `io.modelcontextprotocol/related-task` key in its `_meta`; the other
 * results carry no related-task key; a client that stops waiting for
 * `tasks/result` does not cancel the task.
 */
import { ProtocolError, ProtocolErrorCode, RELATED_TASK_META_KEY, type CallToolResult, type Server } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { ErrorCodes, isPosternError, PosternError, type ErrorCode } from '../../rules/errors.js';
import type { TaskStore } from './task-store.js';

interface TaskHost {
  /** Whether this session is offered tasks (era 2025-11-25 and a client that declared `capabilities.tasks`). */
  offered(): boolean;
  readonly store: TaskStore;
  /** The call's result as this session's era puts it on the wire. */
  project(result: CallToolResult): CallToolResult;
}

const taskId = z.string().min(1).max(200);
const meta = { _meta: z.record(z.string(), z.unknown()).optional() };
const ByIdSchema = z.looseObject({ taskId, ...meta });
const ListSchema = z.looseObject({ cursor: z.string().max(200).optional(), ...meta });

/** The JSON-RPC code of each task failure: the spec's -32601 for a tool that does not run as a task, -32600 for a full store, -32602 for the rest (an unknown task, a bad cursor, cancelling an ended task). */
const RPC_CODES: Partial<Record<ErrorCode, number>> = {
  TASK_NOT_SUPPORTED: ProtocolErrorCode.MethodNotFound,
  TASK_LIMIT_REACHED: ProtocolErrorCode.InvalidRequest,
  INTERNAL: ProtocolErrorCode.InternalError,
};

/** A task failure as the JSON-RPC error the client is answered with (never a stack, never a secret). */
export function taskProtocolError(e: unknown): ProtocolError {
  if (e instanceof ProtocolError) return e;
  const err = isPosternError(e) ? e : new PosternError('INTERNAL', 'the task request failed unexpectedly');
  return new ProtocolError(RPC_CODES[err.code] ?? ProtocolErrorCode.InvalidParams, err.message, {
    error_code: err.code,
    required_action: ErrorCodes[err.code].action,
    ...err.details,
  });
}

function notOffered(): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.MethodNotFound, 'Method not found: this session was not offered MCP tasks (they need protocol 2025-11-25 and a client that declares the tasks capability)');
}

export function registerTaskMethods(server: Server, host: TaskHost): void {
  const guard = <T>(run: () => T): T => {
    if (!host.offered()) throw notOffered();
    try {
      return run();
    } catch (e) {
      throw taskProtocolError(e);
    }
  };
  server.setRequestHandler('tasks/get', { params: ByIdSchema }, (p) => guard(() => ({ ...host.store.get(p.taskId) })));
  server.setRequestHandler('tasks/list', { params: ListSchema }, (p) => guard(() => host.store.list(p.cursor)));
  server.setRequestHandler('tasks/cancel', { params: ByIdSchema }, (p) => guard(() => ({ ...host.store.cancel(p.taskId) })));
  server.setRequestHandler('tasks/result', { params: ByIdSchema }, async (p, ctx) => {
    const waiting = guard(() => host.store.result(p.taskId, ctx.mcpReq.signal));
    const { result } = await waiting.catch((e: unknown) => {
      throw taskProtocolError(e);
    });
    const projected = host.project(result);
    return { ...projected, _meta: { ...projected._meta, [RELATED_TASK_META_KEY]: { taskId: p.taskId } } };
  });
}
