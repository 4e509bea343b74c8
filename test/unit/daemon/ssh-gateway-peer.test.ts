/**
 * The SSH gateway's peer lookup (src/daemon/ssh-gateway/peer-process.ts)
 * against the real /proc: a child process connected over loopback is found
 * with its command line and its parent's; a connection this process holds
 * itself (the daemon is never its own client), and a port nobody connects
 * from, are "not found" with why; command lines keep their argument
 * boundaries and an agent's control characters (escaped later, by the
 * terminal-text module, wherever they are shown).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { endianness } from 'node:os';
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { commandLine, describePeer, findPeerProcess, socketInode } from '../../../src/daemon/ssh-gateway/peer-process.js';

const linux = process.platform === 'linux' ? false : 'reads Linux /proc';

function listen(): Promise<{ server: Server; port: number; accepted: Promise<Socket> }> {
  return new Promise((resolve) => {
    let took: (s: Socket) => void = () => undefined;
    const accepted = new Promise<Socket>((r) => (took = r));
    const server = createServer((s) => took(s));
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as AddressInfo).port, accepted }));
  });
}

describe('ssh gateway: the process on the other end of a loopback connection', { skip: linux }, () => {
  it('a child process connected to the port is found, with its command line and its ancestors up to the daemon', async () => {
    const { server, port, accepted } = await listen();
    const script = `const s=require('net').connect(${port},'127.0.0.1');s.on('data',()=>process.exit(0));`;
    // Started through a shell that stays (`; true`): the shell is the connecting process's parent.
    const child = spawn('sh', ['-c', '"$0" "$@"; true', process.execPath, '-e', script, 'an argument with spaces', "it's"], { stdio: 'ignore' });
    const sock = await accepted;
    try {
      const peer = await findPeerProcess(sock.remotePort ?? 0, port);
      assert.equal(peer.found, true, JSON.stringify(peer));
      if (!peer.found) return;
      assert.notEqual(peer.pid, child.pid);
      assert.ok(peer.command.startsWith(`${process.execPath} -e `), peer.command);
      assert.ok(peer.command.endsWith(` 'an argument with spaces' 'it'\\''s'`), peer.command);
      // The ancestors stop at the daemon itself (here: this process, the shell's parent).
      assert.equal(peer.parents.length, 1);
      assert.equal(peer.parents[0]?.pid, child.pid);
      assert.ok(peer.parents[0]?.command.startsWith(`sh -c '"$0" "$@"; true' `), peer.parents[0]?.command);
      assert.match(describePeer(peer), new RegExp(`^pid ${peer.pid}: .*'it'\\\\''s'; started by pid ${child.pid}: sh -c `));
      const exited = new Promise((r) => child.once('exit', r));
      sock.end('bye');
      await exited;
    } finally {
      // The connecting process ends when its connection does.
      sock.destroy();
      child.kill();
      server.close();
    }
  });

  it("a connection this process holds itself is not found (the daemon's own sockets are skipped), and says why", async () => {
    const { server, port, accepted } = await listen();
    const client = createConnection(port, '127.0.0.1');
    try {
      const sock = await accepted;
      const peer = await findPeerProcess(sock.remotePort ?? 0, port);
      assert.deepEqual(peer, { found: false, why: "no process of the daemon's user holds its socket (another user's process?)" });
      assert.equal(describePeer(peer), "not found: no process of the daemon's user holds its socket (another user's process?)");
    } finally {
      client.destroy();
      server.close();
    }
  });

  it('a port no connection comes from is not found: not in /proc/net/tcp', async () => {
    const { server, port } = await listen();
    try {
      const peer = await findPeerProcess(1, port);
      assert.equal(peer.found, false);
      assert.match(describePeer(peer), /^not found: its connection is not in \/proc\/net\/tcp/);
    } finally {
      server.close();
    }
  });
});

describe('ssh gateway: /proc/net/tcp rows and command lines', () => {
  it('finds the inode of the row with both ends, in either order only as written', () => {
    const table = [
      '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
      '   0: 0100007F:1D2E 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 111 1 0 100 0 0 10 0',
      '   1: 0100007F:C350 0100007F:1D2E 01 00000000:00000000 00:00000000 00000000  1000        0 222 1 0 20 4 30 10 -1',
      '   2: 0100007F:1D2E 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000        0 333 1 0 20 4 30 10 -1',
    ].join('\n');
    // On a little-endian machine the kernel writes 127.0.0.1 as 0100007F.
    if (endianness() !== 'LE') return;
    assert.equal(socketInode(table, '127.0.0.1:50000', '127.0.0.1:7470'), 222);
    assert.equal(socketInode(table, '127.0.0.1:7470', '127.0.0.1:50000'), 333);
    assert.equal(socketInode(table, '127.0.0.1:50001', '127.0.0.1:7470'), null);
  });

  it('keeps argument boundaries and leaves control characters to the terminal-text module', () => {
    assert.equal(commandLine(Buffer.from('ssh\0-F\0/a b/ssh_config\0box\0git-receive-pack \'org/repo.git\'\0')), "ssh -F '/a b/ssh_config' box 'git-receive-pack '\\''org/repo.git'\\'''");
    assert.equal(commandLine(Buffer.from('sh\0\x1b]0;pwned\x07\0')), "sh '\x1b]0;pwned\x07'");
    assert.equal(commandLine(Buffer.from('x\0'.repeat(10)), 5), 'x x x…');
  });
});
