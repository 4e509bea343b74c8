/**
 * An agent that runs as another OS user (docs/agent-users.md,
 * docs/threat-model.md "Where the boundary is"): real second users
 * (`useradd postern-agent-a`, `postern-agent-b`; CI runs as root) whose
 * `postern mcp` reaches the shared agent socket beside the home
 * (`<home>-agents/agent.sock`). The daemon reads every connection's peer
 * credentials from the kernel: a user is refused (AGENT_USER_NOT_ALLOWED)
 * until `postern agents allow` names it, is then served through `postern
 * mcp` and named in the Sessions journal, is refused a tool whose
 * `agent_users` does not name it, and is refused again from the next
 * connection after `agents revoke`. A forged allow list admits nobody. The
 * same-user attacks against the home and the daemon — read the vault, write
 * the catalog, a `run/` file, an authorization record or the allow list,
 * signal the daemon, connect to the operator and private agent sockets — are
 * refused by the kernel, and the home is unchanged.
 *
 * Needs root and useradd: skipped with the reason otherwise;
 * POSTERN_REQUIRE_OS_USERS=1 (CI) makes that a failure.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { Installation } from '../helpers/daemon.js';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import { installWithReadTool } from '../helpers/boundary.js';
import { childEnv, CLI } from '../helpers/cli.js';
import { agentUser, osUsersSkip, reachableByOthers } from '../helpers/os-users.js';

const USER_A = 'postern-agent-a';
const USER_B = 'postern-agent-b';

const skip = osUsersSkip();

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
tryIt('write_allow_list', () => fs.writeFileSync(join(home, 'agents.allowed.json'), '{}'));
tryIt('list_shared_dir', () => fs.readdirSync(home + '-agents'));
tryIt('write_shared_dir', () => fs.writeFileSync(join(home + '-agents', 'agent.sock.new'), ''));
const connectUnix = (p) => new Promise((res) => { const s = net.connect(p); s.on('connect', () => { s.destroy(); res('ok'); }); s.on('error', (e) => res(e.code)); });
(async () => {
  out.operator_socket = await connectUnix(join(home, 'run', 'operator.sock'));
  out.agent_socket = await connectUnix(join(home, 'run', 'agent.sock'));
  process.stdout.write(JSON.stringify(out));
})();
`;

const WATCHED = ['vault.pvlt', 'catalog.yaml', 'catalog.accepted.json', 'approval-page.authorized.json', 'agents.allowed.json', 'run/approval-page.json'];

function digestHome(home: string): string {
  const h = createHash('sha256');
  for (const name of WATCHED) h.update(`${name}\n`).update(existsSync(join(home, name)) ? readFileSync(join(home, name)) : 'absent');
  return h.digest('hex');
}

type ToolResult = { isError?: boolean; structuredContent?: Record<string, unknown>; content?: unknown };

describe('an agent as another OS user: the shared agent socket, the allow list and the home', { skip }, () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let a: { uid: number; gid: number };
  let b: { uid: number; gid: number };
  const clients: Client[] = [];
  /** Puts back the modes of the checkout's directories (opened for search so the agent users can run the CLI). */
  let restoreModes: () => void = () => undefined;
  const shared = (): string => join(`${inst.sb.home}-agents`, 'agent.sock');
  const cli = async (...args: string[]): Promise<string> => {
    const r = await inst.sb.run([...args, '--passphrase-file', inst.passFile]);
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stdout}\n${r.stderr}`);
    return r.stdout;
  };

  /** `postern mcp` run as `who` (setpriv: its uid, gid and no other groups) against the shared socket. */
  async function clientAs(who: { uid: number; gid: number }): Promise<Client> {
    const transport = new StdioClientTransport({
      command: '/usr/bin/setpriv',
      args: ['--reuid', String(who.uid), '--regid', String(who.gid), '--clear-groups', process.execPath, CLI, 'mcp'],
      env: childEnv(inst.sb.home, { extra: { POSTERN_AGENT_SOCKET: shared() } }),
      cwd: '/',
      stderr: 'pipe',
    });
    const client = new Client({ name: 'other-user-agent', version: '1.0.0' });
    clients.push(client);
    await client.connect(transport);
    return client;
  }

  /** A refused user's client is told AGENT_USER_NOT_ALLOWED at its first request. */
  async function assertRefused(who: { uid: number; gid: number }): Promise<void> {
    await assert.rejects(clientAs(who), (e: Error) => {
      assert.match(e.message, /AGENT_USER_NOT_ALLOWED/);
      return true;
    });
  }

  before(async () => {
    a = agentUser(USER_A);
    b = agentUser(USER_B);
    restoreModes = reachableByOthers(CLI);
    ({ inst, http } = await installWithReadTool('CANARY-other-user-token'));
    const read = (user: string | null): Record<string, unknown> => ({
      description: 'Read JSON.', effect: 'read', approval: 'none', ...(user === null ? {} : { agent_users: [user] }),
      revisions: [{ revision: 1, input: { type: 'object', properties: {}, required: [] }, http: { target: 'local', method: 'GET', path: '/json' } }],
    });
    await inst.acceptCatalog({
      targets: { local: { http: { origin: http.origin, credential: 'api-token', auth: 'bearer', allow_private: true } } },
      tools: { get_json: read(null), get_json_b: read(USER_B) },
    });
    // Only the home's own mode protects it: the directory around it is open to other users.
    chmodSync(inst.sb.dir, 0o755);
    // A list that names nobody: the daemon opens the shared socket, and admits only the operator.
    await cli('agents', 'allow', USER_A);
    await cli('agents', 'revoke', USER_A);
    await inst.startDaemon();
  });

  after(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await inst?.cleanup();
    await http?.close();
    restoreModes();
  });

  it('opens the shared socket beside the 0700 home: 0711 directory, 0666 socket', () => {
    assert.equal(statSync(inst.sb.home).mode & 0o777, 0o700);
    assert.equal(statSync(`${inst.sb.home}-agents`).mode & 0o777, 0o711);
    assert.equal(statSync(shared()).mode & 0o777, 0o666);
  });

  it('refuses a user before `agents allow`, serves it after, names it in the Sessions journal, and holds agent_users', async () => {
    await assertRefused(a);
    await cli('agents', 'allow', USER_A);
    assert.match(await cli('agents', 'list'), new RegExp(`user ${USER_A}`));
    const agent = await clientAs(a);
    const ok = (await agent.callTool({ name: 'get_json', arguments: {} })) as ToolResult;
    assert.notEqual(ok.isError, true, JSON.stringify(ok));
    const refused = (await agent.callTool({ name: 'get_json_b', arguments: {} })) as ToolResult;
    assert.equal(refused.isError, true);
    assert.equal(refused.structuredContent?.['error_code'], 'AGENT_USER_NOT_ALLOWED');
    assert.equal(refused.structuredContent?.['side_effect_started'], false);
    assert.equal(http.requests.length, 1, 'the refused call reached the service');
    const sessions = JSON.parse(await cli('audit', 'sessions', '--json')) as { peer_uid: number | null; peer_user?: string }[];
    assert.ok(sessions.some((s) => s.peer_uid === a.uid && s.peer_user === USER_A), JSON.stringify(sessions));
    assert.match(await cli('audit', 'sessions'), new RegExp(`uid ${a.uid} \\(${USER_A}\\)`));
    // A user who is not on the list is refused, whatever it asks.
    await assertRefused(b);
  });

  it('the kernel refuses every same-user attack to an allowed user, and the home is unchanged', async () => {
    const before = digestHome(inst.sb.home);
    const r = spawnSync(process.execPath, ['-e', ATTACKS, inst.sb.home, String(inst.daemon?.pid ?? 0)], { uid: a.uid, gid: a.gid, encoding: 'utf8', cwd: '/' });
    assert.equal(r.status, 0, r.stderr);
    const o = JSON.parse(r.stdout) as Record<string, unknown>;
    assert.equal(o['uid'], a.uid);
    assert.equal(o['kill'], 'EPERM');
    assert.equal(o['stop'], 'EPERM');
    for (const k of ['list_home', 'read_vault', 'write_catalog', 'write_page_info', 'write_page_authorization', 'write_allow_list', 'list_shared_dir', 'write_shared_dir', 'operator_socket', 'agent_socket']) assert.equal(o[k], 'EACCES', `${k}: ${String(o[k])}`);
    assert.equal(digestHome(inst.sb.home), before, 'the home changed');
    // The operator's own agent still calls through the private socket.
    const agent = await inst.client();
    const call = (await agent.callTool({ name: 'get_json', arguments: {} })) as ToolResult;
    assert.notEqual(call.isError, true, JSON.stringify(call));
  });

  it('a forged allow list admits nobody (and the daemon says so); `agents revoke` holds from the next connection', async () => {
    const file = join(inst.sb.home, 'agents.allowed.json');
    const honest = readFileSync(file, 'utf8');
    const doc = JSON.parse(honest) as { record: { allowed: { kind: string; name: string }[] }; mac: string };
    doc.record.allowed.push({ kind: 'user', name: USER_B });
    writeFileSync(file, JSON.stringify(doc));
    await assertRefused(b);
    await assertRefused(a);
    assert.match(inst.daemonLog, /ALARM agent users: agents\.allowed\.json does not verify/);
    writeFileSync(file, honest);
    const live = await clientAs(a);
    await cli('agents', 'revoke', USER_A);
    await assertRefused(a);
    // The connection opened before the revocation goes on until it closes.
    const still = (await live.callTool({ name: 'get_json', arguments: {} })) as ToolResult;
    assert.notEqual(still.isError, true, JSON.stringify(still));
  });
});
