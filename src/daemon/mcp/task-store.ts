/**
 * One MCP session's tasks (MCP 2025-11-25 `tasks`): a task-augmented
 * `tools/call` becomes an entry here whose call runs on after the request
 * that created it was answered. The store knows nothing of MCP framing; the
 * session server (./session-server.ts) maps it onto `tasks/*`.
 *
 * Invariants:
 * - task ids are random UUIDs, unguessable, and a store belongs to one
 *   session: another session has another store, so it can neither see nor
 *   cancel these tasks (an unknown id and a foreign id answer alike);
 * - at most `maxTasks` entries; a new task evicts the oldest finished one,
 *   and when every entry is still running it is refused (TASK_LIMIT_REACHED);
 * - status moves only working → completed | failed | cancelled; a cancelled
 *   task stays cancelled whatever its call returns afterwards; a result with
 *   `isError` is `failed` (the spec's rule for tool calls);
 * - `ttl` (clamped to [minTtlMs, maxTtlMs], the default when not asked)
 *   counts from creation; a finished task is forgotten once its ttl has
 *   passed and its result has been there for `keepAfterEndMs` (so a call
 *   approved late still leaves time to fetch its result); a running one
 *   never (its call must end and be journaled first);
 * - `closeAll` (the session ended) aborts every running call and forgets
 *   every task; nothing survives its session;
 * - a task's `ended` listener hears of it once, when it ends;
 * - the store never reads the time itself: it is handed the daemon's Clock.
 */
import { randomUUID } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { Clock } from '../../clock/index.js';
import { PosternError } from '../../rules/errors.js';
import { toolErrorResult } from '../../protocol/tool-result.js';

type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** A task as the wire shows it (`Task` of MCP 2025-11-25). */
export interface TaskView {
  readonly taskId: string;
  readonly status: TaskStatus;
  readonly statusMessage: string;
  readonly createdAt: string;
  readonly lastUpdatedAt: string;
  readonly ttl: number;
  readonly pollInterval: number;
}

export interface TaskLimits {
  readonly maxTasks: number;
  readonly defaultTtlMs: number;
  readonly minTtlMs: number;
  readonly maxTtlMs: number;
  /** A finished task's result stays at least this long after its call ended, whatever its ttl. */
  readonly keepAfterEndMs: number;
  readonly pollIntervalMs: number;
  /** Tasks per `tasks/list` page. */
  readonly pageSize: number;
}

/** What a task's call is handed: the signal that cancels it, and a way to say where it stands. */
export interface TaskRun {
  readonly signal: AbortSignal;
  readonly status: (message: string) => void;
}

interface Entry {
  readonly id: string;
  status: TaskStatus;
  statusMessage: string;
  readonly createdAt: string;
  lastUpdatedAt: string;
  readonly createdMs: number;
  /** When the call settled (its result is there); null while it runs. */
  settledMs: number | null;
  readonly ttl: number;
  readonly ctl: AbortController;
  readonly ended: ((view: TaskView) => void) | undefined;
  readonly settled: Promise<CallToolResult>;
}

const isTerminal = (s: TaskStatus): boolean => s === 'completed' || s === 'failed' || s === 'cancelled';

/** A tool error's one-line message (already redacted by the pipeline), for a failed task's statusMessage. */
function failureMessage(result: CallToolResult): string {
  const sc = result.structuredContent as Record<string, unknown> | undefined;
  const code = typeof sc?.['error_code'] === 'string' ? sc['error_code'] : 'ERROR';
  const message = typeof sc?.['message'] === 'string' ? sc['message'] : 'the call failed';
  return `${code}: ${message}`;
}

export class TaskStore {
  readonly #entries = new Map<string, Entry>();
  readonly #clock: Clock;
  readonly #limits: TaskLimits;
  #closed = false;

  constructor(clock: Clock, limits: TaskLimits) {
    this.#clock = clock;
    this.#limits = limits;
  }

