/**
 * The numbered file events of a home change, and the test-only crash point
 * on them. Every write, fsync, rename and unlink the crash-atomic writers
 * make (home/atomic-write.ts, home/change-record.ts), every write of the
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
 */
import { TEST_KDF_SWITCH, TEST_KDF_SWITCH_VALUE } from './kdf-profile.js';

export const KILL_AT_FILE_EVENT = 'POSTERN_TEST_KILL_AT_FILE_EVENT';

function killPoint(env: NodeJS.ProcessEnv): number | undefined {
  if (env[TEST_KDF_SWITCH] !== TEST_KDF_SWITCH_VALUE) return undefined;
  const v = env[KILL_AT_FILE_EVENT];
  return v !== undefined && /^[1-9][0-9]{0,6}$/.test(v) ? Number(v) : undefined;
}

const killAt = killPoint(process.env);
let seen = 0;

/** Marks one file event (after it happened); the test crash point fires here. */
export function fileEvent(): void {
  if (killAt === undefined) return;
  seen++;
  if (seen === killAt) process.kill(process.pid, 'SIGKILL');
}
