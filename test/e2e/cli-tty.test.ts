/**
 * Interactive prompts in a real pseudo-terminal (util-linux `script`): the
 * passphrase is asked twice without echo, a short or mismatched one is asked
 * again (three tries), the slow unlock is announced, a bad name is refused
 * before any prompt, and a secret typed at the prompt never appears on the screen.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
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

  // Each prompt is answered once it has appeared n times on screen (the screen keeps every earlier prompt).
  const nth = (text: string, n: number): RegExp => new RegExp(`(?:${text}[\\s\\S]*){${n}}`);

  it('a mismatched repeat is asked again; three misses create nothing', async () => {
    const steps = [1, 2, 3].flatMap((n) => [
      { waitFor: nth('New passphrase', n), send: `${pass}\r` },
      { waitFor: nth('Repeat the passphrase', n), send: `${pass}-typo\r` },
    ]);
    const r = await runInPty(sb.home, ['init'], steps);
    assert.equal(r.code, 1);
    assert.match(r.screen, /the two passphrases differ; try again \(2 tries left\)/);
    assert.match(r.screen, /PASSPHRASE_MISMATCH: the two passphrases differ; nothing was changed/);
    assert.ok(!existsSync(join(sb.home, 'vault.pvlt')));
    assert.ok(!r.screen.includes(pass), 'passphrase echoed');
  });

  it('a short passphrase, then a mismatch, then a good one: the vault is created', async () => {
    const r = await runInPty(sb.home, ['init'], [
      { waitFor: nth('New passphrase', 1), send: 'short\r' },
      { waitFor: nth('New passphrase', 2), send: `${pass}\r` },
      { waitFor: nth('Repeat the passphrase', 1), send: `${pass}x\r` },
      { waitFor: nth('New passphrase', 3), send: `${pass}\r` },
      { waitFor: nth('Repeat the passphrase', 2), send: `${pass}\r` },
    ]);
    assert.equal(r.code, 0, r.screen);
    assert.match(r.screen, /at least 12 characters; try again \(2 tries left\)/);
    assert.match(r.screen, /differ; try again \(1 try left\)/);
    assert.match(r.screen, /created vault/);
    assert.ok(!r.screen.includes(pass), 'passphrase echoed');
    await rm(join(sb.home, 'vault.pvlt'));
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
    assert.match(r.screen, /Vault passphrase: [\s\S]*unlocking vault…[\s\S]*gh\s+http_bearer/, 'the key derivation is announced');
  });

  it('a bad name is refused before anything is asked', async () => {
    const r = await runInPty(sb.home, ['secret', 'add', 'My_Token', '--kind', 'http_bearer'], []);
    assert.equal(r.code, 1);
    assert.match(r.screen, /postern: INPUT_INVALID: "My_Token" is not a valid name: .*\(try "my_token"\)/);
    assert.doesNotMatch(r.screen, /Token \(input hidden\)|Vault passphrase/);
  });
});
