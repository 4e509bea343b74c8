/**
 * The findings of doctor's look for ways around the SSH gateway
 * (src/cli/ssh-bypass.ts) that the e2e tests cannot reach as root: a `~/.ssh`
 * the operator may not read, and the accounts an allow list names.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { userInfo } from 'node:os';
import { allowedAccounts, keysFinding } from '../../../src/cli/ssh-bypass.js';

describe('ssh-bypass findings', () => {
  it('a ~/.ssh that may not be read is a warning that says so and how to look, naming the user', () => {
    const f = keysFinding('/home/agent/.ssh', null, 'agent');
    assert.equal(f.status, 'warning');
    assert.equal(f.check, 'agent SSH keys (user agent)');
    assert.match(f.detail, /may not be read by this user, so whether it holds private keys is unknown/);
    assert.ok(f.status === 'warning' && /sudo postern doctor/.test(f.fix));
  });

  it('the operator\'s own finding keeps its check name; an empty folder is ok', () => {
    const f = keysFinding('/home/me/.ssh', [], undefined);
    assert.deepEqual(f, { status: 'ok', check: 'agent SSH keys', detail: 'no private key in /home/me/.ssh' });
  });

  it('allowedAccounts: the operator is left out, unknown names are dropped, nothing listed is nothing', async () => {
    const me = userInfo().username;
    assert.deepEqual(await allowedAccounts([], me), []);
    assert.deepEqual(await allowedAccounts([{ kind: 'user', name: me }], me), []);
    assert.deepEqual(await allowedAccounts([{ kind: 'user', name: 'postern-no-such-user' }, { kind: 'group', name: 'postern-no-such-group' }], me), []);
    const root = await allowedAccounts([{ kind: 'user', name: 'root' }], me === 'root' ? null : me);
    assert.deepEqual(root, [{ name: 'root', home: '/root' }]);
  });
});
