/**
 * The HTTP listener's bearer token: 32 random bytes (base64url), made by the
 * daemon and kept in `run/mcp-http.token` (0600, in the 0700 run directory),
 * the same protection as the agent socket beside it. It survives restarts so
 * a configured agent host keeps working; delete the file to rotate it.
 *
 * Invariants: a token is reused only from a regular file of ours, mode 0600,
 * holding exactly one well-formed token; anything else (a symlink, a foreign
 * or loose file, other content) is replaced by a fresh token written with the
 * atomic 0600 writer, which renames over the path and never follows a link.
 * Tokens are compared in constant time, over digests of equal length.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { lstat, readFile } from 'node:fs/promises';
import { atomicWriteFile } from '../../home/atomic-write.js';

const TOKEN_BYTES = 32;
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

async function reusable(path: string): Promise<string | null> {
  try {
    const st = await lstat(path);
    const uid = typeof process.getuid === 'function' ? process.getuid() : st.uid;
    if (!st.isFile() || st.uid !== uid || (st.mode & 0o077) !== 0) return null;
    const text = (await readFile(path, 'utf8')).trim();
    return TOKEN_SHAPE.test(text) ? text : null;
  } catch {
    return null;
  }
}

/** The token in `path`, made (or replaced) when there is no usable one. */
export async function ensureToken(path: string): Promise<{ token: string; created: boolean }> {
  const old = await reusable(path);
  if (old !== null) return { token: old, created: false };
  const token = randomBytes(TOKEN_BYTES).toString('base64url');
  await atomicWriteFile(path, `${token}\n`);
  return { token, created: true };
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** Whether an `Authorization` header value carries exactly this token (constant time). */
export function bearerMatches(header: string | undefined, token: string): boolean {
  if (header === undefined) return false;
  const m = /^Bearer[ ]+([^ ]+)[ ]*$/i.exec(header);
  const given = m?.[1] ?? '';
  return timingSafeEqual(digest(given), digest(token)) && given.length > 0;
}
