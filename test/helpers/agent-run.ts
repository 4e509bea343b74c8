/**
 * Runs one of the agent's own programs (`ssh`, `git`) the way the SSH gateway
 * tests do: stdin closed, both outputs collected, and each output handed to
 * `keep` (the tests' canary search reads them all).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';

export interface ProgramRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export function runProgram(cmd: string, args: readonly string[], opts: { cwd: string; env: Record<string, string>; keep: (stdout: string, stderr: string) => void }): Promise<ProgramRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, [...args], { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => {
      opts.keep(stdout, stderr);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The agent's `git` and programs through the gateway's ssh_config, run from `work` (HOME) with every output handed to `keep`. */
export function gatewayAgent(o: { work: () => string; sshConfig: () => string; keep: (stdout: string, stderr: string) => void }) {
  const run = (cmd: string, args: readonly string[], cwd?: string): Promise<ProgramRun> => {
    const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: o.work(), GIT_SSH_COMMAND: `ssh -F ${o.sshConfig()}`, GIT_CONFIG_NOSYSTEM: '1', LC_ALL: 'C' };
    return runProgram(cmd, args, { cwd: cwd ?? join(o.work(), 'clone'), env, keep: o.keep });
  };
  const git = (args: readonly string[]): Promise<ProgramRun> => run('git', ['-c', 'user.name=agent', '-c', 'user.email=agent@example.invalid', ...args]);
  /** An empty commit in the clone; its hash. */
  const commit = async (msg: string): Promise<string> => {
    const c = await git(['commit', '-q', '--allow-empty', '-m', msg]);
    assert.equal(c.code, 0, c.stderr);
    return (await git(['rev-parse', 'HEAD'])).stdout.trim();
  };
  return { run, git, commit };
}

/** No line of the private key's base64 body is in any of `texts`. */
export function assertKeyNotIn(privateKey: string, texts: readonly string[]): void {
  const lines = privateKey.split('\n').filter((l) => /^[A-Za-z0-9+/=]{20,}$/.test(l));
  for (const t of texts) for (const l of lines) assert.ok(!t.includes(l), 'a line of the deploy key reached an output or the daemon log');
}
