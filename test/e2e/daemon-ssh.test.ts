/**
 * An agent runs SSH tools end to end: the official MCP client over real stdio
 * (`postern mcp`) → the real daemon → a real OpenSSH `sshd` on loopback,
 * authenticating with a vault key the agent never sees. Host keys are pinned
 * with `postern ssh trust`; approvals go through the operator channel; every
 * call is checked in the Activity journal with `postern audit`. Remote
 * effects are proved with files in the sshd's temporary directory.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { install, type Installation } from '../helpers/daemon.js';
import { runInPty } from '../helpers/pty.js';
import { sshdSkip, startSshd, type RealSshd } from '../helpers/sshd.js';
import { waitFor } from '../helpers/wait.js';

const key = (): string => `key-${randomBytes(8).toString('hex')}`;
type Result = { isError?: boolean; structuredContent?: Record<string, unknown>; content?: { type: string; text?: string }[] };

const obj = (props: Record<string, unknown>, required: string[] = []) => ({ type: 'object', properties: props, required });
const str = { type: 'string', maxLength: 500 };

function catalogFor(main: RealSshd, other: RealSshd, pins: { main?: string; impostor?: string; fragile?: string }) {
  const target = (s: RealSshd, pin: string | undefined) => ({ ssh: { host: s.host, port: s.port, user: s.user, credential: 'deploy-key', ...(pin === undefined ? {} : { host_key: pin }) } });
  const ssh = (t: string, argv: string[]) => ({ target: t, argv });
  return {
    targets: { box: target(main, pins.main), impostor: target(other, pins.impostor), fragile: target(other, pins.fragile) },
    tools: {
      show_file: { description: 'Print a file.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: obj({ path: str }, ['path']), ssh: ssh('box', ['cat', '--', '{path}']) }] },
      echo_args: { description: 'Echo two arguments, NUL-separated.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: obj({ a: str, b: str }, ['a', 'b']), ssh: ssh('box', ['printf', '%s\\0', '{a}', '{b}']) }] },
      fail_with: { description: 'Exit with a status.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: obj({ code: { type: 'string', pattern: '^[0-9]{1,3}$' } }, ['code']), ssh: ssh('box', ['sh', '-c', 'echo oops >&2; exit "$1"', 'fail', '{code}']) }] },
      append_line: {
        description: 'Append a line to a file.',
        effect: 'write',
        approval: 'session',
        revisions: [{ revision: 1, input: obj({ line: str, file: str }, ['line', 'file']), ssh: ssh('box', ['sh', '-c', 'printf "%s\\n" "$1" >> "$2"', 'append', '{line}', '{file}']) }],
      },
      deploy: {
        description: 'Deploy (per-call approval).',
        effect: 'destructive',
        approval: 'per-call',
        revisions: [{ revision: 1, input: obj({ file: str }, ['file']), ssh: ssh('box', ['sh', '-c', 'echo deployed >> "$1"', 'deploy', '{file}']) }],
      },
      slow_box: {
        description: 'A long write the client will cancel.',
        effect: 'write',
        approval: 'none',
        revisions: [{ revision: 1, input: obj({ file: str }, ['file']), ssh: ssh('box', ['sh', '-c', 'echo started >> "$1"; exec sleep 20.4343', 'slow', '{file}']) }],
      },
      impostor_read: { description: 'A host whose key is not the pinned one.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: obj({ file: str }, ['file']), ssh: ssh('impostor', ['touch', '--', '{file}']) }] },
      slow_write: {
        description: 'A long write on a host that will die.',
        effect: 'write',
        approval: 'none',
        revisions: [{ revision: 1, input: obj({ file: str }, ['file']), ssh: ssh('fragile', ['sh', '-c', 'echo started >> "$1"; sleep 20.4242; echo finished >> "$1"', 'slow', '{file}']) }],
      },
    },
  };
}

const skip = sshdSkip();

describe('daemon: SSH tools over MCP against a real sshd', { skip }, () => {
  let inst: Installation;
  let main: RealSshd;
  let other: RealSshd;
  let agent: Client;

  before(async () => {
    main = await startSshd();
    other = await startSshd();
    inst = await install({ secrets: [{ name: 'deploy-key', kind: 'ssh_key', value: main.clientKey.private }], config: { ssh: { timeout_ms: 15_000 } } });
    // `other` accepts the same client key, so only its host key tells the two apart.
    writeFileSync(join(other.dir, 'authorized_keys'), `${main.clientKey.public}\n`);
    await inst.acceptCatalog(catalogFor(main, other, { impostor: main.hostKeyFingerprint, fragile: other.hostKeyFingerprint }));
    await inst.startDaemon();
    agent = await inst.client();
  });

  after(async () => {
    inst.sb.assertNeverPrinted(main.clientKey.private.trim(), 'the private key');
    await inst.cleanup();
    await main.stop();
    await other.stop();
  });

  const call = async (name: string, args: Record<string, unknown>): Promise<Result> => (await agent.callTool({ name, arguments: args })) as Result;
  const facts = (r: Result): Record<string, unknown> => r.structuredContent ?? {};
  const g = (): string[] => ['--passphrase-file', inst.passFile];

  async function auditShow(callId: unknown): Promise<Record<string, unknown>> {
    const r = await inst.sb.run(['audit', 'show', String(callId), '--json']);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  }

  type Operator = Awaited<ReturnType<Installation['operator']>>;

  /** The pending card for `tool`, once the daemon lists one (polled: approvals.list). */
  async function pendingCard(op: Operator, tool: string): Promise<Record<string, unknown>> {
    const found: { card?: Record<string, unknown> } = {};
    await waitFor(async () => {
      found.card = ((await op.request('approvals.list', {})) as Record<string, unknown>[]).find((c) => c['tool'] === tool);
      return found.card !== undefined;
    }, `a pending approval for ${tool}`);
    return found.card!;
  }

  async function approveNext(tool: string, scope: 'once' | 'session'): Promise<Record<string, unknown>> {
    const op = await inst.operator();
    try {
      const card = await pendingCard(op, tool);
      await op.request('approvals.decide', { approval_id: String(card['id']), verdict: { verdict: 'approve', scope } });
      return card;
    } finally {
      op.close();
    }
  }

  it('SSH tools are listed with the SSH output envelope', async () => {
    const { tools } = await agent.listTools();
    const show = tools.find((t) => t.name === 'show_file');
    assert.ok((show?.outputSchema?.properties as Record<string, unknown> | undefined)?.['exit_code'] !== undefined);
    assert.ok((tools.find((t) => t.name === 'append_line')?.inputSchema.required ?? []).includes('idempotency_key'));
  });

  it('an unpinned host key: HOST_KEY_UNKNOWN before approval, the host is not contacted', async () => {
    const before = main.log().length;
    const r = await call('show_file', { path: join(main.dir, 'never') });
    assert.equal(facts(r)['error_code'], 'HOST_KEY_UNKNOWN', JSON.stringify(r));
    assert.equal(facts(r)['side_effect_started'], false);
    assert.equal(facts(r)['required_action'], 'run_postern_ssh_trust');
    assert.match(String(facts(r)['message']), /postern ssh trust box/);
    const row = await auditShow(facts(r)['call_id']);
    assert.equal(row['status'], 'rejected');
    assert.ok(!main.log().slice(before).includes('Connection from'), 'sshd saw no connection');
  });

  it('`postern ssh trust` on a changed key warns; with other pending edits it writes the pin and accepts nothing', async () => {
    const catalogPath = join(inst.sb.home, 'catalog.yaml');
    const accepted = readFileSync(catalogPath, 'utf8');
    const acceptedRecord = readFileSync(join(inst.sb.home, 'catalog.accepted.json'), 'utf8');
    writeFileSync(catalogPath, `${accepted}# an unreviewed edit\n`);
    try {
      const r = await inst.sb.run(['ssh', 'trust', 'impostor', '--fingerprint', other.hostKeyFingerprint, ...g()]);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stdout, /WARNING: this differs from the pinned/);
      assert.match(r.stderr, /CATALOG_PENDING: nothing was accepted: catalog\.yaml has other unaccepted edits besides this pin/);
      const written = readFileSync(catalogPath, 'utf8');
      assert.ok(written.includes(other.hostKeyFingerprint) && written.includes('# an unreviewed edit'), 'pin written, the edit kept');
      assert.equal(readFileSync(join(inst.sb.home, 'catalog.accepted.json'), 'utf8'), acceptedRecord, 'nothing accepted');
    } finally {
      writeFileSync(catalogPath, accepted);
    }
  });

  it('`postern ssh trust` refuses without a check, refuses a wrong fingerprint, records nothing on "n", then pins and accepts', async () => {
    const catalogPath = join(inst.sb.home, 'catalog.yaml');
    const before = readFileSync(catalogPath, 'utf8');
    assert.match((await inst.sb.run(['catalog', 'show'])).stdout, new RegExp(`^box +${main.user}@127\\.0\\.0\\.1:${main.port} +untrusted: run \`postern ssh trust box\`$`, 'm'));
    let r = await inst.sb.run(['ssh', 'trust', 'box', '--yes', ...g()]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /--fingerprint/);
    r = await inst.sb.run(['ssh', 'trust', 'box', '--fingerprint', other.hostKeyFingerprint, ...g()]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /HOST_KEY_MISMATCH/);
    assert.match(r.stdout, new RegExp(main.hostKeyFingerprint.replace(/[+/]/g, '\\$&')));
    assert.equal(readFileSync(catalogPath, 'utf8'), before, 'nothing recorded');
    // On a terminal the operator sees the fingerprint and answers; "n" records nothing.
    const pty = await runInPty(inst.sb.home, ['ssh', 'trust', 'box', ...g()], [{ waitFor: /Trust SHA256:\S+\? \[y\/N\]/, send: 'n\r' }]);
    assert.equal(pty.code, 0, pty.screen);
    assert.ok(pty.screen.includes(`offers host key ${main.hostKeyFingerprint}`), pty.screen);
    assert.match(pty.screen, /nothing recorded/);
    assert.equal(readFileSync(catalogPath, 'utf8'), before, 'nothing recorded');
    r = await inst.sb.run(['ssh', 'trust', 'box', '--fingerprint', main.hostKeyFingerprint, ...g()]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /host key pinned to/);
    assert.match(r.stdout, /accepted catalog/);
    await waitFor(() => inst.daemonLog.includes('adopted catalog'), 'the daemon adopted the pin');
    const shown = JSON.parse((await inst.sb.run(['catalog', 'show', '--json'])).stdout) as { ssh_targets: { target: string; host_key: string | null }[] };
    assert.equal(shown.ssh_targets.find((t) => t.target === 'box')?.host_key, main.hostKeyFingerprint);
    r = await inst.sb.run(['ssh', 'trust', 'box', '--fingerprint', main.hostKeyFingerprint, ...g()]);
    assert.match(r.stdout, /already pinned/);
  });

  it('a pinned host runs the exact argv; the journal shows it', async () => {
    const file = join(main.dir, 'hello.txt');
    writeFileSync(file, 'hello from the server\n');
    const r = await call('show_file', { path: file });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(facts(r)['stdout'], 'hello from the server\n');
    assert.equal(facts(r)['exit_code'], 0);
    assert.equal(facts(r)['host_key_fingerprint'], main.hostKeyFingerprint);
    const row = await auditShow(facts(r)['call_id']);
    const target = (row['target'] ?? {}) as Record<string, unknown>;
    assert.deepEqual(target['argv'], ['cat', '--', file]);
    assert.equal(target['host_key_fingerprint'], main.hostKeyFingerprint);
  });

  it('hostile arguments arrive byte-exact as single argv entries', async () => {
    const a = `$(touch ${join(main.dir, 'pwned')}); \`id\` 'q' "dq" \\ \n tab\t ü 🙂`;
    const b = '--not-an-option-here-because-it-is-after-the-format';
    const r = await call('echo_args', { a, b: `x${b}` });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(facts(r)['stdout'], `${a}\0x${b}\0`);
    assert.equal(existsSync(join(main.dir, 'pwned')), false);
  });

  it('an argument starting with "-" where the template does not allow it is refused before connecting', async () => {
    const r = await call('show_file', { path: '-n' });
    // `cat -- {path}`: after `--`, so allowed; the file just does not exist.
    assert.equal(facts(r)['error_code'], 'TARGET_ERROR');
    assert.equal(facts(r)['exit_code'], 1);
    const refused = await call('echo_args', { a: '-v', b: 'x' });
    assert.equal(facts(refused)['error_code'], 'VALIDATION_FAILED', JSON.stringify(refused));
    assert.equal(facts(refused)['side_effect_started'], false);
  });

  it('a non-zero exit is a TARGET_ERROR with the exit code and stderr, effect started', async () => {
    const r = await call('fail_with', { code: '7' });
    assert.equal(r.isError, true);
    assert.equal(facts(r)['error_code'], 'TARGET_ERROR');
    assert.equal(facts(r)['exit_code'], 7);
    assert.equal(facts(r)['stderr'], 'oops\n');
    assert.equal(facts(r)['side_effect_started'], true);
  });

  it('the remote printing the private key (whole or in pieces) is redacted', async () => {
    const keyFile = join(main.dir, 'leaked_key');
    writeFileSync(keyFile, main.clientKey.private);
    const r = await call('show_file', { path: keyFile });
    const text = JSON.stringify(r);
    assert.match(text, /\[REDACTED:deploy-key\]/);
    const bodyLines = main.clientKey.private.split('\n').filter((l) => l.length >= 16 && !l.startsWith('-----'));
    for (const line of bodyLines) assert.ok(!text.includes(line), 'a key line came back');
    const row = JSON.stringify(await auditShow(facts(r)['call_id']));
    for (const line of bodyLines) assert.ok(!row.includes(line), 'a key line reached the journal');
  });

  it('session approval, then idempotent replay: the append runs exactly once', async () => {
    const file = join(main.dir, 'log.txt');
    const k = key();
    const pending = call('append_line', { line: 'one', file, idempotency_key: k });
    const card = await approveNext('append_line', 'session');
    assert.deepEqual((card['target'] as Record<string, unknown>)['argv'], ['sh', '-c', 'printf "%s\\n" "$1" >> "$2"', 'append', 'one', file]);
    const first = await pending;
    assert.equal(first.isError, undefined, JSON.stringify(first));
    const again = await call('append_line', { line: 'one', file, idempotency_key: k });
    assert.equal(facts(again)['replayed'], true);
    assert.equal(readFileSync(file, 'utf8'), 'one\n');
    const conflict = await call('append_line', { line: 'two', file, idempotency_key: k });
    assert.equal(facts(conflict)['error_code'], 'IDEMPOTENCY_KEY_CONFLICT');
    const second = await call('append_line', { line: 'two', file, idempotency_key: key() });
    assert.equal(second.isError, undefined, 'the session grant covers the next call');
    assert.equal(readFileSync(file, 'utf8'), 'one\ntwo\n');
  });

  it('per-call approval shows the exact argv; a denial runs nothing', async () => {
    const file = join(main.dir, 'deployed.txt');
    const pending = call('deploy', { file, idempotency_key: key() });
    const op = await inst.operator();
    try {
      const card = await pendingCard(op, 'deploy');
      assert.deepEqual((card['target'] as Record<string, unknown>)['argv'], ['sh', '-c', 'echo deployed >> "$1"', 'deploy', file]);
      await op.request('approvals.decide', { approval_id: String(card['id']), verdict: { verdict: 'deny', reason: 'not today' } });
    } finally {
      op.close();
    }
    const r = await pending;
    assert.equal(facts(r)['error_code'], 'APPROVAL_DENIED');
    assert.equal(existsSync(file), false);
  });

  it('a revision whose command widens authority needs a per-call approval despite the session grant', async () => {
    const cat = catalogFor(main, other, { main: main.hostKeyFingerprint, impostor: main.hostKeyFingerprint, fragile: other.hostKeyFingerprint });
    const r1 = cat.tools.append_line.revisions[0]!;
    const r2 = { ...r1, revision: 2, ssh: { target: 'box', argv: ['sh', '-c', 'printf "%s\\n" "$1" | tee -a "$2" >/dev/null', 'append', '{line}', '{file}'] }, previous: { policy: 'adapt' } };
    const adopted = (inst.daemonLog.match(/adopted catalog/g) ?? []).length;
    await inst.acceptCatalog({ ...cat, tools: { ...cat.tools, append_line: { ...cat.tools.append_line, revisions: [r1, r2] } } });
    await waitFor(() => (inst.daemonLog.match(/adopted catalog/g) ?? []).length > adopted, 'the daemon adopted revision 2');
    const file = join(main.dir, 'widened.txt');
    const pending = call('append_line', { line: 'three', file, idempotency_key: key() });
    const card = await approveNext('append_line', 'once');
    assert.ok((card['widening'] as string[]).length > 0, JSON.stringify(card));
    assert.deepEqual((card['target'] as Record<string, unknown>)['argv'], ['sh', '-c', 'printf "%s\\n" "$1" | tee -a "$2" >/dev/null', 'append', 'three', file]);
    const r = await pending;
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(facts(r)['result_revision'], 2);
    assert.equal(readFileSync(file, 'utf8'), 'three\n');
  });

  it('a client cancelling a running command: TERM and channel closed, journaled outcome_unknown, never re-run', async () => {
    const file = join(main.dir, 'cancelled.txt');
    const k = key();
    const ctl = new AbortController();
    const pending = agent.callTool({ name: 'slow_box', arguments: { file, idempotency_key: k } }, { signal: ctl.signal });
    await waitFor(() => existsSync(file), 'the command started');
    ctl.abort();
    await assert.rejects(pending);
    // The daemon journals the cancelled call's outcome after the client has gone: poll the journal.
    let calls: { status: string; call: { idempotency_key: string | null } }[] = [];
    await waitFor(async () => {
      calls = JSON.parse((await inst.sb.run(['audit', 'activity', '--tool', 'slow_box', '--json'])).stdout) as typeof calls;
      return calls[0] !== undefined && calls[0].status !== 'in_progress';
    }, () => `the cancelled call to leave in_progress in the journal: ${JSON.stringify(calls)}`);
    assert.equal(calls[0]?.status, 'outcome_unknown', JSON.stringify(calls));
    const retry = await call('slow_box', { file, idempotency_key: k });
    assert.equal(facts(retry)['error_code'], 'OUTCOME_UNKNOWN');
    assert.equal(readFileSync(file, 'utf8'), 'started\n', 'not run again');
  });

  it('a changed host key: HOST_KEY_MISMATCH, nothing runs, the journal has both fingerprints', async () => {
    const marker = join(other.dir, 'impostor-ran');
    const r = await call('impostor_read', { file: marker });
    assert.equal(facts(r)['error_code'], 'HOST_KEY_MISMATCH', JSON.stringify(r));
    assert.equal(facts(r)['side_effect_started'], false);
    assert.equal(existsSync(marker), false);
    const row = await auditShow(facts(r)['call_id']);
    const target = row['target'] as Record<string, unknown>;
    const outcome = row['outcome'] as Record<string, unknown>;
    assert.equal(target['host_key_fingerprint'], main.hostKeyFingerprint);
    assert.deepEqual(outcome['target_extra'], { offered_fingerprint: other.hostKeyFingerprint, pinned_fingerprint: main.hostKeyFingerprint });
  });

  it('sshd killed mid-command: a clear error, an outcome that is not success, and no re-run', async () => {
    const file = join(other.dir, 'slow.txt');
    const k = key();
    const pending = call('slow_write', { file, idempotency_key: k });
    await waitFor(() => existsSync(file), 'the command started');
    other.kill('SIGKILL');
    const r = await pending;
    assert.equal(r.isError, true);
    assert.equal(facts(r)['error_code'], 'TARGET_ERROR', JSON.stringify(r));
    assert.equal(facts(r)['side_effect_started'], true);
    const row = await auditShow(facts(r)['call_id']);
    assert.equal((row['outcome'] as Record<string, unknown>)['status'], 'outcome_unknown');
    const retry = await call('slow_write', { file, idempotency_key: k });
    assert.equal(facts(retry)['error_code'], 'OUTCOME_UNKNOWN');
    assert.equal(readFileSync(file, 'utf8'), 'started\n');
  });
});
