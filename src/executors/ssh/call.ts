/**
 * One SSH call's limits and its early stop (deadline, cancellation, pool
 * shutdown), shared by executeSsh and SshPool.
 *
 * Invariants:
 * - Options are checked before anything is sent (INPUT_INVALID).
 * - The deadline runs from the start of the call and covers every phase:
 *   waiting for a channel slot, connecting, opening the channel, the command.
 * - A call stops at most once; the first cause wins, and its error depends on
 *   the phase: `side_effect_started` is true only in phase `command` (the exec
 *   request was sent).
 */
import { PosternError } from '../../rules/errors.js';
import type { SshExecOptions } from './types.js';
import { DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_SSH_CONNECT_TIMEOUT_MS, DEFAULT_SSH_TIMEOUT_MS } from './types.js';

export interface Limits {
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly maxOutputBytes: number;
  /** Bytes kept past each cap for redaction (see SshExecOptions.readPastCapBytes). */
  readonly readPastCapBytes: number;
}

export interface Where {
  readonly host: string;
  readonly port: number;
}

/** Where a call was when it stopped: waiting for a pool slot, connecting, opening its channel, or after exec. */
type Phase = 'queue' | 'connect' | 'channel' | 'command';

/** The error for a call stopped early in `phase`. */
export type StopError = (phase: Phase) => PosternError;

export function checkedLimits(opts: SshExecOptions): Limits {
  const limits: Limits = {
    timeoutMs: opts.timeoutMs ?? DEFAULT_SSH_TIMEOUT_MS,
    connectTimeoutMs: opts.connectTimeoutMs ?? DEFAULT_SSH_CONNECT_TIMEOUT_MS,
    maxOutputBytes: opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
    readPastCapBytes: opts.readPastCapBytes ?? 0,
  };
  for (const [name, n] of Object.entries(limits)) {
    const least = name === 'readPastCapBytes' ? 0 : 1;
    if (!Number.isSafeInteger(n) || n < least) throw invalid(`${name} must be ${least === 0 ? 'a non-negative' : 'a positive'} integer`);
  }
  return limits;
}

export function checkedCommand(command: string): string {
  if (command.includes('\0')) throw invalid('the command contains a NUL byte');
  return command;
}

export function invalid(message: string): PosternError {
  return new PosternError('INPUT_INVALID', message, { sideEffectStarted: false });
}

export function timeoutError(where: Where, timeoutMs: number): StopError {
  return (phase) =>
    new PosternError('TARGET_TIMEOUT', `the SSH command on ${where.host}:${where.port} did not finish within ${timeoutMs} ms`, {
      details: { ...where, timeout_ms: timeoutMs, phase },
      sideEffectStarted: phase === 'command',
    });
}

export function cancelledError(where: Where): StopError {
  return (phase) =>
    new PosternError(
      'CALL_CANCELLED',
      phase === 'command'
        ? `the call was cancelled while the SSH command ran on ${where.host}:${where.port}; it was sent TERM`
        : `the call was cancelled before the SSH command was sent to ${where.host}:${where.port}`,
      { details: { ...where, phase }, sideEffectStarted: phase === 'command' },
    );
}

/**
 * A call's early stop. `signal` aborts once, on the deadline or on the first
 * `follow`ed signal or `stopNow`; `error(phase)` is then the call's error.
 */
export class CallStop {
  private readonly controller = new AbortController();
  private cause: StopError | null = null;
  private readonly timer: NodeJS.Timeout;
  private readonly cleanups: (() => void)[] = [];

  constructor(timeoutMs: number, onTimeout: StopError) {
    this.timer = setTimeout(() => this.stopNow(onTimeout), timeoutMs);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Stops the call when `signal` aborts (at once when it already has). */
  follow(signal: AbortSignal | undefined, cause: StopError): void {
    if (signal === undefined) return;
    if (signal.aborted) {
      this.stopNow(cause);
      return;
    }
    const listener = (): void => this.stopNow(cause);
    signal.addEventListener('abort', listener, { once: true });
    this.cleanups.push(() => signal.removeEventListener('abort', listener));
  }

  stopNow(cause: StopError): void {
    if (this.cause !== null) return;
    this.cause = cause;
    this.controller.abort();
  }

  error(phase: Phase): PosternError {
    if (this.cause === null) throw new Error('CallStop.error before the call stopped');
    return this.cause(phase);
  }

  /** Waits for `p`, unless the call stops first: then rejects with the error for `phase`. */
  race<T>(p: Promise<T>, phase: Phase): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const onStop = (): void => reject(this.error(phase));
      if (this.signal.aborted) onStop();
      else this.signal.addEventListener('abort', onStop, { once: true });
      p.then(
        (v) => {
          this.signal.removeEventListener('abort', onStop);
          resolve(v);
        },
        (e: unknown) => {
          this.signal.removeEventListener('abort', onStop);
          reject(e instanceof Error ? e : new Error(String(e)));
        },
      );
    });
  }

  dispose(): void {
    clearTimeout(this.timer);
    for (const c of this.cleanups.splice(0)) c();
  }
}

/** The daemon's hook must not break the call it is told about. */
export function notify(hook: (() => void) | undefined): void {
  try {
    hook?.();
  } catch {
    // ignored: the daemon learns the outcome from the result
  }
}
