/**
 * Runs one of the agent's own programs (`ssh`, `git`) the way the SSH gateway
 * tests do: stdin closed, both outputs collected, and each output handed to
 * `keep` (the tests' canary search reads them all).
 */
import { spawn } from 'node:child_process';

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
