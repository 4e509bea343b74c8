/**
 * The peer of an agent-socket connection (src/daemon/mcp/peer-cred.ts): the
 * kernel's credentials read through perl from a real Unix socket, and the
 * user and groups of a uid from passwd and group files.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type Socket } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { osNameKinds, osUser, peerCredentials } from '../../../src/daemon/mcp/peer-cred.js';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'postern-peercred-'));
  dirs.push(dir);
  return dir;
}

describe('peer credentials', () => {
  it('reads the connecting process’s pid, uid and gid, and the data sent meanwhile still arrives', async () => {
    const dir = await tempDir();
    const path = join(dir, 's.sock');
    const accepted = new Promise<Socket>((resolve) => {
      const server = createServer(resolve);
      server.listen(path);
      after(() => server.close());
    });
    const client = connect(path);
    client.write('hello\n');
    const socket = await accepted;
    const cred = await peerCredentials(socket);
    assert.deepEqual(cred, { pid: process.pid, uid: process.getuid?.(), gid: process.getgid?.() });
    const data = await new Promise<string>((resolve) => socket.once('data', (d: Buffer) => resolve(d.toString('utf8'))));
    assert.equal(data, 'hello\n');
    client.destroy();
    socket.destroy();
  });

  it('gives null for a socket without a file descriptor', async () => {
    assert.equal(await peerCredentials({} as Socket), null);
  });
});

describe('OS users and groups from passwd and group files', () => {
  it('names the uid and every group it is in (primary and listed)', async () => {
    const dir = await tempDir();
    const files = { passwd: join(dir, 'passwd'), group: join(dir, 'group') };
    await writeFile(files.passwd, 'root:x:0:0:root:/root:/bin/sh\nci-agent:x:1500:1500::/nonexistent:/usr/sbin/nologin\n');
    await writeFile(files.group, 'root:x:0:\nci-agent:x:1500:\nagents:x:1600:alice,ci-agent\nother:x:1700:alice\n');
    assert.deepEqual(await osUser(1500, null, files), { name: 'ci-agent', groups: ['ci-agent', 'agents'] });
    assert.deepEqual(await osUser(1500, 1700, files), { name: 'ci-agent', groups: ['agents', 'other'] });
    assert.deepEqual(await osUser(4242, null, files), { name: null, groups: [] });
    assert.deepEqual(await osNameKinds('agents', files), { user: false, group: true });
    assert.deepEqual(await osNameKinds('ci-agent', files), { user: true, group: true });
    assert.deepEqual(await osNameKinds('nobody-here', files), { user: false, group: false });
  });
});
