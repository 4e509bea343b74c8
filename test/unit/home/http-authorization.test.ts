// @subject time: authorization times (run again a year ahead by .ci/run)
/**
 * The operator's authorization of the HTTP listener
 * (src/home/http-authorization.ts) and its re-authentication by `passwd`
 * (src/home/rekey.ts): an edit of config.yaml alone opens nothing.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { homePaths } from '../../../src/home/paths.js';
import { judgeHttpAuthorization, readHttpAuthorization, writeHttpAuthorization } from '../../../src/home/http-authorization.js';
import { HomeChange } from '../../../src/home/change-record.js';
import { prepareReauthentication } from '../../../src/home/rekey.js';
import { ManualClock } from '../../helpers/clock.js';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function home() {
  const dir = await mkdtemp(join(tmpdir(), 'postern-httpauth-'));
  dirs.push(dir);
  return homePaths(dir);
}

describe('the HTTP listener authorization', () => {
  const key = randomBytes(32);
  const at = new ManualClock('2026-03-01T12:00:00Z').now();

  it('authorizes exactly the port it was written for, under this key', async () => {
    const paths = await home();
    assert.deepEqual(judgeHttpAuthorization(key, await readHttpAuthorization(paths), 7469), { kind: 'refused', reason: 'config.yaml enables it, but it was never authorized with the passphrase' });
    await writeHttpAuthorization(paths, key, 7469, at);
    assert.deepEqual(judgeHttpAuthorization(key, await readHttpAuthorization(paths), 7469), { kind: 'authorized' });
    assert.equal(judgeHttpAuthorization(key, await readHttpAuthorization(paths), 8000).kind, 'refused');
    assert.equal(judgeHttpAuthorization(randomBytes(32), await readHttpAuthorization(paths), 7469).kind, 'refused');
  });

  it('refuses an edited, forged or malformed record', async () => {
    const paths = await home();
    await writeHttpAuthorization(paths, key, 7469, at);
    const stored = JSON.parse(await readFile(paths.mcpHttpAuthorization, 'utf8')) as { record: { port: number }; mac: string };
    for (const text of [
      JSON.stringify({ ...stored, record: { ...stored.record, port: 8000 } }),
      JSON.stringify({ ...stored, mac: stored.mac.replace(/^./, (c) => (c === '0' ? '1' : '0')) }),
      JSON.stringify({ ...stored, mac: stored.mac.toUpperCase() }),
      JSON.stringify({ ...stored, mac: '' }),
      JSON.stringify({ ...stored, extra: 1 }),
      '{',
      '[]',
    ]) {
      await writeFile(paths.mcpHttpAuthorization, text);
      for (const port of [7469, 8000]) assert.equal(judgeHttpAuthorization(key, await readHttpAuthorization(paths), port).kind, 'refused', text);
    }
  });

  it('is re-authenticated by a passphrase change only when it verifies under the old key', async () => {
    const paths = await home();
    const newKey = randomBytes(32);
    await writeHttpAuthorization(paths, key, 7469, at);
    const stage = await prepareReauthentication(paths, { old: () => key, new: () => newKey });
    const change = new HomeChange(paths, 'passwd');
    const summaries = stage(change);
    await change.commit();
    assert.ok(summaries.includes('HTTP listener authorization: re-authenticated'), summaries.join('\n'));
    assert.equal(judgeHttpAuthorization(newKey, await readHttpAuthorization(paths), 7469).kind, 'authorized');
    assert.equal(judgeHttpAuthorization(key, await readHttpAuthorization(paths), 7469).kind, 'refused');
    // A forged one is left failing, never laundered.
    await writeHttpAuthorization(paths, randomBytes(32), 7469, at);
    const again = (await prepareReauthentication(paths, { old: () => newKey, new: () => key }))(new HomeChange(paths, 'passwd'));
    assert.ok(again.some((l) => l.startsWith('HTTP listener authorization: does NOT verify')), again.join('\n'));
    assert.equal(judgeHttpAuthorization(key, await readHttpAuthorization(paths), 7469).kind, 'refused');
  });
});
