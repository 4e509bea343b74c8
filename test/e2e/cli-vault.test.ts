/**
 * The CLI end to end in a temporary POSTERN_HOME: init, add every credential
 * kind, list, rotate, rm, passwd, wrong passphrase, loose permissions, doctor.
 * Every run's output is searched for the canary secrets at the end.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmod, readFile, stat, writeFile, truncate } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { cliSandbox, type CliResult, type CliSandbox } from '../helpers/cli.js';

const canary = (label: string): string => `CANARY-${label}-${randomBytes(12).toString('hex')}`;
const CANARIES = {
  bearer: canary('bearer'),
  basic: canary('basic'),
  header: canary('header'),
  query: canary('query'),
  sshPassword: canary('sshpw'),
  keyPassphrase: canary('keypass'),
  rotated: canary('rotated'),
  passphrase: `pass-${randomBytes(8).toString('hex')}`,
  newPassphrase: `newpass-${randomBytes(8).toString('hex')}`,
};

function expectError(r: CliResult, code: string, exit = 1): void {
  assert.equal(r.code, exit, `exit code for ${code}: ${r.stderr}`);
  const lines = r.stderr.trimEnd().split('\n');
  assert.match(lines.at(-1) ?? '', new RegExp(`^postern: ${code}: \\S`), r.stderr);
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
}

describe('postern CLI with the vault', () => {
  let sb: CliSandbox;
  let pf: string;
  let keys: Record<string, string>;
  const keyPrivates: string[] = [];

  before(async () => {
    sb = await cliSandbox();
    pf = await sb.file('pass', `${CANARIES.passphrase}\n`);
    const keyDir = join(sb.dir, 'keys');
    execFileSync('mkdir', ['-p', keyDir]);
    const gen = (name: string, args: string[]): string => {
      const p = join(keyDir, name);
      execFileSync('ssh-keygen', ['-q', ...args, '-f', p]);
      keyPrivates.push(execFileSync('cat', [p]).toString());
      return p;
    };
    keys = {
      ed25519: gen('ed', ['-t', 'ed25519', '-N', '']),
      rsa: gen('rsa', ['-t', 'rsa', '-b', '2048', '-N', '']),
      ecdsaEnc: gen('ec', ['-t', 'ecdsa', '-N', CANARIES.keyPassphrase]),
    };
  });

  after(async () => {
    // THREATS #4: no canary, in any common encoding, in anything any command printed.
    for (const secret of Object.values(CANARIES)) sb.assertNeverPrinted(secret, `canary ${secret}`);
    const all = sb.transcript.join('\n');
    for (const key of keyPrivates) {
      const body = key.split('\n').filter((l) => l.length > 0 && !l.startsWith('-----'));
      for (const line of body) assert.ok(!all.includes(line), 'private key material leaked in output');
    }
    await sb.cleanup();
  });

  it('prints help and exits 2 on usage errors', async () => {
    const help = await sb.run(['--help']);
    assert.equal(help.code, 0);
    for (const c of ['init', 'secret', 'passwd', 'doctor']) assert.match(help.stdout, new RegExp(`\\b${c}\\b`));
    assert.equal((await sb.run(['no-such-command'])).code, 2);
    assert.equal((await sb.run(['secret', 'add', 'x'])).code, 2, 'missing --kind');
    assert.equal((await sb.run(['secret', 'add', 'x', '--kind', 'nope'])).code, 2, 'unknown kind');
  });

  it('refuses commands before init, and init without a passphrase source', async () => {
    expectError(await sb.run(['secret', 'list', '--passphrase-file', pf]), 'VAULT_NOT_FOUND');
    // With no terminal and no passphrase file either: the vault is missing, not locked.
    for (const args of [['secret', 'list'], ['passwd'], ['doctor', '--unlock']]) {
      const r = await sb.run(args);
      expectError(r, 'VAULT_NOT_FOUND');
      assert.match(r.stderr, /postern init/, args.join(' '));
    }
    expectError(await sb.run(['init']), 'PASSPHRASE_REQUIRED');
    const weak = await sb.file('weak', 'short\n');
    expectError(await sb.run(['init', '--passphrase-file', weak]), 'PASSPHRASE_WEAK');
  });

  it('init creates a 0700 home and a 0600 vault, once', async () => {
    const r = await sb.run(['init', '--passphrase-file', pf]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal((await stat(sb.home)).mode & 0o777, 0o700);
    assert.equal((await stat(join(sb.home, 'vault.pvlt'))).mode & 0o777, 0o600);
    expectError(await sb.run(['init', '--passphrase-file', pf]), 'VAULT_EXISTS');
  });

  it('adds every credential kind from files, stdin and the environment passphrase', async () => {
    const env = { POSTERN_PASSPHRASE_FILE: pf };
    const tok = await sb.file('tok', `${CANARIES.bearer}\n`);
    let r = await sb.run(['secret', 'add', 'gh', '--kind', 'http_bearer', '--from-file', tok], { env });
    assert.equal(r.code, 0, r.stderr);
    r = await sb.run(['secret', 'add', 'basic', '--kind', 'http_basic', '--username', 'alice', '--stdin'], { env, input: `${CANARIES.basic}\n` });
    assert.equal(r.code, 0, r.stderr);
    r = await sb.run(['secret', 'add', 'hdr', '--kind', 'http_header', '--header', 'X-Api-Key', '--stdin'], { env, input: CANARIES.header });
    assert.equal(r.code, 0, r.stderr);
    r = await sb.run(['secret', 'add', 'qp', '--kind', 'http_query', '--param', 'api_key', '--stdin'], { env, input: CANARIES.query });
    assert.equal(r.code, 0, r.stderr);
    r = await sb.run(['secret', 'add', 'sshpw', '--kind', 'ssh_password', '--stdin'], { env, input: CANARIES.sshPassword });
    assert.equal(r.code, 0, r.stderr);
    r = await sb.run(['secret', 'add', 'deploy-ed', '--kind', 'ssh_key', '--from-file', keys['ed25519']!], { env });
    assert.equal(r.code, 0, r.stderr);
    r = await sb.run(['secret', 'add', 'deploy-rsa', '--kind', 'ssh_key', '--stdin'], { env, input: await readFile(keys['rsa']!) });
    assert.equal(r.code, 0, r.stderr);
    const kp = await sb.file('keypass', `${CANARIES.keyPassphrase}\n`);
    r = await sb.run(['secret', 'add', 'deploy-ec', '--kind', 'ssh_key', '--from-file', keys['ecdsaEnc']!, '--key-passphrase-file', kp], { env });
    assert.equal(r.code, 0, r.stderr);
  });

  it('rejects bad secrets with a clear message', async () => {
    const g = ['--passphrase-file', pf];
    const r1 = await sb.run(['secret', 'add', 'enc', '--kind', 'ssh_key', '--from-file', keys['ecdsaEnc']!, ...g]);
    expectError(r1, 'SECRET_INVALID');
    assert.match(r1.stderr, /encrypted/);
    const wrong = await sb.file('wrongkp', 'not-the-passphrase\n');
    expectError(await sb.run(['secret', 'add', 'enc', '--kind', 'ssh_key', '--from-file', keys['ecdsaEnc']!, '--key-passphrase-file', wrong, ...g]), 'SECRET_INVALID');
    expectError(await sb.run(['secret', 'add', 'junk', '--kind', 'ssh_key', '--stdin', ...g], { input: 'not a key' }), 'SECRET_INVALID');
    const pub = await sb.run(['secret', 'add', 'pub', '--kind', 'ssh_key', '--from-file', `${keys['ed25519']!}.pub`, ...g]);
    expectError(pub, 'SECRET_INVALID');
    expectError(await sb.run(['secret', 'add', 'crlf', '--kind', 'http_bearer', '--stdin', ...g], { input: 'abc\r\nX-Evil: 1' }), 'SECRET_INVALID');
    expectError(await sb.run(['secret', 'add', 'empty', '--kind', 'http_bearer', '--stdin', ...g], { input: '\n' }), 'SECRET_INVALID');
    expectError(await sb.run(['secret', 'add', 'gh', '--kind', 'http_bearer', '--stdin', ...g], { input: 'x' }), 'SECRET_EXISTS');
    expectError(await sb.run(['secret', 'add', 'Bad Name!', '--kind', 'http_bearer', '--stdin', ...g], { input: 'x' }), 'INPUT_INVALID');
    assert.equal((await sb.run(['secret', 'add', 'b2', '--kind', 'http_basic', '--stdin', ...g], { input: 'x' })).code, 2, 'basic needs --username');
  });

  it('lists metadata only, as a table and as JSON', async () => {
    const t = await sb.run(['secret', 'list', '--passphrase-file', pf]);
    assert.equal(t.code, 0, t.stderr);
    for (const n of ['gh', 'basic', 'hdr', 'qp', 'sshpw', 'deploy-ed', 'deploy-rsa', 'deploy-ec']) assert.match(t.stdout, new RegExp(`^${n}\\s`, 'm'));
    assert.match(t.stdout, /username=alice/);
    assert.match(t.stdout, /header=x-api-key/);
    const j = await sb.run(['secret', 'list', '--json', '--passphrase-file', pf]);
    const list = JSON.parse(j.stdout) as { name: string; kind: string; fields: Record<string, string> }[];
    assert.deepEqual(list.map((m) => m.name), ['basic', 'deploy-ec', 'deploy-ed', 'deploy-rsa', 'gh', 'hdr', 'qp', 'sshpw']);
    const ed = list.find((m) => m.name === 'deploy-ed')!;
    assert.equal(ed.kind, 'ssh_key');
    assert.equal(ed.fields['key_type'], 'ssh-ed25519');
    const expectedFp = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', `${keys['ed25519']!}.pub`]).toString().split(' ')[1];
    assert.equal(ed.fields['public_fingerprint'], expectedFp);
  });

  it('rotates and removes', async () => {
    const g = ['--passphrase-file', pf];
    let r = await sb.run(['secret', 'rotate', 'gh', '--stdin', ...g], { input: CANARIES.rotated });
    assert.equal(r.code, 0, r.stderr);
    const list = JSON.parse((await sb.run(['secret', 'list', '--json', ...g])).stdout) as { name: string; rotated_at: string | null }[];
    assert.notEqual(list.find((m) => m.name === 'gh')!.rotated_at, null);
    assert.equal(list.find((m) => m.name === 'hdr')!.rotated_at, null);
    expectError(await sb.run(['secret', 'rotate', 'nope', '--stdin', ...g], { input: 'x' }), 'SECRET_NOT_FOUND');
    assert.equal((await sb.run(['secret', 'rm', 'qp', ...g])).code, 2, 'rm without a terminal needs --yes');
    r = await sb.run(['secret', 'rm', 'qp', '--yes', ...g]);
    assert.equal(r.code, 0, r.stderr);
    expectError(await sb.run(['secret', 'rm', 'qp', '--yes', ...g]), 'SECRET_NOT_FOUND');
  });

  it('refuses a wrong passphrase and a missing one', async () => {
    const bad = await sb.file('bad', 'a-wrong-passphrase\n');
    const r = await sb.run(['secret', 'list', '--passphrase-file', bad]);
    expectError(r, 'VAULT_AUTH');
    assert.equal(r.stderr.trim().split('\n').length, 1, 'one line');
    expectError(await sb.run(['secret', 'list']), 'VAULT_LOCKED');
  });

  it('changes the passphrase', async () => {
    const np = await sb.file('newpass', `${CANARIES.newPassphrase}\n`);
    const r = await sb.run(['passwd', '--passphrase-file', pf, '--new-passphrase-file', np]);
    assert.equal(r.code, 0, r.stderr);
    expectError(await sb.run(['secret', 'list', '--passphrase-file', pf]), 'VAULT_AUTH');
    const ok = await sb.run(['secret', 'list', '--json', '--passphrase-file', np]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal((JSON.parse(ok.stdout) as unknown[]).length, 7);
    await writeFile(pf, `${CANARIES.newPassphrase}\n`);
  });

  it('refuses loose permissions, and doctor reports them', async () => {
    const vault = join(sb.home, 'vault.pvlt');
    await chmod(vault, 0o644);
    expectError(await sb.run(['secret', 'list', '--passphrase-file', pf]), 'VAULT_PERMISSIONS');
    let d = await sb.run(['doctor']);
    assert.equal(d.code, 0);
    assert.match(d.stdout, /warning\s+vault\s+.*644.*chmod 600/);
    assert.equal((await sb.run(['doctor', '--strict'])).code, 1);
    await chmod(vault, 0o600);
    await chmod(sb.home, 0o755);
    const r = await sb.run(['secret', 'list', '--passphrase-file', pf]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^postern: (VAULT_PERMISSIONS|HOME_UNSAFE): /m);
    await chmod(sb.home, 0o700);
    d = await sb.run(['doctor', '--json']);
    const findings = JSON.parse(d.stdout) as { check: string; status: string }[];
    assert.deepEqual(findings.slice(0, 2).map((f) => [f.check, f.status]), [['home', 'ok'], ['vault', 'ok']]);
    for (const c of ['dev.tty.legacy_tiocsti', 'kernel.yama.ptrace_scope', 'core dumps']) assert.ok(findings.some((f) => f.check === c), c);
  });

  it('reports a busy vault and a corrupt one', async () => {
    const vault = join(sb.home, 'vault.pvlt');
    const sleeper = execFileSync('bash', ['-c', 'sleep 30 >/dev/null 2>&1 & echo $!']).toString().trim();
    // The lock format of src/vault/writer-lock.ts: "<pid> <32 hex>\n", held by a live process.
    await writeFile(`${vault}.lock`, `${sleeper} ${'ab'.repeat(16)}\n`, { mode: 0o600 });
    try {
      expectError(await sb.run(['secret', 'rm', 'hdr', '--yes', '--passphrase-file', pf]), 'VAULT_BUSY');
    } finally {
      process.kill(Number(sleeper));
      execFileSync('rm', ['-f', `${vault}.lock`]);
    }
    const size = (await stat(vault)).size;
    await truncate(vault, size - 7);
    const r = await sb.run(['secret', 'list', '--passphrase-file', pf]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^postern: (VAULT_CORRUPT|VAULT_AUTH): /m);
    await truncate(vault, 20);
    expectError(await sb.run(['secret', 'list', '--passphrase-file', pf]), 'VAULT_CORRUPT');
  });
});
