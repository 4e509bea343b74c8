/**
 * The key-derivation profile end to end, on the shipped dist/cli/main.js
 * (src/vault/kdf-profile.ts). Without the test switch the CLI makes vaults at
 * the production cost and refuses to open one below it, the daemon included;
 * with it, a below-floor vault is named by doctor, secret list, the daemon's
 * start line and the operator status the TUI shows. This file keeps the
 * production cost for init, unlock and passwd, so that path stays tested
 * while the rest of the suite uses the cheap profile.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ABSOLUTE_MINIMUM_KDF, MAXIMUM_KDF, parseHeader } from '../../src/vault/format.js';
import { MODERATE_KDF, TEST_KDF, TEST_KDF_SWITCH } from '../../src/vault/index.js';
import { childEnv, CLI, cliSandbox, TEST_KDF_ENV, type CliResult, type CliSandbox } from '../helpers/cli.js';

const PASS = 'kdf-profile-passphrase';
const NEW_PASS = 'kdf-profile-new-passphrase';

async function headerCost(vault: string): Promise<{ opslimit: number; memlimit: number }> {
  const bytes = new Uint8Array(await readFile(vault));
  return parseHeader(bytes, { bounds: { min: ABSOLUTE_MINIMUM_KDF, max: MAXIMUM_KDF } }).kdf;
}

function lastLine(r: CliResult): string {
  return r.stderr.trimEnd().split('\n').at(-1) ?? '';
}

/** Starts `postern daemon` and resolves with its exit code and everything it wrote, once it exits or says ready. */
function daemonUntilReadyOrExit(home: string, passFile: string, env: Record<string, string>): Promise<{ ready: boolean; code: number | null; log: string; stop: () => Promise<void> }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, 'daemon', '--passphrase-file', passFile], { env, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    let log = '';
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    const stop = async (): Promise<void> => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    };
    child.stderr.on('data', (d: Buffer) => {
      log += d.toString('utf8');
      if (log.includes('daemon ready')) resolve({ ready: true, code: null, log, stop });
    });
    child.once('exit', (code) => resolve({ ready: false, code, log, stop }));
  });
}

