/**
 * One home check for every command (docs/threat-model.md): a POSTERN_HOME
 * that is a symlink (live or dangling) or open to others is refused with
 * HOME_UNSAFE before the command reads or writes anything — the vault
 * commands included, which used to follow the link. And `secret rm` of a
 * credential the accepted catalog uses asks, in a terminal, with the tools
 * named.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { cliSandbox, type CliSandbox } from '../helpers/cli.js';
import { runInPty } from '../helpers/pty.js';
import { createHash } from 'node:crypto';

const PASS = 'home-check-passphrase';
const TOKEN = 'CANARY-home-check-token-7d41a';

describe('one home check for every command', () => {
  let sb: CliSandbox;
  let pf: string;
  let vault: string;

  before(async () => {
    sb = await cliSandbox();
    pf = await sb.file('pass', `${PASS}\n`);
    assert.equal((await sb.run(['init', '--passphrase-file', pf])).code, 0);
    const add = await sb.run(['secret', 'add', 'api-token', '--kind', 'http_bearer', '--stdin', '--passphrase-file', pf], { input: TOKEN });
    assert.equal(add.code, 0, add.stderr);
    vault = join(sb.home, 'vault.pvlt');
  });
  after(async () => {
    sb.assertNeverPrinted(TOKEN, 'the token');
    await sb.cleanup();
  });

  const commands: string[][] = [
    ['secret', 'list'],
    ['secret', 'add', 'new-one', '--kind', 'http_bearer', '--stdin'],
    ['secret', 'rotate', 'api-token', '--stdin'],
    ['secret', 'rm', 'api-token', '--yes'],
    ['passwd', '--new-passphrase-file', 'x'],
    ['catalog', 'show'],
    ['catalog', 'accept', '--yes'],
    ['audit', 'verify'],
    ['approvals', 'list'],
    ['daemon'],
    ['http', 'enable', '--port', '0'],
    ['http', 'disable'],
  ];

  it('a symlinked POSTERN_HOME (live or dangling) is refused by every command; nothing is read or written', async () => {
    const live = join(sb.dir, 'live-link');
    const dangling = join(sb.dir, 'dangling-link');
    symlinkSync(sb.home, live);
    symlinkSync(join(sb.dir, 'nowhere'), dangling);
    const before = readFileSync(vault);
    for (const link of [live, dangling]) {
      for (const args of [...commands, ['init']]) {
        const r = await sb.run([...args, '--passphrase-file', pf], { env: { POSTERN_HOME: link }, input: 'CANARY-home-check-new-value' });
        assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
        assert.match(r.stderr, /^postern: HOME_UNSAFE: .*is a symbolic link/m, args.join(' '));
      }
    }
    assert.deepEqual(readFileSync(vault), before, 'the vault behind the link is untouched');
  });

  it('a home open to others is refused by every command (not only by the daemon)', async () => {
    await chmod(sb.home, 0o755);
    try {
      for (const args of commands) {
        const r = await sb.run([...args, '--passphrase-file', pf], { input: 'CANARY-home-check-new-value' });
        assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
        assert.match(r.stderr, /^postern: HOME_UNSAFE: .*has mode 755/m, args.join(' '));
      }
      const d = await sb.run(['doctor', '--json']);
      assert.match(d.stdout, /"home"/, 'doctor still reports instead of refusing');
    } finally {
      await chmod(sb.home, 0o700);
    }
  });

  it('secret rm of a credential in use asks in a terminal, naming the tools; "n" keeps it, "y" removes it', async () => {
    const text = stringify({
      targets: { api: { http: { origin: 'https://api.example.com', credential: 'api-token', auth: 'bearer' } } },
      tools: { get_thing: { description: 'Read.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: { type: 'object', properties: {} }, http: { target: 'api', method: 'GET', path: '/thing' } }] } },
    });
    writeFileSync(join(sb.home, 'catalog.yaml'), text);
    // A first catalog is accepted by naming the exact bytes reviewed.
    const accepted = await sb.run(['catalog', 'accept', '--digest', createHash('sha256').update(text).digest('hex'), '--force', '--passphrase-file', pf]);
    assert.equal(accepted.code, 0, accepted.stderr);
    const question = /uses "api-token" in 1 tool\(s\): get_thing; they will fail with CREDENTIAL_MISSING[^\n]*Remove secret "api-token"\? \[y\/N\]/;
    let r = await runInPty(sb.home, ['secret', 'rm', 'api-token', '--passphrase-file', pf], [{ waitFor: question, send: 'n\r' }]);
    assert.equal(r.code, 0, r.screen);
    assert.match(r.screen, /nothing removed/);
    let list = await sb.run(['secret', 'list', '--passphrase-file', pf]);
    assert.match(list.stdout, /api-token/);
    r = await runInPty(sb.home, ['secret', 'rm', 'api-token', '--passphrase-file', pf], [{ waitFor: question, send: 'y\r' }]);
    assert.equal(r.code, 0, r.screen);
    assert.match(r.screen, /removed secret "api-token"/);
    list = await sb.run(['secret', 'list', '--passphrase-file', pf]);
    assert.doesNotMatch(list.stdout, /api-token/);
  });
});
