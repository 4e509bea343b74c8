// Shared helpers for the vault tests: private temp homes, cheap KDF options,
// and an assertion that a promise fails with a given PosternError code.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ErrorCode } from '../../../src/rules/errors.js';
import { PosternError } from '../../../src/rules/errors.js';
import type { VaultOptions } from '../../../src/vault/index.js';
import { boundsWithFloor } from '../../../src/vault/format.js';
import type { KdfBounds } from '../../../src/vault/format.js';

/** Argon2id's minimum cost: microseconds per derivation. */
export const CHEAP_KDF = { opslimit: 1, memlimit: 8192 } as const;
export const CHEAP: VaultOptions = { kdf: CHEAP_KDF, minimumKdf: CHEAP_KDF, kdfRunner: 'inline' };
export const CHEAP_BOUNDS: KdfBounds = boundsWithFloor(CHEAP_KDF);

export const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

/** A fresh 0700 directory under os.tmpdir(); `cleanup` removes it. */
export function tempHome(t: { after: (fn: () => void) => void }): { dir: string; vault: string } {
  const dir = mkdtempSync(join(tmpdir(), 'postern-vault-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return { dir, vault: join(dir, 'vault.pvlt') };
}

export async function subdir(parent: string, name: string, mode = 0o700): Promise<string> {
  const p = join(parent, name);
  await mkdir(p, { mode });
  return p;
}

export async function rejectsWith(p: Promise<unknown> | (() => unknown), code: ErrorCode, message?: RegExp): Promise<PosternError> {
  let caught: unknown;
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof PosternError, `expected PosternError ${code}, got ${String(caught)}`);
  assert.equal(caught.code, code, `expected ${code}, got ${caught.code}: ${caught.message}`);
  if (message !== undefined) assert.match(caught.message, message);
  assert.doesNotMatch(caught.message, /\n/, 'error messages are one line');
  return caught;
}