describe('the key-derivation profile on the shipped CLI', () => {
  let prod: CliSandbox;
  let cheap: CliSandbox;
  let prodPass: string;
  let cheapPass: string;

  before(async () => {
    prod = await cliSandbox({ kdf: 'production' });
    cheap = await cliSandbox({ kdf: 'test' });
    prodPass = await prod.file('pass', `${PASS}\n`);
    cheapPass = await cheap.file('pass', `${PASS}\n`);
  });
  after(async () => {
    await prod.cleanup();
    await cheap.cleanup();
  });

  it('without the switch: init makes a production-cost vault, unlocks it and changes its passphrase at that cost', async () => {
    assert.equal((await prod.run(['init', '--passphrase-file', prodPass])).code, 0);
    assert.deepEqual(await headerCost(join(prod.home, 'vault.pvlt')), MODERATE_KDF);
    const add = await prod.run(['secret', 'add', 'tok', '--kind', 'http_bearer', '--stdin', '--passphrase-file', prodPass], { input: 'prod-token-value' });
    assert.equal(add.code, 0, add.stderr);
    const list = await prod.run(['secret', 'list', '--passphrase-file', prodPass]);
    assert.equal(list.code, 0, list.stderr);
    assert.doesNotMatch(list.stderr, /BELOW the production floor/);
    const np = await prod.file('newpass', `${NEW_PASS}\n`);
    const pw = await prod.run(['passwd', '--passphrase-file', prodPass, '--new-passphrase-file', np]);
    assert.equal(pw.code, 0, pw.stderr);
    assert.deepEqual(await headerCost(join(prod.home, 'vault.pvlt')), MODERATE_KDF);
    const doctor = await prod.run(['doctor', '--json']);
    const f = (JSON.parse(doctor.stdout) as { check: string; status: string }[]).find((x) => x.check === 'vault key derivation');
    assert.equal(f?.status, 'ok');
  });

  it('with the switch, a passphrase change never lowers a production vault to the cheap cost', async () => {
    const np = await prod.file('newpass', `${NEW_PASS}\n`);
    const back = await prod.file('back', `${PASS}\n`);
    const r = await prod.run(['passwd', '--passphrase-file', np, '--new-passphrase-file', back], { env: { ...TEST_KDF_ENV } });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(await headerCost(join(prod.home, 'vault.pvlt')), MODERATE_KDF);
  });

  it('with the switch, init makes a cheap vault; without it every command and the daemon refuse to open that vault', async () => {
    assert.equal((await cheap.run(['init', '--passphrase-file', cheapPass])).code, 0);
    assert.deepEqual(await headerCost(join(cheap.home, 'vault.pvlt')), TEST_KDF);
    const noSwitch = childEnv(cheap.home, { kdf: 'production' });
    await writeFile(join(cheap.home, 'catalog.yaml'), 'targets: {}\ntools: {}\n', { mode: 0o600 });
    for (const args of [['secret', 'list'], ['secret', 'add', 'x', '--kind', 'http_bearer', '--stdin'], ['passwd', '--new-passphrase-file', cheapPass], ['catalog', 'accept', '--yes'], ['doctor', '--unlock']]) {
      const r = await new Promise<CliResult>((resolve) => {
        const child = spawn(process.execPath, [CLI, ...args, '--passphrase-file', cheapPass], { env: noSwitch, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
        child.on('close', (code) => resolve({ code, stdout, stderr }));
        child.stdin.end('value');
      });
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
      assert.match(`${r.stdout}\n${r.stderr}`, /key-derivation cost below the production floor.*test profile/, args.join(' '));
      assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
    }
    const d = await daemonUntilReadyOrExit(cheap.home, cheapPass, noSwitch);
    await d.stop();
    assert.equal(d.ready, false, d.log);
    assert.equal(d.code, 1);
    assert.match(d.log, /VAULT_CORRUPT: .*below the production floor/);
    assert.equal(await headerCost(join(cheap.home, 'vault.pvlt')).then((k) => k.opslimit), TEST_KDF.opslimit, 'nothing rewrote it');
  });

  it('a switch with any other value is refused, not half-taken', async () => {
    for (const value of ['1', 'true', 'insecure']) {
      const r = await cheap.run(['secret', 'list', '--passphrase-file', cheapPass], { env: { [TEST_KDF_SWITCH]: value } });
      assert.equal(r.code, 2, r.stderr);
      assert.match(lastLine(r), new RegExp(`^postern: USAGE: ${TEST_KDF_SWITCH} must be unset`));
    }
  });

  it('with the switch, a below-floor vault is named by doctor, secret list and the daemon start line', async () => {
    const doctor = await cheap.run(['doctor', '--json']);
    const findings = JSON.parse(doctor.stdout) as { check: string; status: string; detail: string }[];
    const kdf = findings.find((x) => x.check === 'vault key derivation');
    assert.equal(kdf?.status, 'warning');
    assert.match(kdf?.detail ?? '', /Argon2id 1 pass, 1 MiB is BELOW the production floor \(Argon2id 3 passes, 256 MiB\)/);
    assert.equal(findings.find((x) => x.check === TEST_KDF_SWITCH)?.status, 'warning', 'the switch in the environment is itself a finding');
    assert.equal((await cheap.run(['doctor', '--strict'])).code, 1);
    const list = await cheap.run(['secret', 'list', '--json', '--passphrase-file', cheapPass]);
    assert.equal(list.code, 0, list.stderr);
    assert.deepEqual(JSON.parse(list.stdout), [], '--json stays an array');
    assert.match(list.stderr, /^postern: warning: vault key derivation Argon2id 1 pass, 1 MiB is BELOW the production floor/m);
    const d = await daemonUntilReadyOrExit(cheap.home, cheapPass, childEnv(cheap.home));
    await d.stop();
    assert.equal(d.ready, true, d.log);
    assert.match(d.log, /WARNING: the test key-derivation profile is on/);
    assert.match(d.log, /WARNING: vault key derivation Argon2id 1 pass, 1 MiB is BELOW the production floor/);
    assert.match(d.log, /daemon ready: .*, vault Argon2id 1 pass, 1 MiB \(TEST PROFILE, below the production floor\)/);
  });
});
