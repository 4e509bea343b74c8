/**
 * `postern demo` in a real terminal (tmux): with a TTY the demo ends in the
 * operator terminal UI on its own daemon — after the story, or at once with
 * `--no-agent` — and quitting the UI ends the demo cleanly (exit 0, the
 * throwaway home removed).
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';

const hasTmux = spawnSync('tmux', ['-V']).status === 0;
if (!hasTmux && process.env['CI'] === 'true') throw new Error('tmux is required in CI (.ci/run installs it)');

describe('postern demo with a terminal', { skip: hasTmux ? false : 'tmux is not installed' }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'postern-demo-tui-'));
  const tmp = join(dir, 'tmp');
  const sock = join(dir, 'tmux.sock');
  const exitFile = join(dir, 'exit');
  const tmux = (...args: string[]): string => execFileSync('tmux', ['-S', sock, ...args], { encoding: 'utf8' });
  after(() => {
    try {
      tmux('kill-server');
    } catch {
      // already gone
    }
    rmSync(dir, { recursive: true, force: true });
  });
  /** Waits for the pane to show `re` (the terminal is the event source). */
  const until = (re: RegExp, what: string): Promise<void> =>
    waitFor(
      () => {
        if (existsSync(exitFile)) throw new Error(`the demo exited (${readFileSync(exitFile, 'utf8').trim()}) before ${what}`);
        return re.test(tmux('capture-pane', '-p', '-t', 'demo'));
      },
      () => `the screen to show ${what}:\n${tmux('capture-pane', '-p', '-t', 'demo')}`,
      { timeoutMs: 120_000, everyMs: 50 },
    );

  it('--no-agent opens the terminal UI on the demo daemon; q ends the demo and removes its home', async () => {
    execFileSync('mkdir', ['-p', tmp]);
    const cmd = `env -i PATH="$PATH" TERM=xterm-256color TMPDIR='${tmp}' HOME='${tmp}' '${process.execPath}' '${CLI}' demo --no-agent; echo $? > '${exitFile}'`;
    tmux('new-session', '-d', '-s', 'demo', '-x', '110', '-y', '40', 'sh', '-c', cmd);
    await until(/Press Enter to open the operator terminal UI/, 'the prompt');
    tmux('send-keys', '-t', 'demo', 'Enter');
    await until(/Approvals \(0\)[^]*No calls are waiting/, 'the terminal UI');
    tmux('send-keys', '-t', 'demo', '3');
    await until(/state +session +client/, 'the sessions view');
    tmux('send-keys', '-t', 'demo', 'Escape');
    await until(/Approvals \(0\)[^]*No calls are waiting/, 'back to approvals');
    tmux('send-keys', '-t', 'demo', '3');
    await until(/state +session +client/, 'the sessions view again');
    // q quits from any view.
    tmux('send-keys', '-t', 'demo', 'q');
    // The shell writes the exit file when the demo process ends.
    await waitFor(() => existsSync(exitFile), () => `the demo to end after q:\n${tmux('capture-pane', '-p', '-t', 'demo')}`, { timeoutMs: 60_000, everyMs: 50 });
    assert.ok(existsSync(exitFile), 'the demo ended after q');
    assert.equal(readFileSync(exitFile, 'utf8').trim(), '0');
    assert.deepEqual(readdirSync(tmp), [], 'the throwaway home is gone');
  });
});
