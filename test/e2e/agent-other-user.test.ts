/**
 * An agent that runs as another OS user (docs/threat-model.md, "Where the
 * boundary is"): a real second user (`useradd postern-agent-a`; CI runs as
 * root), whose processes try the same-user attacks against the operator's
 * home and daemon — read the vault, write the catalog, a `run/` file and an
 * authorization record, signal the daemon, connect to the operator and the
 * agent sockets. The kernel refuses each (the home is 0700, another uid may
 * not signal), and the home is unchanged. The agent socket is in the home
 * too, so such a user cannot call tools either: that is the set-up's cost
 * today, and this test records it.
 *
 * Needs root and useradd: skipped with the reason otherwise;
 * POSTERN_REQUIRE_OS_USERS=1 (CI) makes that a failure.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Installation } from '../helpers/daemon.js';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import { installWithReadTool } from '../helpers/boundary.js';

const USER = 'postern-agent-a';

function osUsersSkip(): string | false {
  const why = process.getuid?.() !== 0 ? 'not running as root' : !existsSync('/usr/sbin/useradd') ? '/usr/sbin/useradd is absent' : null;
  if (why === null) return false;
  if (process.env['POSTERN_REQUIRE_OS_USERS'] === '1') throw new Error(`POSTERN_REQUIRE_OS_USERS=1 but ${why}`);
  return `${why} (a second OS user is needed; POSTERN_REQUIRE_OS_USERS=1 makes this a failure)`;
}

const skip = osUsersSkip();

/** The user's uid and gid, creating the user (no home, no login) the first time. */
function agentUser(): { uid: number; gid: number } {
  const id = (flag: string): number => Number(spawnSync('id', [flag, USER], { encoding: 'utf8' }).stdout.trim());
  if (spawnSync('id', [USER]).status !== 0) {
    const r = spawnSync('/usr/sbin/useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', USER], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
  }
  return { uid: id('-u'), gid: id('-g') };
}

const ATTACKS = String.raw`
const fs = require('node:fs');
const net = require('node:net');
const { join } = require('node:path');
const [home, daemonPid] = [process.argv[1], Number(process.argv[2])];
const out = { uid: process.getuid() };
const tryIt = (name, f) => { try { f(); out[name] = 'ok'; } catch (e) { out[name] = e.code || e.message; } };
tryIt('kill', () => process.kill(daemonPid, 'SIGKILL'));
tryIt('stop', () => process.kill(daemonPid, 'SIGSTOP'));
tryIt('list_home', () => fs.readdirSync(home));
tryIt('read_vault', () => fs.readFileSync(join(home, 'vault.pvlt')));
tryIt('write_catalog', () => fs.appendFileSync(join(home, 'catalog.yaml'), '\n# edited\n'));
tryIt('write_page_info', () => fs.writeFileSync(join(home, 'run', 'approval-page.json'), '{}'));
tryIt('write_page_authorization', () => fs.writeFileSync(join(home, 'approval-page.authorized.json'), '{}'));
const connectUnix = (p) => new Promise((res) => { const s = net.connect(p); s.on('connect', () => { s.destroy(); res('ok'); }); s.on('error', (e) => res(e.code)); });
(async () => {
  out.operator_socket = await connectUnix(join(home, 'run', 'operator.sock'));
  out.agent_socket = await connectUnix(join(home, 'run', 'agent.sock'));
  process.stdout.write(JSON.stringify(out));
})();
`;

const WATCHED = ['vault.pvlt', 'catalog.yaml', 'approval-page.authorized.json', 'run/approval-page.json'];

function digestHome(home: string): string {
  const h = createHash('sha256');
  for (const name of WATCHED) h.update(`${name}\n`).update(existsSync(join(home, name)) ? readFileSync(join(home, name)) : 'absent');
  return h.digest('hex');
}

describe('an agent as another OS user against the operator home and daemon', { skip }, () => {
  let inst: Installation;
  let http: FakeHttpServer;

  before(async () => {
    ({ inst, http } = await installWithReadTool('CANARY-other-user-token'));
    // Only the home's own mode protects it: the directory around it is open to other users.
    chmodSync(inst.sb.dir, 0o755);
    await inst.startDaemon();
  });

  after(async () => {
    await inst?.cleanup();
    await http?.close();
  });

  it('the kernel refuses every same-user attack to another uid, and the home is unchanged', async () => {
    const { uid, gid } = agentUser();
    const before = digestHome(inst.sb.home);
    const r = spawnSync(process.execPath, ['-e', ATTACKS, inst.sb.home, String(inst.daemon?.pid ?? 0)], { uid, gid, encoding: 'utf8', cwd: '/' });
    assert.equal(r.status, 0, r.stderr);
    const o = JSON.parse(r.stdout) as Record<string, unknown>;
    assert.equal(o['uid'], uid);
    assert.equal(o['kill'], 'EPERM');
    assert.equal(o['stop'], 'EPERM');
    for (const k of ['list_home', 'read_vault', 'write_catalog', 'write_page_info', 'write_page_authorization', 'operator_socket', 'agent_socket']) assert.equal(o[k], 'EACCES', `${k}: ${String(o[k])}`);
    assert.equal(digestHome(inst.sb.home), before, 'the home changed');
    // The operator's own agent still calls through the daemon.
    const agent = await inst.client();
    const call = (await agent.callTool({ name: 'get_json', arguments: {} })) as { isError?: boolean };
    assert.notEqual(call.isError, true, JSON.stringify(call));
  });
});
