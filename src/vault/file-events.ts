/**
 * The numbered file events of a home change, and the test-only crash point
 * on them. Every write, fsync, rename and unlink the crash-atomic writers
 * make (home/atomic-write.ts, home/change-record.ts), every direct save of
 * the vault file (files.ts), every append to the pending secrets, every write of the
 * journal anchor and of a signed checkpoint, and every commit of a journal
 * the process owns calls `fileEvent` once, in order. (Here, beside the test
 * switch it depends on, so the home and the journals share it.)
 *
 * POSTERN_TEST_KILL_AT_FILE_EVENT=N makes the process SIGKILL itself at its
 * Nth event — exactly what a `kill -9` between two system calls does. It is
 * honoured only when the test key-derivation switch (POSTERN_TEST_KDF, see
 * src/vault/kdf-profile.ts) is on as well, so no production process can be
 * made to crash by a stray variable; any value that is not a positive integer
 * is ignored. Read once per process.
 *
 * POSTERN_TEST_KILL_SCOPE=NAME (same switch) counts only the events made
 * inside `fileEventScope(NAME, …)` — the async work that scope started, not
 * what runs beside it — so a test can kill a long-running process (the
 * daemon) at every file event of one path, e.g. the refresh-token
 * write-back, whatever else it writes meanwhile.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { TEST_KDF_SWITCH, TEST_KDF_SWITCH_VALUE } from './test-switch.js';

export const KILL_AT_FILE_EVENT = 'POSTERN_TEST_KILL_AT_FILE_EVENT';
export const KILL_SCOPE = 'POSTERN_TEST_KILL_SCOPE';

function killPoint(env: NodeJS.ProcessEnv): number | undefined {
  if (env[TEST_KDF_SWITCH] !== TEST_KDF_SWITCH_VALUE) return undefined;
  const v = env[KILL_AT_FILE_EVENT];
  return v !== undefined && /^[1-9][0-9]{0,6}$/.test(v) ? Number(v) : undefined;
}

function killScope(env: NodeJS.ProcessEnv): string | undefined {
  if (env[TEST_KDF_SWITCH] !== TEST_KDF_SWITCH_VALUE) return undefined;
  const v = env[KILL_SCOPE];
  return v !== undefined && /^[a-z][a-z-]{0,40}$/.test(v) ? v : undefined;
}

const killAt = killPoint(process.env);
const scopeName = killScope(process.env);
const scope = scopeName === undefined ? undefined : new AsyncLocalStorage<string>();
let seen = 0;

/** Runs `fn` as the named path of file events (only a test kill scope looks at the name). */
export function fileEventScope<T>(name: string, fn: () => Promise<T>): Promise<T> {
  return scope === undefined ? fn() : scope.run(name, fn);
}

/** Marks one file event (after it happened); the test crash point fires here. */
export function fileEvent(): void {
  if (killAt === undefined) return;
  if (scope !== undefined && scope.getStore() !== scopeName) return;
  seen++;
  if (seen === killAt) process.kill(process.pid, 'SIGKILL');
}
