/**
 * The libraries a process loads on first use (docs/decisions.md, "Performance"): one list, so
 * a daemon's start and a command's run parse none of them until a caller needs one. undici and
 * ssh2 are CommonJS: each is required, synchronously, so the code that uses them stays
 * synchronous; a daemon that sends no HTTP request and opens no SSH connection — a start, a
 * replay, a stop — never parses them (about a fifth of a daemon's start). WebAuthn, the
 * PostgreSQL driver and the QR encoder are used in async code only and are imported there.
 * Types come from `import type`, which loads nothing.
 */
import { createRequire } from 'node:module';
import type * as Undici from 'undici';
import type Ssh2 from 'ssh2';
import type * as WebAuthn from '@simplewebauthn/server';
import type Pg from 'pg';
import type QRCode from 'qrcode';

const load = createRequire(import.meta.url);
let undiciModule: typeof Undici | undefined;
let ssh2Module: typeof Ssh2 | undefined;

/** undici (the HTTP executor's client, pools and connector). */
export const undici = (): typeof Undici => (undiciModule ??= load('undici') as typeof Undici);

/** ssh2 (the SSH executor's client, the gateway's server, key parsing). */
export const ssh2 = (): typeof Ssh2 => (ssh2Module ??= load('ssh2') as typeof Ssh2);

/** The WebAuthn library (passkeys on the approval page), with its ASN.1 dependencies. */
export const webauthn = (): Promise<typeof WebAuthn> => import('@simplewebauthn/server');

/** The PostgreSQL driver (journals shipped, team queries). */
export const pg = async (): Promise<typeof Pg> => (await import('pg')).default;

/** The QR encoder (the approval page's link printed in a terminal). */
export const qrcode = async (): Promise<typeof QRCode> => (await import('qrcode')).default;
