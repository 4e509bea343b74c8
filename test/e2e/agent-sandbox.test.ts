/**
 * The same-user attacks, run from inside a bubblewrap sandbox set up the way
 * an agent host sets up its shell's sandbox on Linux (Claude Code's sandbox
 * runs the model's commands in bubblewrap): the whole file system read-only,
 * one writable workspace, its own PID and network namespaces, no
 * capabilities, the sandbox dying with its parent — and, as `postern setup
 * claude-code` prints (docs/sandbox.md), the Postern home not bound at all
 * (`denyRead`: an empty read-only directory over it).
 *
 * From the sandbox: kill and SIGSTOP the daemon, reach and bind the approval
 * page's and the HTTP listener's ports (while the daemon is down), write
 * `run/` files, authorization records, the catalog and the journal, read the
 * vault, connect to the operator and agent sockets. Each is refused, the
 * home's bytes are unchanged, and the agent's MCP calls through `postern mcp`
 * — launched outside the sandbox, as the host launches its MCP servers —
 * still work. A second profile without `denyRead` shows what a read-only
 * sandbox alone still allows (reading the vault's ciphertext, connecting to
 * the sockets): the gap the home's `denyRead` closes.
 *
 * Needs /usr/bin/bwrap: skipped with the reason otherwise;
 * POSTERN_REQUIRE_BWRAP=1 (CI) makes its absence a failure.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, request } from 'node:http';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { install, type Installation } from '../helpers/daemon.js';
import { startFakeHttp, type FakeHttpServer } from '../helpers/fake-http.js';

const BWRAP = '/usr/bin/bwrap';

function bwrapSkip(): string | false {
  const works = existsSync(BWRAP) && spawnSync(BWRAP, ['--ro-bind', '/', '/', '--unshare-pid', '--unshare-net', 'true']).status === 0;
  if (works) return false;
  if (process.env['POSTERN_REQUIRE_BWRAP'] === '1') throw new Error(`POSTERN_REQUIRE_BWRAP=1 but ${BWRAP} is absent or cannot make namespaces here (apt-get install bubblewrap)`);
  return `${BWRAP} is absent or cannot make namespaces here (apt-get install bubblewrap; POSTERN_REQUIRE_BWRAP=1 makes this a failure)`;
}

const skip = bwrapSkip();

/** The host's sandbox: read-only root, a writable workspace, own PID and network namespaces, no capabilities; `hideHome` adds the home's denyRead. */
function sandboxArgs(workspace: string, home: string | null): string[] {
  return [
    '--ro-bind', '/', '/',
    '--dev', '/dev',
    '--proc', '/proc',
    '--bind', workspace, workspace,
    ...(home === null ? [] : ['--tmpfs', home, '--remount-ro', home]),
    '--unshare-pid', '--unshare-net', '--unshare-ipc',
    '--new-session', '--die-with-parent',
    '--cap-drop', 'ALL',
    '--chdir', workspace,
  ];
}

/** The attacks, as a CommonJS script the sandboxed shell runs with node; one JSON line of outcomes ("ok" or the error code). */
const ATTACKS = String.raw`
const fs = require('node:fs');
const net = require('node:net');
const { join } = require('node:path');
const [home, daemonPid, pagePort, listenerPort] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4]), Number(process.argv[5])];
const out = {};
const tryIt = (name, f) => { try { f(); out[name] = 'ok'; } catch (e) { out[name] = e.code || e.message; } };
tryIt('kill', () => process.kill(daemonPid, 'SIGKILL'));
tryIt('stop', () => process.kill(daemonPid, 'SIGSTOP'));
out.pids = fs.readdirSync('/proc').filter((n) => /^[0-9]+$/.test(n)).length;
tryIt('write_page_info', () => fs.writeFileSync(join(home, 'run', 'approval-page.json'), '{"url":"http://127.0.0.1:1/"}'));
tryIt('write_listener_info', () => fs.writeFileSync(join(home, 'run', 'mcp-http.json'), '{}'));
tryIt('write_page_authorization', () => fs.writeFileSync(join(home, 'approval-page.authorized.json'), '{}'));
tryIt('write_catalog', () => fs.appendFileSync(join(home, 'catalog.yaml'), '\n# edited\n'));
tryIt('remove_journal', () => fs.rmSync(join(home, 'journal'), { recursive: true }));
tryIt('write_run_file', () => fs.writeFileSync(join(home, 'run', 'planted'), 'x'));
tryIt('read_vault', () => fs.readFileSync(join(home, 'vault.pvlt')));
const connectUnix = (p) => new Promise((res) => { const s = net.connect(p); s.on('connect', () => { s.destroy(); res('ok'); }); s.on('error', (e) => res(e.code)); });
const connectTcp = (port) => new Promise((res) => { const s = net.connect(port, '127.0.0.1'); s.on('connect', () => { s.destroy(); res('ok'); }); s.on('error', (e) => res(e.code)); });
(async () => {
  out.operator_socket = await connectUnix(join(home, 'run', 'operator.sock'));
  out.agent_socket = await connectUnix(join(home, 'run', 'agent.sock'));
  out.reach_page = await connectTcp(pagePort);
  out.reach_listener = await connectTcp(listenerPort);
  process.stdout.write(JSON.stringify(out) + '\n');
})();
`;

