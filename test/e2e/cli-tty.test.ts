/**
 * Interactive prompts in a real pseudo-terminal (util-linux `script`): the
 * passphrase is asked twice without echo, a mismatch changes nothing, and a
 * secret typed at the prompt never appears on the screen.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { cliSandbox, type CliSandbox } from '../helpers/cli.js';
import { runInPty } from '../helpers/pty.js';

describe('postern CLI in a terminal', () => {
  let sb: CliSandbox;
  const pass = `tty-pass-${randomBytes(6).toString('hex')}`;
  const token = `CANARY-tty-${randomBytes(10).toString('hex')}`;

  before(async () => {
    sb = await cliSandbox();
  });
  after(() => sb.cleanup());

  it('a mismatched repeat creates nothing', async () => {
    const r = await runInPty(sb.home, ['init'], [
      { waitFor: /New passphrase/, send: `${pass}\r` },
      { waitFor: /Repeat the passphrase/, send: `${pass}-typo\r` },
    ]);
    assert.equal(r.code, 1);
    assert.match(r.screen, /PASSPHRASE_MISMATCH/);
    assert.ok(!existsSync(join(sb.home, 'vault.pvlt')));
    assert.ok(!r.screen.includes(pass), 'passphrase echoed');
  });

  it('init asks twice without echo; a prompted secret is not echoed', async () => {
    let r = await runInPty(sb.home, ['init'], [
      { waitFor: /New passphrase/, send: `${pass}\r` },
      { waitFor: /Repeat the passphrase/, send: `${pass}\r` },
    ]);
    assert.equal(r.code, 0, r.screen);
    assert.match(r.screen, /created vault/);
    assert.ok(!r.screen.includes(pass), 'passphrase echoed');
    r = await runInPty(sb.home, ['secret', 'add', 'gh', '--kind', 'http_bearer'], [
      { waitFor: /Token \(input hidden\)/, send: `${token}\r` },
      { waitFor: /Vault passphrase/, send: `${pass}\r` },
    ]);
    assert.equal(r.code, 0, r.screen);
    assert.ok(!r.screen.includes(token), 'token echoed');
    assert.ok(!r.screen.includes(pass), 'passphrase echoed');
    r = await runInPty(sb.home, ['secret', 'list'], [{ waitFor: /Vault passphrase/, send: `${pass}\r` }]);
    assert.match(r.screen, /gh\s+http_bearer/);
  });
});
