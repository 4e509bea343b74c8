/**
 * The HTTP listener's token file (src/daemon/http/token.ts): made once, 0600,
 * reused across restarts only from a clean file of ours; anything else at the
 * path is replaced, never followed.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, lstatSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureToken } from '../../../src/daemon/http/token.js';

const dir = mkdtempSync(join(tmpdir(), 'postern-token-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('the HTTP listener token file', () => {
  it('is made with 32 random bytes, 0600, and reused at the next start', async () => {
    const path = join(dir, 'a.token');
    const first = await ensureToken(path);
    assert.equal(first.created, true);
    assert.match(first.token, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(Buffer.from(first.token, 'base64url').length, 32);
    assert.equal(lstatSync(path).mode & 0o777, 0o600);
    assert.deepEqual(await ensureToken(path), { token: first.token, created: false });
    assert.notEqual((await ensureToken(join(dir, 'b.token'))).token, first.token);
  });

  it('replaces a loose file, other content, or a symlink (whose target is left alone)', async () => {
    const path = join(dir, 'c.token');
    const { token } = await ensureToken(path);
    chmodSync(path, 0o644);
    const loose = await ensureToken(path);
    assert.equal(loose.created, true);
    assert.notEqual(loose.token, token);
    assert.equal(lstatSync(path).mode & 0o777, 0o600);
    writeFileSync(path, 'short\n', { mode: 0o600 });
    assert.equal((await ensureToken(path)).created, true);
    const victim = join(dir, 'victim');
    writeFileSync(victim, `${'A'.repeat(43)}\n`, { mode: 0o600 });
    const link = join(dir, 'd.token');
    symlinkSync(victim, link);
    const viaLink = await ensureToken(link);
    assert.equal(viaLink.created, true, 'a planted link is never trusted');
    assert.ok(lstatSync(link).isFile());
    assert.equal(readFileSync(victim, 'utf8'), `${'A'.repeat(43)}\n`);
  });
});
