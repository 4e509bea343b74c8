/**
 * Runs the built `postern` CLI (dist/cli/main.js) as a real child process in a
 * temporary home, and keeps every byte it printed so tests can search all of
 * it for canary secrets afterwards.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { systemClock } from '../../src/clock/index.js';
import { LISTING_MEMORY_ENV } from '../../src/mcp/remembered-listing.js';
import { TEST_KDF_PROFILE, TEST_KDF_SWITCH, TEST_KDF_SWITCH_VALUE, vaultOptionsFor, type VaultOptions } from '../../src/vault/index.js';

export const CLI = resolve(import.meta.dirname, '../../dist/cli/main.js');

/**
 * The test key-derivation switch (src/vault/kdf-profile.ts): vaults the suite
 * makes cost a millisecond to unlock instead of a second. The few tests that
 * keep the production cost (init, unlock, passwd, the refusal of a cheap
 * vault without the switch) leave it out with `kdf: 'production'`.
 */
export const TEST_KDF_ENV: Readonly<Record<string, string>> = Object.freeze({ [TEST_KDF_SWITCH]: TEST_KDF_SWITCH_VALUE });

export type KdfChoice = 'test' | 'production';

/** The vault options of a test that opens a test-profile vault in its own process. */
export const TEST_VAULT_OPTIONS: VaultOptions = vaultOptionsFor(TEST_KDF_PROFILE, systemClock);

/**
 * libfaketime's settings, when the suite runs under it (the year-ahead pass of
 * .ci/run): a child started with them lives at the same shifted date as the
 * test, as every process on a machine whose clock is off would.
 */
function fakedTime(): Record<string, string> {
  return Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined && /^(LD_PRELOAD|FAKETIME\w*|DONT_FAKE_MONOTONIC)$/.test(e[0])));
}

/** The whole environment of a `postern` child in a test: PATH, the home, (unless production) the test switch, and a faked date if the test has one. */
/**
 * Piped text is folded to COLUMNS (else 100 columns): the tests read whole lines, so their
 * children see a wide pager (`PIPED_COLUMNS`) unless a test sets COLUMNS itself — as the tests of
 * the fold do (test/unit/cli/terminal-lines.test.ts, test/e2e/tui-up.test.ts).
 */
export const PIPED_COLUMNS = '1000';

export function childEnv(home: string, opts: { kdf?: KdfChoice; extra?: Record<string, string> } = {}): Record<string, string> {
  // No remembered listings (src/mcp/remembered-listing.ts) unless a test asks: HOME is not the test's own here.
  return { PATH: process.env['PATH'] ?? '/usr/bin:/bin', POSTERN_HOME: home, COLUMNS: PIPED_COLUMNS, [LISTING_MEMORY_ENV]: 'off', ...fakedTime(), ...(opts.kdf === 'production' ? {} : TEST_KDF_ENV), ...opts.extra };
}

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliSandbox {
  readonly dir: string;
  readonly home: string;
  /** Everything every run printed, for canary searches. */
  readonly transcript: string[];
  run(args: readonly string[], opts?: { input?: string | Buffer; env?: Record<string, string>; cwd?: string }): Promise<CliResult>;
  file(name: string, content: string | Buffer, mode?: number): Promise<string>;
  /** Fails when the transcript holds `secret` in any of its encodings. */
  assertNeverPrinted(secret: string | Buffer, what: string): void;
  cleanup(): Promise<void>;
}

export async function cliSandbox(opts: { kdf?: KdfChoice } = {}): Promise<CliSandbox> {
  const dir = await mkdtemp(join(tmpdir(), 'postern-cli-'));
  const home = join(dir, 'home');
  const transcript: string[] = [];
  const sandboxKdf = opts.kdf ?? 'test';
  return {
    dir,
    home,
    transcript,
    run(args, o = {}) {
      return new Promise((resolveRun, reject) => {
        const child = spawn(process.execPath, [CLI, ...args], {
          env: childEnv(home, { kdf: sandboxKdf, ...(o.env === undefined ? {} : { extra: o.env }) }),
          stdio: ['pipe', 'pipe', 'pipe'],
          ...(o.cwd === undefined ? {} : { cwd: o.cwd }),
          detached: true, // no controlling terminal: prompts must not be attempted
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
        child.on('error', reject);
        child.on('close', (code) => {
          transcript.push(stdout, stderr);
          resolveRun({ code, stdout, stderr });
        });
        // A child that exits without reading its input closes the pipe first (EPIPE): its exit code
        // and output say what happened, so the write's error is not the test's.
        child.stdin.on('error', () => undefined);
        child.stdin.end(o.input ?? '');
      });
    },
    async file(name, content, mode = 0o600) {
      const p = join(dir, name);
      await writeFile(p, content, { mode });
      await chmod(p, mode);
      return p;
    },
    assertNeverPrinted(secret, what) {
      const all = transcript.join('\n');
      for (const form of encodingsOf(secret)) assert.ok(!all.includes(form), `${what} leaked into the output`);
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

/** The encodings of a secret that must never appear in output (THREATS #4). */
export function encodingsOf(secret: string | Buffer): string[] {
  const b = Buffer.isBuffer(secret) ? secret : Buffer.from(secret, 'utf8');
  const text = b.toString('utf8');
  return [
    text,
    b.toString('base64'),
    b.toString('base64url'),
    b.toString('hex'),
    encodeURIComponent(text),
    JSON.stringify(text).slice(1, -1),
  ];
}
