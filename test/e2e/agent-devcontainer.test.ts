/**
 * An agent in a container: `postern setup devcontainer` prints the mounts
 * (the agent socket, the Postern checkout read-only) and the MCP entry; this
 * test builds the container from exactly that output with bubblewrap — its
 * own mount, PID, network, IPC and UTS namespaces (`--unshare-all`), the
 * system's /usr for node, and nothing of the home but the socket — launches
 * the printed entry inside it with the official MCP client over stdio, and
 * makes a tool call through the real daemon. From the same container the
 * vault, the records and the operator socket are not there, and the daemon
 * cannot be signalled.
 *
 * Needs /usr/bin/bwrap: skipped with the reason otherwise;
 * POSTERN_REQUIRE_BWRAP=1 (CI) makes its absence a failure.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { Installation } from '../helpers/daemon.js';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import { BWRAP, bwrapSkip, installWithReadTool } from '../helpers/boundary.js';

const skip = bwrapSkip();

interface Printed {
  readonly mounts: { source: string; target: string; readonly: boolean }[];
  readonly env: Record<string, string>;
  readonly entry: { command: string; args: string[]; env: Record<string, string> };
}

/** The two JSON blocks `setup devcontainer` prints: devcontainer.json's mounts and env, then the MCP entry. */
function parsePrinted(stdout: string): Printed {
  const blocks: unknown[] = [];
  let at = 0;
  while (blocks.length < 2) {
    const start = stdout.indexOf('\n{', at) + 1;
    const end = stdout.indexOf('\n}', start) + 2;
    blocks.push(JSON.parse(stdout.slice(start, end)));
    at = end;
  }
  const dc = blocks[0] as { mounts: string[]; containerEnv: Record<string, string> };
  const mounts = dc.mounts.map((m) => {
    const kv = Object.fromEntries(m.split(',').map((p) => p.split('=') as [string, string]));
    return { source: kv['source']!, target: kv['target']!, readonly: m.split(',').includes('readonly') };
  });
  const entry = (blocks[1] as { mcpServers: { postern: Printed['entry'] } }).mcpServers.postern;
  return { mounts, env: dc.containerEnv, entry };
}

describe('an agent in a container with only the agent socket bound in (bubblewrap --unshare-all)', { skip }, () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let printed: Printed;
  let container: string[];

  before(async () => {
    ({ inst, http } = await installWithReadTool('CANARY-container-token'));
    await inst.startDaemon();
    const r = await inst.sb.run(['setup', 'devcontainer']);
    assert.equal(r.code, 0, r.stderr);
    printed = parsePrinted(r.stdout);
    assert.deepEqual(printed.mounts.map((m) => m.source).sort(), [join(inst.sb.home, 'run', 'agent.sock'), printed.mounts.find((m) => m.readonly)!.source].sort());
    // The container: the system's /usr (its node), the printed mounts, and nothing else of this machine.
    const checkout = printed.mounts.find((m) => m.readonly)!.source;
    const modules = realpathSync(join(checkout, 'node_modules')); // a development checkout may link it
    container = [
      '--unshare-all', '--die-with-parent', '--new-session',
      '--ro-bind', '/usr', '/usr', '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64', '--symlink', 'usr/bin', '/bin',
      '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp',
      ...printed.mounts.flatMap((m) => [m.readonly ? '--ro-bind' : '--bind', m.source, m.target]),
      ...(modules === join(checkout, 'node_modules') ? [] : ['--ro-bind', modules, modules]),
      ...Object.entries(printed.env).flatMap(([k, v]) => ['--setenv', k, v]),
    ];
    assert.ok(dirname(process.execPath).startsWith('/usr/'), `this test runs node from /usr (found ${process.execPath})`);
  });

  after(async () => {
    await inst?.cleanup();
    await http?.close();
  });

  it('the printed entry, launched inside the container, lists the tools and makes a call through the daemon', async () => {
    const transport = new StdioClientTransport({
      command: BWRAP,
      args: [...container, '--', printed.entry.command, ...printed.entry.args],
      env: { PATH: '/usr/bin:/bin', ...printed.entry.env },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'container-agent', version: '1.0.0' });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      assert.ok(tools.some((t) => t.name === 'get_json'), JSON.stringify(tools.map((t) => t.name)));
      const before = http.requests.length;
      const r = (await client.callTool({ name: 'get_json', arguments: {} })) as { isError?: boolean };
      assert.notEqual(r.isError, true, JSON.stringify(r));
      assert.equal(http.requests.length, before + 1);
    } finally {
      await client.close();
    }
  });

  it('from the same container the home holds only the socket, and the daemon is out of reach', () => {
    const pid = inst.daemon?.pid ?? 0;
    const script = `
      const fs = require('node:fs');
      const h = process.env.POSTERN_HOME;
      const out = { listing: fs.readdirSync(h + '/run') };
      try { process.kill(${pid}, 'SIGSTOP'); out.stop = 'ok'; } catch (e) { out.stop = e.code; }
      for (const f of ['vault.pvlt', 'catalog.yaml', 'run/operator.sock']) out[f] = fs.existsSync(h + '/' + f);
      process.stdout.write(JSON.stringify(out));`;
    const r = spawnSync(BWRAP, [...container, '--', process.execPath, '-e', script], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const o = JSON.parse(r.stdout) as Record<string, unknown>;
    assert.deepEqual(o['listing'], ['agent.sock']);
    assert.equal(o['stop'], 'ESRCH');
    assert.equal(o['vault.pvlt'], false);
    assert.equal(o['catalog.yaml'], false);
    assert.equal(o['run/operator.sock'], false);
  });
});
