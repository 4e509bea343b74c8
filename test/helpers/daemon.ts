/**
 * A whole Postern installation for end-to-end tests: a temporary home with a
 * vault, secrets and an accepted catalog; the real daemon (`postern daemon`)
 * as a child process; official MCP clients talking to it through the real
 * `postern mcp` shim over stdio; and an operator connection (the same
 * authenticated channel `postern approvals` uses) to approve or deny.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { stringify } from 'yaml';
import { openVault } from '../../src/vault/index.js';
import { connectOperator } from '../../src/protocol/operator/connect.js';
import { childEnv, CLI, cliSandbox, TEST_VAULT_OPTIONS, type CliSandbox, type KdfChoice } from './cli.js';
import { sharedHome } from './shared-home.js';

export const PASSPHRASE = 'e2e-daemon-passphrase';

export interface Installation {
  readonly sb: CliSandbox;
  readonly passFile: string;
  daemon: ChildProcess | null;
  daemonLog: string;
  /** Starts `postern daemon` with these extra arguments (e.g. `--unattended`) and extra environment. */
  startDaemon(args?: readonly string[], env?: Record<string, string>): Promise<void>;
  stopDaemon(signal?: NodeJS.Signals): Promise<number | null>;
  /** Writes catalog.yaml and accepts exactly those bytes with the CLI (`--digest`). */
  acceptCatalog(catalog: unknown): Promise<void>;
  client(opts?: { name?: string; listChanged?: (tools: unknown) => void }): Promise<Client>;
  operator(): Promise<Awaited<ReturnType<typeof connectOperator>>>;
  cleanup(): Promise<void>;
}

export interface InstallOptions {
  readonly secrets: readonly { name: string; kind: string; value: string; flags?: readonly string[] }[];
  readonly config?: Record<string, unknown>;
  readonly kdf?: KdfChoice;
  /**
   * Copy the home (vault after `init` and `secret add`) from one built once for these exact
   * secrets and kept under the OS temp dir, instead of running the CLI for each: for secrets
   * that are the same on every run (`canary(label)` in test/helpers/fixture.ts). Test KDF only.
   */
  readonly shared?: boolean;
}

export async function install(opts: InstallOptions): Promise<Installation> {
  const kdf = opts.kdf ?? 'test';
  const sb = await cliSandbox({ kdf });
  const passFile = await sb.file('pass', `${PASSPHRASE}\n`);
  const g = ['--passphrase-file', passFile];
  const build = async (): Promise<void> => {
    const init = await sb.run(['init', ...g]);
    if (init.code !== 0) throw new Error(init.stderr);
    for (const s of opts.secrets) {
      const r = await sb.run(['secret', 'add', s.name, '--kind', s.kind, '--stdin', ...(s.flags ?? []), ...g], { input: s.value });
      if (r.code !== 0) throw new Error(r.stderr);
    }
  };
  if (opts.shared === true && kdf === 'test') await sharedHome(sb.home, { secrets: opts.secrets, passphrase: PASSPHRASE }, build);
  else await build();
  await writeFile(join(sb.home, 'config.yaml'), stringify({ approval_timeout_seconds: 5, progress_interval_seconds: 1, ...opts.config }), { mode: 0o600 });
  const clients: Client[] = [];
  // Derived once up front (a production-cost KDF run takes a second, longer than a short approval timeout).
  const v = await openVault(join(sb.home, 'vault.pvlt'), Buffer.from(PASSPHRASE), kdf === 'test' ? TEST_VAULT_OPTIONS : {});
  const operatorKey = Uint8Array.from(v.deriveKey('operator-auth'));
  v.lock();

  const inst: Installation = {
    sb,
    passFile,
    daemon: null,
    daemonLog: '',
    async startDaemon(args = [], env = {}) {
      const child = spawn(process.execPath, [...(process.env['POSTERN_DAEMON_PROF'] ? ['--cpu-prof', `--cpu-prof-dir=${process.env['POSTERN_DAEMON_PROF']}`] : []), CLI, 'daemon', ...args, ...g], {
        env: childEnv(sb.home, { kdf, extra: env }),
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      inst.daemon = child;
      inst.daemonLog = ''; // this child's log only, so a restart waits for its own "ready"
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`daemon did not start: ${inst.daemonLog}`)), 30_000);
        const onData = (d: Buffer): void => {
          inst.daemonLog += d.toString('utf8');
          sb.transcript.push(d.toString('utf8'));
          if (inst.daemonLog.includes('daemon ready')) {
            clearTimeout(timer);
            resolve();
          }
        };
        child.stderr.on('data', onData);
        child.stdout.on('data', (d: Buffer) => sb.transcript.push(d.toString('utf8')));
        child.once('exit', (code) => {
          clearTimeout(timer);
          reject(new Error(`daemon exited ${code}: ${inst.daemonLog}`));
        });
      });
    },
    async stopDaemon(signal = 'SIGTERM') {
      const child = inst.daemon;
      if (child === null || child.exitCode !== null) return child?.exitCode ?? null;
      const done = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill(signal);
      const code = await done;
      inst.daemon = null;
      return code;
    },
    async acceptCatalog(catalog) {
      const text = typeof catalog === 'string' ? catalog : stringify(catalog);
      await writeFile(join(sb.home, 'catalog.yaml'), text);
      // --digest: the test wrote these exact bytes (a first catalog cannot be accepted with --yes alone).
      const r = await sb.run(['catalog', 'accept', '--digest', createHash('sha256').update(text).digest('hex'), '--force', ...g]);
      if (r.code !== 0) throw new Error(`${r.stdout}\n${r.stderr}`);
    },
    async client(o = {}) {
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [CLI, 'mcp'],
        env: childEnv(sb.home, { kdf }),
        stderr: 'pipe',
      });
      const client = new Client(
        { name: o.name ?? 'e2e-agent', version: '1.0.0' },
        o.listChanged === undefined ? {} : { listChanged: { tools: { debounceMs: 0, onChanged: (_err, tools) => o.listChanged?.(tools) } } },
      );
      await client.connect(transport);
      clients.push(client);
      return client;
    },
    async operator() {
      return connectOperator(join(sb.home, 'run', 'operator.sock'), operatorKey);
    },
    async cleanup() {
      for (const c of clients) await c.close().catch(() => undefined);
      await inst.stopDaemon('SIGKILL');
      await sb.cleanup();
    },
  };
  return inst;
}
