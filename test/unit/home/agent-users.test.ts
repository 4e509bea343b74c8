/**
 * The operator's list of other OS users allowed on the shared agent socket
 * (src/home/agent-users.ts): a list an agent edits, forges or breaks allows
 * nobody; users match by name, groups by membership.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { homePaths } from '../../../src/home/paths.js';
import { isAllowed, judgeAgentUsers, parseEntryName, readAgentUsers, writeAgentUsers } from '../../../src/home/agent-users.js';
import { isPosternError } from '../../../src/rules/errors.js';
import { ManualClock } from '../../helpers/clock.js';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function home() {
  const dir = await mkdtemp(join(tmpdir(), 'postern-agentusers-'));
  dirs.push(dir);
  return homePaths(dir);
}

describe('the agent users allow list', () => {
  const key = randomBytes(32);
  const at = new ManualClock('2026-03-01T12:00:00Z').now();

  it('allows nobody when absent; exactly what was written under this key', async () => {
    const paths = await home();
    assert.deepEqual(judgeAgentUsers(key, await readAgentUsers(paths)), { kind: 'none' });
    await writeAgentUsers(paths, key, [{ kind: 'user', name: 'ci-agent' }, { kind: 'group', name: 'agents' }], at);
    assert.deepEqual(judgeAgentUsers(key, await readAgentUsers(paths)), { kind: 'allowed', allowed: [{ kind: 'user', name: 'ci-agent' }, { kind: 'group', name: 'agents' }] });
    assert.equal(judgeAgentUsers(randomBytes(32), await readAgentUsers(paths)).kind, 'refused');
  });

  it('a forged entry (the MAC kept) or a broken file allows nobody', async () => {
    const paths = await home();
    await writeAgentUsers(paths, key, [{ kind: 'user', name: 'ci-agent' }], at);
    const doc = JSON.parse(await readFile(paths.agentUsers, 'utf8')) as { record: { allowed: unknown[] }; mac: string };
    doc.record.allowed.push({ kind: 'user', name: 'intruder' });
    await writeFile(paths.agentUsers, JSON.stringify(doc));
    const forged = judgeAgentUsers(key, await readAgentUsers(paths));
    assert.equal(forged.kind, 'refused');
    assert.match(forged.kind === 'refused' ? forged.reason : '', /does not verify/);
    await writeFile(paths.agentUsers, '{"record":');
    assert.deepEqual(judgeAgentUsers(key, await readAgentUsers(paths)), { kind: 'refused', reason: 'agents.allowed.json is malformed' });
  });

  it('matches a user by name and a group by membership, never a user by a group of the same name', () => {
    const list = [{ kind: 'user', name: 'ci-agent' }, { kind: 'group', name: 'agents' }] as const;
    assert.equal(isAllowed(list, 'ci-agent', []), true);
    assert.equal(isAllowed(list, 'other', ['agents']), true);
    assert.equal(isAllowed(list, 'agents', ['users']), false);
    assert.equal(isAllowed(list, null, []), false);
    assert.equal(isAllowed([], 'ci-agent', ['agents']), false);
  });

  it('refuses a name that is not a user or group name', () => {
    for (const bad of ['', '1abc', 'a b', 'a:b', '../x', 'x'.repeat(40)]) {
      assert.throws(() => parseEntryName(bad), (e: unknown) => isPosternError(e) && e.code === 'USAGE', bad);
    }
    assert.equal(parseEntryName('postern-agent-a'), 'postern-agent-a');
  });
});