  /**
   * Starts `run` as a new task and returns it at once (status `working`);
   * `ended` hears of it once, when it reaches its end (completed, failed or cancelled).
   */
  start(requestedTtl: number | undefined, run: (r: TaskRun) => Promise<CallToolResult>, ended?: (view: TaskView) => void): TaskView {
    if (this.#closed) throw new PosternError('TASK_LIMIT_REACHED', 'the session is ending: no new task can start');
    this.#purge();
    this.#makeRoom();
    const now = this.#clock.now().toISOString();
    const ctl = new AbortController();
    const id = randomUUID();
    const ttl = Math.min(this.#limits.maxTtlMs, Math.max(this.#limits.minTtlMs, Math.floor(requestedTtl ?? this.#limits.defaultTtlMs)));
    let settle: (r: CallToolResult) => void = () => undefined;
    const entry: Entry = {
      id,
      status: 'working',
      statusMessage: 'the call is running',
      createdAt: now,
      lastUpdatedAt: now,
      createdMs: this.#clock.monotonicMs(),
      settledMs: null,
      ttl,
      ctl,
      ended,
      settled: new Promise<CallToolResult>((resolve) => (settle = resolve)),
    };
    this.#entries.set(id, entry);
    const status = (message: string): void => {
      if (isTerminal(entry.status)) return;
      entry.statusMessage = message;
      entry.lastUpdatedAt = this.#clock.now().toISOString();
    };
    const ran = Promise.resolve()
      .then(() => run({ signal: ctl.signal, status }))
      .catch((): CallToolResult => toolErrorResult('INTERNAL', 'the task failed unexpectedly', 'unknown'));
    void ran.then((result) => {
      if (!isTerminal(entry.status)) {
        entry.status = result.isError === true ? 'failed' : 'completed';
        entry.statusMessage = result.isError === true ? failureMessage(result) : 'the call completed';
        entry.lastUpdatedAt = this.#clock.now().toISOString();
        this.#announce(entry);
      }
      entry.settledMs = this.#clock.monotonicMs();
      settle(result);
    });
    return this.#view(entry);
  }

  get(id: string): TaskView {
    return this.#view(this.#find(id));
  }

  /** The call's result once the task has ended (its call settled); waits until then. */
  async result(id: string, signal?: AbortSignal): Promise<{ view: TaskView; result: CallToolResult }> {
    const entry = this.#find(id);
    const result = await new Promise<CallToolResult>((resolve, reject) => {
      if (signal?.aborted === true) return reject(new PosternError('CALL_CANCELLED', 'the client stopped waiting for the task result'));
      const onAbort = (): void => reject(new PosternError('CALL_CANCELLED', 'the client stopped waiting for the task result'));
      signal?.addEventListener('abort', onAbort, { once: true });
      void entry.settled.then((r) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(r);
      });
    });
    return { view: this.#view(entry), result };
  }

  /** Cancels a running task: it is `cancelled` before this returns, and its call is aborted. */
  cancel(id: string, message = 'the client cancelled the task'): TaskView {
    const entry = this.#find(id);
    if (isTerminal(entry.status)) throw new PosternError('TASK_ALREADY_ENDED', `cannot cancel the task: it already ended (${entry.status})`, { details: { status: entry.status } });
    this.#end(entry, message);
    return this.#view(entry);
  }

  /** One page of this session's tasks, oldest first; `cursor` is the opaque value a previous page returned. */
  list(cursor?: string): { tasks: TaskView[]; nextCursor?: string } {
    this.#purge();
    const all = [...this.#entries.values()];
    let start = 0;
    if (cursor !== undefined) {
      const at = all.findIndex((e) => e.id === cursor);
      if (at === -1) throw new PosternError('VALIDATION_FAILED', 'the tasks/list cursor is not one this session was given (or its task is gone)', { details: { field: 'cursor' } });
      start = at + 1;
    }
    const page = all.slice(start, start + this.#limits.pageSize);
    const more = start + page.length < all.length;
    const last = page.at(-1);
    return { tasks: page.map((e) => this.#view(e)), ...(more && last !== undefined ? { nextCursor: last.id } : {}) };
  }

  /** The session ended: every running call is aborted and every task forgotten. Returns how many were running. */
  closeAll(): number {
    this.#closed = true;
    let running = 0;
    for (const e of this.#entries.values()) {
      if (isTerminal(e.status)) continue;
      running++;
      this.#end(e, 'the session ended');
    }
    this.#entries.clear();
    return running;
  }

  get size(): number {
    return this.#entries.size;
  }

  #end(entry: Entry, message: string): void {
    entry.status = 'cancelled';
    entry.statusMessage = message;
    entry.lastUpdatedAt = this.#clock.now().toISOString();
    entry.ctl.abort();
    this.#announce(entry);
  }

  #announce(entry: Entry): void {
    try {
      entry.ended?.(this.#view(entry));
    } catch {
      // a listener's trouble never changes a task
    }
  }

  #find(id: string): Entry {
    this.#purge();
    const e = this.#entries.get(id);
    if (e === undefined) throw new PosternError('TASK_NOT_FOUND', 'there is no such task in this session (it may have expired)');
    return e;
  }

  #purge(): void {
    const now = this.#clock.monotonicMs();
    for (const [id, e] of this.#entries) {
      if (isTerminal(e.status) && e.settledMs !== null && now >= e.createdMs + e.ttl && now >= e.settledMs + this.#limits.keepAfterEndMs) this.#entries.delete(id);
    }
  }

  #makeRoom(): void {
    if (this.#entries.size < this.#limits.maxTasks) return;
    for (const [id, e] of this.#entries) {
      if (!isTerminal(e.status)) continue;
      this.#entries.delete(id);
      if (this.#entries.size < this.#limits.maxTasks) return;
    }
    throw new PosternError('TASK_LIMIT_REACHED', `this session already has ${this.#limits.maxTasks} tasks running; wait for one to end (or cancel one) before starting another`, {
      details: { max_tasks: this.#limits.maxTasks },
    });
  }

  #view(e: Entry): TaskView {
    return { taskId: e.id, status: e.status, statusMessage: e.statusMessage, createdAt: e.createdAt, lastUpdatedAt: e.lastUpdatedAt, ttl: e.ttl, pollInterval: this.#limits.pollIntervalMs };
  }
}

/** At most this many tasks (running or finished and kept) per session. */
const MAX_TASKS_PER_SESSION = 32;
/** A finished task is kept this long after its creation unless the client asks otherwise. */
const DEFAULT_TASK_TTL_MS = 15 * 60_000;
/** Bounds on the ttl a client may ask for: long enough to fetch a result, short enough not to hoard them. */
const MIN_TASK_TTL_MS = 60_000;
const MAX_TASK_TTL_MS = 60 * 60_000;
/** A result stays at least this long after its call ended. */
const KEEP_AFTER_END_MS = 60_000;

/**
 * The limits of a session's store, from the daemon's configuration: no ttl
 * shorter than the approval timeout plus a minute (a task approved at the
 * last moment still has its result kept), and polls as often as progress is
 * sent, within 0.1–5 s.
 */
export function taskLimits(config: { readonly progress_interval_seconds: number; readonly approval_timeout_seconds: number }): TaskLimits {
  const minTtlMs = Math.max(MIN_TASK_TTL_MS, Math.round(config.approval_timeout_seconds * 1000) + 60_000);
  return {
    maxTasks: MAX_TASKS_PER_SESSION,
    defaultTtlMs: Math.max(DEFAULT_TASK_TTL_MS, minTtlMs),
    minTtlMs,
    maxTtlMs: Math.max(MAX_TASK_TTL_MS, minTtlMs),
    keepAfterEndMs: KEEP_AFTER_END_MS,
    pollIntervalMs: Math.round(Math.min(5_000, Math.max(100, config.progress_interval_seconds * 1000))),
    pageSize: 50,
  };
}
