/**
 * Runs the built CLI in a real pseudo-terminal (util-linux `script`),
 * answering each prompt only once it is on screen.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { childEnv, CLI } from './cli.js';

export interface Step {
  readonly waitFor: RegExp;
  readonly send: string;
}

/** The built CLI under util-linux `script`: its stdin, stdout and stderr are one pseudo-terminal. */
function spawnPty(home: string, args: string[], env: Record<string, string>): ChildProcessWithoutNullStreams {
  const cmd = [process.execPath, CLI, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  return spawn('script', ['-qfec', cmd, '/dev/null'], { env: childEnv(home, { extra: { TERM: 'dumb', ...env } }), stdio: ['pipe', 'pipe', 'pipe'] });
}

/** Runs the CLI under a pty, answering each prompt only once it is on screen. */
export function runInPty(home: string, args: string[], steps: Step[], env: Record<string, string> = {}): Promise<{ code: number | null; screen: string }> {
  return new Promise((resolve, reject) => {
    const child = spawnPty(home, args, env);
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
        // The prompt on screen is the event: a hidden prompt turns echo off before it shows it (src/cli/tty.ts).
        child.stdin.write(step.send);
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

/** A CLI run in a pty that a test drives line by line, waiting for what the screen shows. */
export interface PtySession {
  /** Everything the terminal showed so far. */
  readonly screen: () => string;
  /** Types `text` (a line ends with "\n"). */
  type(text: string): void;
  /** Resolves once the screen after offset `from` matches `re` (fails if the program exits first). */
  until(re: RegExp, from?: number): Promise<string>;
  readonly exited: Promise<number | null>;
  kill(): void;
}

export function startPty(home: string, args: string[], env: Record<string, string> = {}): PtySession {
  const child = spawnPty(home, args, env);
  let screen = '';
  let done = false;
  const waiters = new Set<() => void>();
  const wake = (): void => {
    for (const f of [...waiters]) f();
  };
  child.stdout.on('data', (d: Buffer) => {
    screen += d.toString('utf8');
    wake();
  });
  child.stderr.on('data', (d: Buffer) => {
    screen += d.toString('utf8');
    wake();
  });
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (code) => {
      done = true;
      resolve(code);
      wake();
    }),
  );
  return {
    screen: () => screen,
    type: (text) => void child.stdin.write(text),
    until: (re, from = 0) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const m = re.exec(screen.slice(from));
          if (m !== null) {
            waiters.delete(check);
            resolve(m[0]);
          } else if (done) {
            waiters.delete(check);
            reject(new Error(`the program exited before ${re}; screen: ${JSON.stringify(screen)}`));
          }
        };
        waiters.add(check);
        check();
      }),
    exited,
    kill: () => void child.kill('SIGKILL'),
  };
}
