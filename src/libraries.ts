/**
 * The libraries a process loads on first use (docs/decisions.md, "Performance"). undici and
 * ssh2 are CommonJS: each is required, synchronously, the first time a caller needs it, so a
 * daemon that sends no HTTP request and opens no SSH connection — a start, a replay, a stop —
 * never parses them (about a fifth of a daemon's start), and the code that uses them stays
 * synchronous. Types come from `import type`, which loads nothing.
 */
import { createRequire } from 'node:module';
import type * as Undici from 'undici';
import type Ssh2 from 'ssh2';

const load = createRequire(import.meta.url);
let undiciModule: typeof Undici | undefined;
let ssh2Module: typeof Ssh2 | undefined;

/** undici (the HTTP executor's client, pools and connector). */
export const undici = (): typeof Undici => (undiciModule ??= load('undici') as typeof Undici);

/** ssh2 (the SSH executor's client, the gateway's server, key parsing). */
export const ssh2 = (): typeof Ssh2 => (ssh2Module ??= load('ssh2') as typeof Ssh2);
