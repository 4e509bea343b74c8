/**
 * Start-up is all or nothing: a daemon that cannot set up every part (here: a
 * socket path planted by someone else) exits 1 with HOME_UNSAFE and leaves
 * nothing serving — no agent socket answering while the operator channel is
 * missing, which would let calls wait for approvals nobody can give.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { install, type Installation } from '../helpers/daemon.js';
import { openJournals } from '../../src/journal/index.js';

describe('daemon start-up', () => {
  let inst: Installation;
  let run: string;

  before(async () => {
    inst = await install({ secrets: [] });
    run = join(inst.sb.home, 'run');
  });
  after(() => inst.cleanup());

  const plants: [string, (path: string) => Promise<void>][] = [
    ['a symlink at run/operator.sock', (p) => symlink(join(inst.sb.dir, 'elsewhere.sock'), p)],
    ['a regular file at run/operator.sock', (p) => writeFile(p, 'not a socket', { mode: 0o600 })],
    ['a directory at run/operator.sock', (p) => mkdir(p)],
  ];
  for (const [name, plant] of plants) {
    it(`${name}: exits 1 with HOME_UNSAFE and serves nothing`, { timeout: 120_000 }, async () => {
      await mkdir(run, { recursive: true, mode: 0o700 });
      const target = join(run, 'operator.sock');
      await rm(target, { recursive: true, force: true });
      await plant(target);
      const r = await inst.sb.run(['daemon', '--passphrase-file', inst.passFile]);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /^postern: HOME_UNSAFE: /m);
      assert.doesNotMatch(r.stderr, /daemon ready/);
      assert.equal(existsSync(join(run, 'agent.sock')), false, 'no agent socket is left behind');
      await rm(target, { recursive: true, force: true });
    });
  }

  it('a symlink at run/agent.sock: exits 1 with HOME_UNSAFE', { timeout: 120_000 }, async () => {
    await mkdir(run, { recursive: true, mode: 0o700 });
    await symlink(join(inst.sb.dir, 'elsewhere.sock'), join(run, 'agent.sock'));
    const r = await inst.sb.run(['daemon', '--passphrase-file', inst.passFile]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^postern: HOME_UNSAFE: /m);
    assert.equal(existsSync(join(run, 'operator.sock')), false);
  });

  it('a clean stop journals the lock before the journals close, and the unlock at start; long client labels are cut with a mark', { timeout: 120_000 }, async () => {
    await rm(run, { recursive: true, force: true });
    await inst.startDaemon();
    // A client label over the limit is journaled cut, with a visible mark of what was cut.
    const agent = await inst.client({ name: `agent-${'n'.repeat(300)}` });
    await agent.listTools();
    await agent.close();
    assert.equal(await inst.stopDaemon('SIGTERM'), 0);
    assert.doesNotMatch(inst.daemonLog, /cannot record|journal is closed/);
    const j = openJournals(join(inst.sb.home, 'journal'), { readonly: true });
    try {
      const types = j.sessions.events(null).map((e) => `${e.type}${e.type === 'lock' ? `:${String(e.data['reason'])}` : ''}`);
      const last = types.slice(-4);
      assert.deepEqual(last, ['daemon_started', 'unlock', 'lock:SIGTERM', 'daemon_stopped'], types.join(','));
      const names = j.sessions.listSessions({}).map((x) => x.client_name);
      assert.ok(names.includes(`agent-${'n'.repeat(122)}…[+178 chars]`), names.join(','));
    } finally {
      j.close();
    }
    const audit = await inst.sb.run(['audit', 'session', '--daemon']);
    assert.equal(audit.code, 0, audit.stderr);
    assert.match(audit.stdout, /unlock/);
    assert.match(audit.stdout, /lock/);
  });
});
