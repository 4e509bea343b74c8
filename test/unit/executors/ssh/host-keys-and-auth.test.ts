/**
 * SSH executor against an in-process ssh2 server: host key pinning (pinned,
 * untrusted, changed), credentials (key, password, wrong ones), exit codes and
 * stderr. A refused call must leave the server without any exec.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isPosternError } from '../../../../src/rules/errors.js';
import type { PosternError } from '../../../../src/rules/errors.js';
import { executeSsh, probeHostKey } from '../../../../src/executors/ssh/index.js';
import type { TestSshServer } from './support.js';
import { CLIENT_KEY, PASSWORD, action, keyCredential, keyPair, passwordCredential, rejection, startSshServer } from './support.js';

function assertNoSecret(e: PosternError): void {
  const shown = JSON.stringify({ m: e.message, d: e.details });
  assert.ok(!shown.includes(PASSWORD));
  assert.ok(!shown.includes('PRIVATE KEY'));
}

describe('ssh executor: host keys and credentials', () => {
  let srv: TestSshServer;
  before(async () => {
    srv = await startSshServer();
  });
  after(() => srv.close());

  it('the fingerprint matches ssh-keygen -l', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'postern-ssh-'));
    try {
      writeFileSync(join(dir, 'host.pub'), `${srv.hostKey.public}\n`);
      const line = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', join(dir, 'host.pub')], { encoding: 'utf8' });
      assert.equal(line.split(' ')[1], srv.hostKey.fingerprint);
      assert.equal(await probeHostKey('127.0.0.1', srv.port), srv.hostKey.fingerprint);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('pinned key + private key: runs and reports exit code, stdout and stderr', async () => {
    let notified = 0;
    const res = await executeSsh(action(srv, ['sh', '-c', 'echo out; echo err >&2; exit 3']), keyCredential(), {
      onExecSent: () => (notified += 1),
    });
    assert.deepEqual(
      { ...res },
      {
        exit_code: 3,
        signal: null,
        stdout: 'out\n',
        stderr: 'err\n',
        stdout_truncated: false,
        stderr_truncated: false,
        stdout_truncated_at: null,
        stderr_truncated_at: null,
        host_key_fingerprint: srv.hostKey.fingerprint,
        side_effect_started: true,
      },
    );
    assert.equal(notified, 1);
  });

  it('password credential works; a padded pin is accepted', async () => {
    const res = await executeSsh(action(srv, ['echo', 'hi'], `${srv.hostKey.fingerprint}=`), passwordCredential());
    assert.equal(res.exit_code, 0);
    assert.equal(res.stdout, 'hi\n');
  });

  it('encrypted private key with its passphrase works', async () => {
    const kp = CLIENT_KEY; // the server only knows CLIENT_KEY; re-encrypt it
    const dir = mkdtempSync(join(tmpdir(), 'postern-ssh-'));
    try {
      const file = join(dir, 'id');
      writeFileSync(file, kp.private, { mode: 0o600 });
      execFileSync('ssh-keygen', ['-p', '-q', '-P', '', '-N', 'key-pass-123', '-f', file]);
      const cred = keyCredential(execFileSync('cat', [file], { encoding: 'utf8' }));
      const withPass = { ...cred, secret: { ...cred.secret, key_passphrase: new TextEncoder().encode('key-pass-123') } };
      const res = await executeSsh(action(srv, ['true']), withPass);
      assert.equal(res.exit_code, 0);
      const e = await rejection(executeSsh(action(srv, ['true']), cred));
      assert.ok(isPosternError(e, 'SECRET_INVALID'), String(e));
      assert.equal(e.sideEffectStarted, false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('untrusted host → HOST_KEY_UNKNOWN with the offered fingerprint; no exec', async () => {
    const before = srv.execs.length;
    const e = await rejection(executeSsh(action(srv, ['touch', '/tmp/nope'], null), keyCredential()));
    assert.ok(isPosternError(e, 'HOST_KEY_UNKNOWN'), String(e));
    assert.equal(e.sideEffectStarted, false);
    assert.equal(e.details.offered_fingerprint, srv.hostKey.fingerprint);
    assert.equal(srv.execs.length, before);
    assert.equal(srv.authFailures, 0);
  });

  it('changed key → HOST_KEY_MISMATCH with both fingerprints; no exec, no credential sent', async () => {
    const before = srv.execs.length;
    const pinned = keyPair().fingerprint;
    const e = await rejection(executeSsh(action(srv, ['touch', '/tmp/nope'], pinned), passwordCredential()));
    assert.ok(isPosternError(e, 'HOST_KEY_MISMATCH'), String(e));
    assert.equal(e.sideEffectStarted, false);
    assert.equal(e.details.pinned_fingerprint, pinned);
    assert.equal(e.details.offered_fingerprint, srv.hostKey.fingerprint);
    assert.equal(srv.execs.length, before);
    assert.equal(srv.authFailures, 0);
  });

  it('wrong password / unknown key → TARGET_ERROR before anything runs, no secret in the error', async () => {
    const before = srv.execs.length;
    for (const cred of [passwordCredential('not-the-password'), keyCredential(keyPair().private)]) {
      const e = await rejection(executeSsh(action(srv, ['touch', '/tmp/nope']), cred));
      assert.ok(isPosternError(e, 'TARGET_ERROR'), String(e));
      assert.equal(e.sideEffectStarted, false);
      assert.equal(e.details.reason, 'auth_failed');
      assertNoSecret(e);
      assert.ok(!JSON.stringify(e.details).includes('not-the-password'));
    }
    assert.equal(srv.execs.length, before);
  });

  it('missing credential → CREDENTIAL_MISSING, wrong kind → CREDENTIAL_KIND_MISMATCH, without connecting', async () => {
    const e1 = await rejection(executeSsh(action(srv, ['true']), null));
    assert.ok(isPosternError(e1, 'CREDENTIAL_MISSING'));
    const bearer = { meta: { name: 'tok', kind: 'http_bearer' as const, fields: {} }, secret: { token: new Uint8Array([1]) } };
    const e2 = await rejection(executeSsh(action(srv, ['true']), bearer));
    assert.ok(isPosternError(e2, 'CREDENTIAL_KIND_MISMATCH'));
  });

  it('nothing listening → TARGET_ERROR, side_effect_started false', async () => {
    const closed = await startSshServer();
    const a = action(closed, ['true']);
    await closed.close();
    const e = await rejection(executeSsh(a, keyCredential(), { connectTimeoutMs: 3000 }));
    assert.ok(isPosternError(e, 'TARGET_ERROR'), String(e));
    assert.equal(e.sideEffectStarted, false);
  });
});
