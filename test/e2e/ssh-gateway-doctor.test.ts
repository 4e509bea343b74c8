/**
 * `postern doctor` and the ways around the SSH gateway, with the real
 * programs: keys made by OpenSSH's `ssh-keygen` in the user's `~/.ssh`, and a
 * real `ssh-agent` reached through `SSH_AUTH_SOCK`, loaded and emptied with
 * `ssh-add`. Proves: with the gateway enabled, doctor warns of each private
 * key file (by name, never its bytes; a hostile name escaped) and of an agent
 * that holds keys, with what closes the gap; a public key, an empty agent or
 * a socket nobody answers are ok; with the gateway off nothing is said.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { install, type Installation } from '../helpers/daemon.js';
import { sshdSkip } from '../helpers/sshd.js';
import { waitFor } from '../helpers/wait.js';

const skip = sshdSkip();

interface Finding {
  readonly status: string;
  readonly check: string;
  readonly detail: string;
  readonly fix?: string;
}

describe('doctor: private keys and an ssh-agent that bypass the SSH gateway', { skip, timeout: 120_000 }, () => {
  let inst: Installation;
  let home: string;
  let dotSsh: string;
  let agent: ChildProcess | null = null;
  const outputs: string[] = [];

  async function doctor(env: Record<string, string> = {}): Promise<{ json: Finding[]; text: string }> {
    const j = await inst.sb.run(['doctor', '--json'], { env: { HOME: home, ...env } });
    const t = await inst.sb.run(['doctor'], { env: { HOME: home, ...env } });
    assert.equal(j.code, 0, j.stderr);
    assert.equal(t.code, 0, t.stderr);
    outputs.push(j.stdout, j.stderr, t.stdout, t.stderr);
    return { json: JSON.parse(j.stdout) as Finding[], text: t.stdout };
  }

  const finding = (all: readonly Finding[], check: string): Finding | undefined => all.find((f) => f.check === check);

  before(async () => {
    inst = await install({ secrets: [] });
    home = join(inst.sb.dir, 'agent-home');
    dotSsh = join(home, '.ssh');
    mkdirSync(dotSsh, { recursive: true, mode: 0o700 });
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'agent', '-f', join(dotSsh, 'id_ed25519')]);
    execFileSync('ssh-keygen', ['-q', '-t', 'rsa', '-b', '2048', '-m', 'PEM', '-N', '', '-C', 'agent', '-f', join(dotSsh, 'deploy_rsa')]);
    writeFileSync(join(dotSsh, 'known_hosts'), 'example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n');
    writeFileSync(join(dotSsh, 'config'), 'Host *\n  IdentitiesOnly yes\n');
  });

  after(async () => {
    agent?.kill();
    for (const name of ['id_ed25519', 'deploy_rsa']) {
      const path = existsSync(join(dotSsh, name)) ? join(dotSsh, name) : join(home, name);
      const body = readFileSync(path, 'utf8').split('\n').filter((l) => /^[A-Za-z0-9+/=]{20,}$/.test(l));
      for (const out of outputs) for (const l of body) assert.ok(!out.includes(l), `a line of ${name} reached doctor's output`);
    }
    await inst.cleanup();
  });

  it('with the gateway off, doctor says nothing of SSH keys', async () => {
    const { json } = await doctor();
    assert.equal(finding(json, 'agent SSH keys'), undefined);
    assert.equal(finding(json, 'agent SSH_AUTH_SOCK'), undefined);
  });

  it('with the gateway on, each private key file is named (not the public key, known_hosts or config), with the fix', async () => {
    const enable = await inst.sb.run(['ssh-gateway', 'enable', '--port', '0', '--passphrase-file', inst.passFile]);
    assert.equal(enable.code, 0, enable.stderr);
    const { json, text } = await doctor();
    const keys = finding(json, 'agent SSH keys');
    assert.equal(keys?.status, 'warning', JSON.stringify(json));
    assert.match(keys.detail, /holds 2 private key file\(s\) \(deploy_rsa, id_ed25519\)/);
    assert.match(keys.detail, /without the SSH gateway/);
    assert.doesNotMatch(keys.detail, /\.pub|known_hosts|config/);
    assert.match(keys.fix ?? '', /postern secret add NAME --kind ssh_key --from-file FILE/);
    assert.match(text, /warning\s+agent SSH keys\s+.*; fix: move each key into the vault/);
    assert.equal(finding(json, 'agent SSH_AUTH_SOCK')?.status, 'ok');
  });

  it('a key file whose name carries a terminal escape is named escaped', async () => {
    const hostile = join(dotSsh, 'evil\x1b[2Jkey');
    renameSync(join(dotSsh, 'deploy_rsa'), hostile);
    try {
      const { json, text } = await doctor();
      assert.match(finding(json, 'agent SSH keys')?.detail ?? '', /evil\\x1b\[2Jkey/);
      assert.ok(!text.includes('\x1b'), 'no raw escape on the terminal');
    } finally {
      renameSync(hostile, join(dotSsh, 'deploy_rsa'));
    }
  });

  it('an ssh-agent holding a key is a warning; emptied it is ok; a socket nobody answers is ok', async () => {
    const sock = join(inst.sb.dir, 'agent.sock');
    agent = spawn('ssh-agent', ['-D', '-a', sock], { stdio: 'ignore' });
    await waitFor(() => existsSync(sock), 'ssh-agent to listen');
    const env = { SSH_AUTH_SOCK: sock };
    execFileSync('ssh-add', ['-q', join(dotSsh, 'id_ed25519')], { env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: 'ignore' });
    const loaded = finding((await doctor(env)).json, 'agent SSH_AUTH_SOCK');
    assert.equal(loaded?.status, 'warning');
    assert.match(loaded.detail, /reaches an ssh-agent holding 1 key\(s\)/);
    assert.match(loaded.fix ?? '', /unset SSH_AUTH_SOCK .*ssh-add -D/);
    execFileSync('ssh-add', ['-D'], { env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: 'ignore' });
    const empty = finding((await doctor(env)).json, 'agent SSH_AUTH_SOCK');
    assert.equal(empty?.status, 'ok');
    assert.match(empty.detail, /holds no key/);
    const gone = new Promise((resolve) => agent?.once('exit', resolve));
    agent.kill();
    await gone;
    agent = null;
    const dead = finding((await doctor(env)).json, 'agent SSH_AUTH_SOCK');
    assert.equal(dead?.status, 'ok');
    assert.match(dead.detail, /no ssh-agent answers/);
  });

  it('keys moved out of ~/.ssh: ok', async () => {
    renameSync(join(dotSsh, 'id_ed25519'), join(home, 'id_ed25519'));
    renameSync(join(dotSsh, 'deploy_rsa'), join(home, 'deploy_rsa'));
    const keys = finding((await doctor()).json, 'agent SSH keys');
    assert.equal(keys?.status, 'ok');
    assert.match(keys.detail, /no private key in /);
  });
});
