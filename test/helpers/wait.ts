/**
 * The one way a test waits for something that happens elsewhere (a child's
 * log line, a journal row, a message on a socket) when the code offers no
 * event to await: check `cond` now and every `everyMs` until it holds, and
 * fail with `what` after `timeoutMs`. The timeout only bounds a broken run;
 * a passing run never depends on it, so a slow machine is never a failure.
 * `what` may be a function, called only on failure, to put the state at that
 * moment (the screen, the log) into the message.
 */
import assert from 'node:assert/strict';

export async function waitFor(cond: () => boolean | Promise<boolean>, what: string | (() => string), opts: { timeoutMs?: number; everyMs?: number } = {}): Promise<void> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const everyMs = opts.everyMs ?? 10;
  const end = performance.now() + timeoutMs;
  while (!(await cond())) {
    if (performance.now() > end) assert.fail(`waited ${timeoutMs / 1000} s for ${typeof what === 'string' ? what : what()}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * Resolves after `ms`: only to let a random moment pass (a kill at a random
 * point), or as the named settle window of a negative ("X does not happen")
 * when nothing marks the moment X would have happened; never to wait for an event.
 */
export function pause(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
