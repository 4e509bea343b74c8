/**
 * Secrets change while the daemon runs (SSH): `postern secret rotate` of the
 * key a pooled connection authenticated with. The real daemon (built CLI)
 * talks to an in-process ssh2 server that accepts both the old and the new
 * client key and records, per connection, which key authenticated it and
 * when it closed. Proves that the pooled connection opened with the old key
 * is closed on rotation (without waiting for the idle close), that the next
 * call authenticates with the new key, that the retired key printed by the
 * remote is redacted, and that `rm` fails the tool with CREDENTIAL_MISSING
 * without connecting. Waits for events (daemon log lines, server connection
 * state), never for durations.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import ssh2 from 'ssh2';
import type { Client } from '@modelcontextprotocol/client';
import { sshFingerprint } from '../../src/executors/ssh/index.js';
import { encodingsOf } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';
import { install, type Installation } from '../helpers/daemon.js';

type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };

function keyPair(): { private: string; public: string } {
  const dir = mkdtempSync(join(tmpdir(), 'postern-rotkey-'));
  try {
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'rotation', '-f', join(dir, 'k')]);
    return { private: readFileSync(join(dir, 'k'), 'utf8'), public: readFileSync(join(dir, 'k.pub'), 'utf8').trim() };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

interface Conn {
  key: 'old' | 'new' | null;
  open: boolean;
}

/** An SSH server accepting two client keys; `print-old` prints the old key file (a remote that still holds it). */
async function startServer(host: { private: string }, keys: { old: string; new: string }) {
  const parsed = { old: ssh2.utils.parseKey(keys.old) as ssh2.ParsedKey, new: ssh2.utils.parseKey(keys.new) as ssh2.ParsedKey };
  const conns: Conn[] = [];
  let oldPrivate = '';
  const server = new ssh2.Server({ hostKeys: [host.private] }, (conn) => {
    const c: Conn = { key: null, open: true };
    conns.push(c);
    conn.on('close', () => (c.open = false));
    conn.on('error', () => undefined);
    conn.on('authentication', (ctx) => {
      if (ctx.method === 'publickey') {
        for (const which of ['old', 'new'] as const) {
          const k = parsed[which];
          if (ctx.key.algo !== k.type || !ctx.key.data.equals(k.getPublicSSH())) continue;
          if (ctx.signature === undefined || ctx.blob === undefined) return ctx.accept();
          if (k.verify(ctx.blob, ctx.signature, ctx.hashAlgo) === true) {
            c.key = which;
            return ctx.accept();
          }
        }
      }
      ctx.reject(['publickey']);
    });
    conn.on('ready', () => {
      conn.on('session', (accept) => {
        accept().on('exec', (acceptExec, _reject, info) => {
          const stream = acceptExec();
          stream.write(info.command.includes('print-old') ? oldPrivate : `authenticated with the ${c.key ?? '?'} key\n`);
          stream.exit(0);
          stream.end();
        });
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    conns,
    setOldPrivate: (pem: string) => (oldPrivate = pem),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('daemon: an SSH key rotated while the daemon runs', () => {
  const hostKey = keyPair();
  const oldKey = keyPair();
  const newKey = keyPair();
  let srv: Awaited<ReturnType<typeof startServer>>;
  let inst: Installation;
  let agent: Client;
  const results: string[] = [];

  before(async () => {
    srv = await startServer(hostKey, { old: oldKey.public, new: newKey.public });
    srv.setOldPrivate(oldKey.private);
    // A long idle close: only the rotation can end the pooled connection within the test.
    inst = await install({ secrets: [{ name: 'deploy-key', kind: 'ssh_key', value: oldKey.private }], config: { ssh: { idle_close_seconds: 3600 } } });
    const fingerprint = sshFingerprint(Buffer.from(hostKey.public.split(' ')[1] ?? '', 'base64'));
    const tool = (argv: string[]) => ({ description: argv.join(' '), effect: 'read', approval: 'none', revisions: [{ revision: 1, input: { type: 'object', properties: {} }, ssh: { target: 'box', argv } }] });
    await inst.acceptCatalog({
      targets: { box: { ssh: { host: '127.0.0.1', port: srv.port, user: userInfo().username, credential: 'deploy-key', host_key: fingerprint } } },
      tools: { which_key: tool(['which-key']), print_old: tool(['print-old']) },
    });
    await inst.startDaemon();
    agent = await inst.client();
  });

  after(async () => {
    try {
      const all = results.join('\n');
      for (const [what, pem] of [['old', oldKey.private], ['new', newKey.private]] as const) {
        const body = pem.split('\n').filter((l) => l !== '' && !l.startsWith('-----')).join('');
        inst.sb.assertNeverPrinted(body, `the ${what} private key`);
        for (const form of encodingsOf(body)) assert.ok(!all.includes(form), `the ${what} key reached the agent`);
      }
    } finally {
      await inst.cleanup();
      await srv.close();
    }
  });

  const call = async (name: string): Promise<Result> => {
    const r = (await agent.callTool({ name, arguments: {} })) as Result;
    results.push(JSON.stringify(r));
    return r;
  };
  const stdout = (r: Result): string => {
    const out = r.structuredContent?.['stdout'];
    return typeof out === 'string' ? out : JSON.stringify(r);
  };
  /** waitFor, with the daemon's log in the failure message. */
  const untilLogged = (cond: () => boolean, what: string): Promise<void> => waitFor(cond, () => `${what}\n${inst.daemonLog}`);

  it('rotate: the pooled connection of the old key is closed at once, the next call authenticates with the new key', async () => {
    assert.match(stdout(await call('which_key')), /the old key/);
    assert.match(stdout(await call('which_key')), /the old key/);
    assert.equal(srv.conns.length, 1, 'pooled: one connection for both calls');
    assert.equal(srv.conns[0]?.open, true);

    const r = await inst.sb.run(['secret', 'rotate', 'deploy-key', '--stdin', '--passphrase-file', inst.passFile], { input: newKey.private });
    assert.equal(r.code, 0, r.stderr);
    await untilLogged(() => /vault generation \d+ adopted .*rotated deploy-key;.* 1 SSH connections retired/.test(inst.daemonLog), 'the daemon adopts the rotation');
    await untilLogged(() => srv.conns[0]?.open === false, 'the old connection is closed');

    const next = await call('which_key');
    assert.match(stdout(next), /the new key/);
    assert.equal(srv.conns.length, 2);
    assert.equal(srv.conns[1]?.key, 'new');
  });

  it('the retired key, printed by a remote that still has it, is redacted', async () => {
    const r = await call('print_old');
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.match(stdout(r), /\[REDACTED:deploy-key\]/);
  });

  it('rm: the tool fails with CREDENTIAL_MISSING and nothing connects', async () => {
    const rm = await inst.sb.run(['secret', 'rm', 'deploy-key', '--yes', '--passphrase-file', inst.passFile]);
    assert.equal(rm.code, 0, rm.stderr);
    await untilLogged(() => /removed deploy-key; 1 SSH connections retired/.test(inst.daemonLog), 'the daemon adopts the removal');
    await untilLogged(() => srv.conns.every((c) => !c.open), 'every connection is closed');
    const before = srv.conns.length;
    const r = await call('which_key');
    assert.equal(r.structuredContent?.['error_code'], 'CREDENTIAL_MISSING');
    assert.equal(r.structuredContent?.['side_effect_started'], false);
    assert.equal(srv.conns.length, before, 'no connection was made');
  });
});
