/**
 * `postern doctor` and the ways around the SSH gateway for agents that run
 * as other OS users (docs/agent-users.md): real users made with useradd,
 * named in the allow list directly or through a group. With the gateway
 * enabled, doctor looks in each allowed account's `~/.ssh` (found through the
 * user database) and names the private key files there, by name only; an
 * account without keys is ok; a user taken off the list is not looked at;
 * with `--unlock`, a forged allow list is not believed.
 *
 * Needs root and useradd: skipped with the reason otherwise;
 * POSTERN_REQUIRE_OS_USERS=1 (CI) makes that a failure.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chownSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { install, type Installation } from '../helpers/daemon.js';
import { agentUser, osUsersSkip } from '../helpers/os-users.js';

const skip = osUsersSkip();
const USER_KEYS = 'postern-doc-a';
const USER_CLEAN = 'postern-doc-b';
const GROUP = 'postern-doc-g';

interface Finding {
  readonly status: string;
  readonly check: string;
  readonly detail: string;
  readonly fix?: string;
}

describe('doctor: private keys of the other OS users agents run as', { skip, timeout: 120_000 }, () => {
  let inst: Installation;
  let keyFile: string;
  const outputs: string[] = [];

  async function doctor(...extra: string[]): Promise<Finding[]> {
    const r = await inst.sb.run(['doctor', '--json', ...extra]);
    assert.equal(r.code, 0, r.stderr);
    outputs.push(r.stdout, r.stderr);
    return JSON.parse(r.stdout) as Finding[];
  }
  const keysOf = (all: readonly Finding[], user: string): Finding | undefined => all.find((f) => f.check === `agent SSH keys (user ${user})`);

  function account(user: string, groups: readonly string[] = []): string {
    const home = join(inst.sb.dir, `home-${user}`);
    const who = agentUser(user, { home, groups });
    mkdirSync(join(home, '.ssh'), { recursive: true, mode: 0o700 });
    chownSync(home, who.uid, who.gid);
    chownSync(join(home, '.ssh'), who.uid, who.gid);
    return home;
  }

  before(async () => {
    inst = await install({ secrets: [] });
    const keyed = account(USER_KEYS);
    keyFile = join(keyed, '.ssh', 'work_key');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'work', '-f', keyFile]);
    const clean = account(USER_CLEAN, [GROUP]);
    writeFileSync(join(clean, '.ssh', 'known_hosts'), 'example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n');
    for (const args of [['ssh-gateway', 'enable', '--port', '0'], ['agents', 'allow', USER_KEYS], ['agents', 'allow', '--group', GROUP]]) {
      const r = await inst.sb.run([...args, '--passphrase-file', inst.passFile]);
      assert.equal(r.code, 0, r.stderr);
    }
  });

  after(async () => {
    const body = readFileSync(keyFile, 'utf8').split('\n').filter((l) => /^[A-Za-z0-9+/=]{20,}$/.test(l));
    for (const out of outputs) for (const l of body) assert.ok(!out.includes(l), 'a line of the key reached doctor\'s output');
    await inst.cleanup();
  });

  it('names the key file of an allowed user and says a group member without keys is ok', async () => {
    const all = await doctor();
    const keyed = keysOf(all, USER_KEYS);
    assert.equal(keyed?.status, 'warning', JSON.stringify(all));
    assert.match(keyed.detail, /holds 1 private key file\(s\) \(work_key\): any process of postern-doc-a/);
    assert.match(keyed.fix ?? '', /postern secret add NAME --kind ssh_key/);
    const clean = keysOf(all, USER_CLEAN);
    assert.equal(clean?.status, 'ok', JSON.stringify(all));
    assert.match(clean.detail, /no private key in .*home-postern-doc-b/);
  });

  it('--unlock believes the list only when it verifies with the vault', async () => {
    const verified = await doctor('--unlock', '--passphrase-file', inst.passFile);
    assert.equal(keysOf(verified, USER_KEYS)?.status, 'warning');
    const listFile = join(inst.sb.home, 'agents.allowed.json');
    const doc = JSON.parse(readFileSync(listFile, 'utf8')) as { record: { allowed: unknown[] }; mac: string };
    doc.record.allowed.push({ kind: 'user', name: 'root' });
    writeFileSync(listFile, JSON.stringify(doc));
    const forged = await doctor('--unlock', '--passphrase-file', inst.passFile);
    assert.equal(keysOf(forged, USER_KEYS), undefined, 'a forged list allows nobody, so nobody is looked at');
    assert.equal(keysOf(forged, 'root'), undefined);
  });

  it('a user taken off the list is not looked at', async () => {
    // The forged list above is replaced whole by the next write: allow both again.
    for (const args of [['agents', 'allow', USER_KEYS], ['agents', 'allow', '--group', GROUP]]) {
      const write = await inst.sb.run([...args, '--passphrase-file', inst.passFile]);
      assert.equal(write.code, 0, write.stderr);
    }
    assert.equal(keysOf(await doctor(), USER_KEYS)?.status, 'warning');
    const revoke = await inst.sb.run(['agents', 'revoke', USER_KEYS, '--passphrase-file', inst.passFile]);
    assert.equal(revoke.code, 0, revoke.stderr);
    const all = await doctor();
    assert.equal(keysOf(all, USER_KEYS), undefined);
    assert.equal(keysOf(all, USER_CLEAN)?.status, 'ok');
  });
});
