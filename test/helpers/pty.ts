/**
 * Runs the built CLI in a real pseudo-terminal (util-linux `script`),
 * answering each prompt only once it is on screen.
 */
import { spawn } from 'node:child_process';
import { childEnv, CLI } from './cli.js';

export interface Step {
  readonly waitFor: RegExp;
  readonly send: string;
}

/** Runs the CLI under a pty, answering each prompt only once it is on screen. */
export function runInPty(home: string, args: string[], steps: Step[], env: Record<string, string> = {}): Promise<{ code: number | null; screen: string }> {
  return new Promise((resolve, reject) => {
    const cmd = [process.execPath, CLI, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    const child = spawn('script', ['-qfec', cmd, '/dev/null'], {
      env: childEnv(home, { extra: { TERM: 'dumb', ...env } }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let screen = '';
    let next = 0;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`pty run timed out; screen so far: ${JSON.stringify(screen)}`));
    }, 60_000);
    const onData = (d: Buffer): void => {
      screen += d.toString('utf8');
      const step = steps[next];
      if (step !== undefined && step.waitFor.test(screen)) {
        next++;
        // Give the program a moment to switch echo off after printing the prompt.
        setTimeout(() => child.stdin.write(step.send), 150);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, screen });
    });
  });
}
