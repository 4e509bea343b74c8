/**
 * SSH executor: the exact-argv property (THREATS row 7) through a real
 * `/bin/sh -c` on the in-process server, the timeout (signal, close,
 * TARGET_TIMEOUT) and the output caps.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isPosternError } from '../../../../src/rules/errors.js';
import { executeSsh } from '../../../../src/executors/ssh/index.js';
import type { TestSshServer } from './support.js';
import { action, keyCredential, rejection, startSshServer } from './support.js';
import { waitFor } from '../../../helpers/wait.js';

const nasty = fc.constantFrom('$(id)', '`id`', ';', "'", '"', '\n', '-n', '--', '-', 'é', '🙂', '\\', '*', '$HOME', '|', '&&', ' ', '\t', '%s', '!');
const piece = fc.oneof(nasty, fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme-ascii' }));
const arg = fc.array(piece, { maxLength: 4 }).map((parts) => parts.join('').replaceAll('\0', ''));

describe('ssh executor: command line and limits', () => {
  let srv: TestSshServer;
  before(async () => {
    srv = await startSshServer();
  });
  after(() => srv.close());

  it('every argument comes back byte-exact through printf %s\\0', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(arg, { minLength: 1, maxLength: 6 }), async (args) => {
        const res = await executeSsh(action(srv, ['printf', '%s\\0', ...args]), keyCredential());
        assert.equal(res.exit_code, 0, res.stderr);
        assert.equal(res.stdout, args.map((a) => `${a}\0`).join(''));
      }),
      { numRuns: 50 },
    );
  });

  it('the server receives exactly action.command', async () => {
    const a = action(srv, ['echo', '$(id)', "it's"]);
    await executeSsh(a, keyCredential());
    assert.equal(srv.execs.at(-1), `'echo' '$(id)' 'it'\\''s'`);
  });

  it('timeout: signals TERM, closes, TARGET_TIMEOUT with side_effect_started', async () => {
    const started = Date.now();
    const e = await rejection(executeSsh(action(srv, ['sleep', '30']), keyCredential(), { timeoutMs: 700 }));
    assert.ok(isPosternError(e, 'TARGET_TIMEOUT'), String(e));
    assert.equal(e.sideEffectStarted, true);
    assert.equal(e.details.phase, 'command');
    assert.ok(Date.now() - started < 5000);
    // The server records the TERM request when it arrives, which can be after the call rejected.
    await waitFor(() => srv.signals.includes('TERM'), 'the server to receive the TERM signal request', { timeoutMs: 10_000 });
    assert.ok(srv.signals.includes('TERM'));
  });

  // stderr is written before the flood on purpose: ssh2's *server* (this test server, not the
  // client under test) never resumes a stderr write that waited for window space behind a
  // stdout write. The order "flood, then stderr" is proved against the real sshd.
  it('output cap: stdout cut at the cap with truncated set; the exit code still arrives', async () => {
    const cap = 64 * 1024;
    const res = await executeSsh(action(srv, ['sh', '-c', 'echo done >&2; yes | head -c 5000000']), keyCredential(), { maxOutputBytes: cap });
    assert.equal(res.stdout.length, cap);
    assert.ok(res.stdout.startsWith('y\ny\n'));
    assert.equal(res.stdout_truncated, true);
    assert.equal(res.stderr, 'done\n');
    assert.equal(res.stderr_truncated, false);
    assert.equal(res.exit_code, 0);
  });

  it('default cap (1 MiB) with yes | head -c 5000000', async () => {
    const res = await executeSsh(action(srv, ['sh', '-c', 'yes | head -c 5000000']), keyCredential());
    assert.equal(res.stdout.length, 1024 * 1024);
    assert.equal(res.stdout_truncated, true);
  });

  it('both streams capped: the channel is closed early', async () => {
    const started = Date.now();
    const res = await executeSsh(action(srv, ['sh', '-c', 'head -c 5000 /dev/zero | tr "\\0" e >&2; yes']), keyCredential(), { maxOutputBytes: 1000, timeoutMs: 10_000 });
    assert.equal(res.stdout_truncated && res.stderr_truncated, true);
    assert.equal(res.stdout.length, 1000);
    assert.equal(res.stderr, 'e'.repeat(1000));
    assert.equal(res.exit_code, null);
    assert.ok(Date.now() - started < 5000);
  });

  it('a truncated multibyte character is dropped, not half-kept', async () => {
    const res = await executeSsh(action(srv, ['printf', 'aé']), keyCredential(), { maxOutputBytes: 2 });
    assert.equal(res.stdout, 'a');
    assert.equal(res.stdout_truncated, true);
  });

  it('connection dropped mid-command → TARGET_ERROR with side_effect_started true', async () => {
    const before = srv.execs.length;
    const call = rejection(executeSsh(action(srv, ['sleep', '30']), keyCredential(), { timeoutMs: 10_000 }));
    // The server records the exec as it accepts it: from then on the command runs.
    await waitFor(() => srv.execs.length > before, 'the server to accept the exec', { timeoutMs: 10_000 });
    srv.dropConnections();
    const e = await call;
    assert.ok(isPosternError(e, 'TARGET_ERROR'), String(e));
    assert.equal(e.sideEffectStarted, true);
    assert.equal(e.details.reason, 'connection_closed');
  });

  it('refuses bad options before connecting', async () => {
    const before = srv.execs.length;
    const e = await rejection(executeSsh(action(srv, ['true']), keyCredential(), { timeoutMs: 0 }));
    assert.ok(isPosternError(e, 'INPUT_INVALID'));
    assert.equal(srv.execs.length, before);
  });
});
