/**
 * A real OpenSSH sshd (sshd.ts) that serves bare git repositories, the way a
 * git host does: every session runs a forced command that appends the
 * requested command line to `commands.log`, then runs git's own
 * `git-shell -c` for git-upload-pack / git-receive-pack (anything else runs
 * with `sh -c`, for the gateway's exact commands) in `repos/`.
 *
 *   const git = await startGitSshd(['org/repo.git', 'org/secret.git']);
 *   git.srv.port, git.repoDir('org/repo.git'), git.commands(), git.ref('org/repo.git', 'refs/heads/main')
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { install, type Installation } from './daemon.js';
import { startSshd, type RealSshd } from './sshd.js';

export interface GitSshd {
  readonly srv: RealSshd;
  /** The directory the forced command runs in: repository paths are relative to it. */
  readonly reposDir: string;
  repoDir(path: string): string;
  /** Every command line a session asked for, in order (what reached the destination). */
  commands(): string[];
  /** The commit a ref points to in a bare repository, or null when it has none. */
  ref(repo: string, ref: string): string | null;
  stop(): Promise<void>;
}

export async function startGitSshd(repos: readonly string[]): Promise<GitSshd> {
  const dir = mkdtempSync(join(tmpdir(), 'postern-git-sshd-'));
  const reposDir = join(dir, 'repos');
  const log = join(dir, 'commands.log');
  mkdirSync(reposDir, { recursive: true });
  for (const r of repos) execFileSync('git', ['init', '-q', '--bare', join(reposDir, r)], { stdio: 'ignore' });
  const serve = join(dir, 'serve.sh');
  writeFileSync(
    serve,
    [
      '#!/bin/sh',
      `printf '%s\\n' "$SSH_ORIGINAL_COMMAND" >> '${log}'`,
      `cd '${reposDir}' || exit 1`,
      'case "$SSH_ORIGINAL_COMMAND" in',
      '  git-receive-pack\\ *|git-upload-pack\\ *) exec git-shell -c "$SSH_ORIGINAL_COMMAND" ;;',
      '  *) exec sh -c "$SSH_ORIGINAL_COMMAND" ;;',
      'esac',
      '',
    ].join('\n'),
    { mode: 0o755 },
  );
  const srv = await startSshd({ extraConfig: [`ForceCommand ${serve}`] });
  return {
    srv,
    reposDir,
    repoDir: (p) => join(reposDir, p),
    commands: () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter((l) => l !== '') : []),
    ref(repo, ref) {
      try {
        return execFileSync('git', ['--git-dir', join(reposDir, repo), 'rev-parse', '--verify', '-q', ref], { encoding: 'utf8' }).trim();
      } catch {
        return null;
      }
    },
    async stop() {
      await srv.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A Postern home for gateway tests against `git`'s sshd: the deploy key in the
 * vault, the gateway enabled on a free port, `catalog` accepted, the daemon
 * started with `daemonArgs` and `postern setup ssh` run. Returns the home, the
 * agent's folder (HOME of its programs) and the ssh_config the agent uses.
 */
export async function gatewayHome(git: GitSshd, catalog: unknown, o: { config?: Record<string, unknown>; daemonArgs?: readonly string[] } = {}): Promise<{ inst: Installation; work: string; sshConfig: string }> {
  const inst = await install({ secrets: [{ name: 'deploy-key', kind: 'ssh_key', value: git.srv.clientKey.private }], ...(o.config === undefined ? {} : { config: o.config }) });
  const work = join(inst.sb.dir, 'agent');
  mkdirSync(work);
  const enable = await inst.sb.run(['ssh-gateway', 'enable', '--port', '0', '--passphrase-file', inst.passFile]);
  assert.equal(enable.code, 0, enable.stderr);
  await inst.acceptCatalog(catalog);
  await inst.startDaemon([...(o.daemonArgs ?? [])]);
  const setup = await inst.sb.run(['setup', 'ssh']);
  assert.equal(setup.code, 0, setup.stderr);
  return { inst, work, sshConfig: join(inst.sb.home, 'ssh-gateway', 'ssh_config') };
}