/** Holds the two ports inside the sandbox's own loopback until its input closes. */
const SQUAT = String.raw`
const net = require('node:net');
const ports = process.argv.slice(2).map(Number);
let bound = 0;
const servers = ports.map((p) => net.createServer().listen(p, '127.0.0.1', () => { if (++bound === ports.length) process.stdout.write('bound\n'); }));
process.stdin.on('end', () => { for (const s of servers) s.close(); });
process.stdin.resume();
`;

type Outcomes = Record<string, string | number>;

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** The files the attacks go after (the journal is the daemon's to append to, so it is checked for presence). */
const WATCHED = ['vault.pvlt', 'catalog.yaml', 'catalog.accepted.yaml', 'catalog.accepted.json', 'approval-page.authorized.json', 'mcp-http.authorized.json', 'run/approval-page.json', 'run/mcp-http.json'];

/** A digest of the watched files' bytes, and whether a planted file or a missing journal shows a write got through. */
function digestHome(home: string): string {
  const h = createHash('sha256');
  for (const name of WATCHED) h.update(`${name}\n`).update(existsSync(join(home, name)) ? readFileSync(join(home, name)) : 'absent');
  h.update(`planted ${existsSync(join(home, 'run', 'planted'))} journal ${existsSync(join(home, 'journal'))}`);
  return h.digest('hex');
}

function httpStatus(port: number): Promise<number | string> {
  return new Promise((res) => {
    const req = request({ host: '127.0.0.1', port, path: '/', method: 'GET' }, (r) => {
      r.resume();
      res(r.statusCode ?? 0);
    });
    req.on('error', (e: NodeJS.ErrnoException) => res(e.code ?? 'error'));
    req.end();
  });
}

function processState(pid: number): string {
  // /proc/PID/stat: "pid (comm) S ..."; the state letter follows the last ')'.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
}

describe('a sandboxed agent shell against the daemon (bubblewrap)', { skip }, () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agent: Client;
  let workspace: string;
  let script: string;
  let squat: string;
  let pagePort: number;
  let listenerPort: number;

  const runAttacks = (home: string | null): Outcomes => {
    const pid = inst.daemon?.pid;
    assert.ok(pid !== undefined);
    const r = spawnSync(BWRAP, [...sandboxArgs(workspace, home), process.execPath, script, inst.sb.home, String(pid), String(pagePort), String(listenerPort)], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout) as Outcomes;
  };

  const callRead = async (): Promise<void> => {
    const r = (await agent.callTool({ name: 'get_json', arguments: {} })) as { isError?: boolean; structuredContent?: Record<string, unknown> };
    assert.notEqual(r.isError, true, JSON.stringify(r));
  };

  before(async () => {
    http = await startFakeHttp();
    inst = await install({ secrets: [{ name: 'api-token', kind: 'http_bearer', value: 'CANARY-sandbox-token' }] });
    await inst.acceptCatalog({
      targets: { local: { http: { origin: http.origin, credential: 'api-token', auth: 'bearer', allow_private: true } } },
      tools: {
        get_json: { description: 'Read JSON.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: { type: 'object', properties: {}, required: [] }, http: { target: 'local', method: 'GET', path: '/json' } }] },
      },
    });
    pagePort = await freePort();
    listenerPort = await freePort();
    const page = await inst.sb.run(['approvals', 'page', 'enable', '--port', String(pagePort), '--passphrase-file', inst.passFile]);
    assert.equal(page.code, 0, page.stderr);
    const listener = await inst.sb.run(['http', 'enable', '--port', String(listenerPort), '--passphrase-file', inst.passFile]);
    assert.equal(listener.code, 0, listener.stderr);
    workspace = join(inst.sb.dir, 'workspace');
    await mkdir(workspace);
    script = join(workspace, 'attacks.cjs');
    await writeFile(script, ATTACKS);
    squat = join(workspace, 'squat.cjs');
    await writeFile(squat, SQUAT);
    await inst.startDaemon();
    agent = await inst.client();
    await callRead();
  });

  after(async () => {
    await inst?.cleanup();
    await http?.close();
  });

  it('refuses every same-user attack from the sandbox with the home hidden, and the home is unchanged', async () => {
    const pid = inst.daemon?.pid ?? 0;
    const before = digestHome(inst.sb.home);
    const o = runAttacks(inst.sb.home);
    // Signals: the daemon is not in the sandbox's PID namespace.
    assert.equal(o['kill'], 'ESRCH');
    assert.equal(o['stop'], 'ESRCH');
    assert.ok(Number(o['pids']) < 5, `the sandbox sees only its own processes (saw ${o['pids']})`);
    // Files: the home is an empty read-only directory inside.
    for (const k of ['write_page_info', 'write_listener_info', 'write_page_authorization', 'write_catalog', 'write_run_file']) assert.ok(o[k] === 'ENOENT' || o[k] === 'EROFS', `${k}: ${o[k]}`);
    assert.equal(o['remove_journal'], 'ENOENT');
    assert.equal(o['read_vault'], 'ENOENT');
    // Sockets: not there to connect to.
    assert.equal(o['operator_socket'], 'ENOENT');
    assert.equal(o['agent_socket'], 'ENOENT');
    // Ports: the sandbox's loopback is its own.
    assert.equal(o['reach_page'], 'ECONNREFUSED');
    assert.equal(o['reach_listener'], 'ECONNREFUSED');
    assert.equal(digestHome(inst.sb.home), before, 'the home changed');
    assert.notEqual(processState(pid), 'T', 'the daemon was stopped');
    await callRead();
  });

  it('a sandbox holding the page and listener ports while the daemon is down does not take them from the daemon', async () => {
    await inst.stopDaemon();
    const holder = spawn(BWRAP, [...sandboxArgs(workspace, inst.sb.home), process.execPath, squat, String(pagePort), String(listenerPort)], { stdio: ['pipe', 'pipe', 'pipe'] });
    try {
      await new Promise<void>((res, rej) => {
        let text = '';
        holder.stdout.on('data', (d: Buffer) => {
          text += d.toString('utf8');
          if (text.includes('bound')) res();
        });
        holder.once('exit', (code) => rej(new Error(`the sandboxed holder exited ${code}`)));
      });
      await inst.startDaemon();
      // The daemon holds both ports on the real loopback: the page answers, and so does the listener.
      assert.equal(typeof (await httpStatus(pagePort)), 'number');
      assert.equal(typeof (await httpStatus(listenerPort)), 'number');
      assert.match(inst.daemonLog, /daemon ready/);
      agent = await inst.client();
      await callRead();
    } finally {
      const gone = new Promise((res) => holder.once('exit', res));
      holder.stdin.end();
      await gone;
    }
  });

  it('without the home hidden, a read-only sandbox still lets the shell read the vault and reach the sockets (what denyRead closes)', async () => {
    const before = digestHome(inst.sb.home);
    const o = runAttacks(null);
    assert.equal(o['kill'], 'ESRCH');
    for (const k of ['write_page_info', 'write_listener_info', 'write_page_authorization', 'write_catalog', 'write_run_file', 'remove_journal']) assert.equal(o[k], 'EROFS', `${k}: ${o[k]}`);
    assert.equal(o['read_vault'], 'ok', 'the vault ciphertext is readable without denyRead');
    assert.equal(o['operator_socket'], 'ok', 'a Unix socket on a read-only mount still accepts a connection');
    assert.equal(o['agent_socket'], 'ok');
    assert.equal(o['reach_page'], 'ECONNREFUSED');
    assert.equal(digestHome(inst.sb.home), before, 'the home changed');
    await callRead();
  });
});
