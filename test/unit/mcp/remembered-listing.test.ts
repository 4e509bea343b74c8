/**
 * The shim's memory of the daemon's last listing (src/mcp/remembered-listing.ts):
 * where it lives, what it keeps, and that whatever is not a whole valid
 * listing of this socket is recalled as nothing.
 */
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ListingMemory, listingMemoryPath } from '../../../src/mcp/remembered-listing.ts';

let dir: string;
before(() => (dir = mkdtempSync(join(tmpdir(), 'postern-listing-'))));
after(() => rmSync(dir, { recursive: true, force: true }));

const SOCKET = '/home/op/.postern/run/agent.sock';
const tool = (name: string, revision = 1): Record<string, unknown> => ({ name, description: `The ${name} tool.`, inputSchema: { type: 'object', properties: {} }, _meta: { 'dev.postern/revision': revision } });
const memoryAt = (home: string, socket = SOCKET): ListingMemory => new ListingMemory(listingMemoryPath(SOCKET, { HOME: home }), socket, 'postern_status');

it('lives in $HOME/.local/state/postern/listings, one file per agent socket; XDG_STATE_HOME is not read; off turns it off', () => {
  const a = listingMemoryPath('/a/agent.sock', { HOME: '/home/u', XDG_STATE_HOME: '/elsewhere' });
  const b = listingMemoryPath('/b/agent.sock', { HOME: '/home/u' });
  assert.match(a ?? '', /^\/home\/u\/\.local\/state\/postern\/listings\/[0-9a-f]{32}\.json$/);
  assert.notEqual(a, b);
  assert.equal(listingMemoryPath('/a/agent.sock', { HOME: '/home/u' }), a);
  assert.equal(listingMemoryPath('/a/agent.sock', { HOME: '/home/u', POSTERN_LISTING_MEMORY: 'off' }), null);
  assert.equal(new ListingMemory(null, SOCKET, 'postern_status').recall(), null);
});

it('remembers a full listing (0600 in a 0700 directory) without the stand-in tool, and recalls it', () => {
  const home = join(dir, 'round');
  const m = memoryAt(home);
  assert.equal(m.recall(), null, 'nothing yet');
  m.remember({ tools: [tool('postern_status'), tool('create_issue', 3), tool('get_json')] });
  const path = listingMemoryPath(SOCKET, { HOME: home })!;
  assert.equal(statSync(path).mode & 0o777, 0o600);
  assert.equal(statSync(dirname(path)).mode & 0o777, 0o700);
  const again = memoryAt(home).recall();
  assert.deepEqual(again?.map((t) => t['name']), ['create_issue', 'get_json']);
  assert.deepEqual(again?.[0]?.['_meta'], { 'dev.postern/revision': 3 });
  // A page (nextCursor) or a result that is not a listing changes nothing.
  m.remember({ tools: [tool('other')], nextCursor: 'p2' });
  m.remember({ content: [] });
  assert.deepEqual(memoryAt(home).recall()?.map((t) => t['name']), ['create_issue', 'get_json']);
});

it('an unchanged listing is not written again; a changed one replaces it whole', () => {
  const home = join(dir, 'unchanged');
  const m = memoryAt(home);
  m.remember({ tools: [tool('a')] });
  const path = listingMemoryPath(SOCKET, { HOME: home })!;
  const ino = statSync(path).ino;
  m.remember({ tools: [tool('a')] });
  assert.equal(statSync(path).ino, ino, 'not rewritten');
  m.remember({ tools: [tool('a', 2)] });
  assert.notEqual(statSync(path).ino, ino, 'replaced by a rename');
  assert.deepEqual(memoryAt(home).recall()?.[0]?.['_meta'], { 'dev.postern/revision': 2 });
});

it('anything but a whole valid listing of this socket is recalled as nothing', () => {
  const home = join(dir, 'damaged');
  const path = listingMemoryPath(SOCKET, { HOME: home })!;
  mkdirSync(dirname(path), { recursive: true });
  const good = { v: 1, socket: SOCKET, tools: [tool('a')] };
  writeFileSync(path, JSON.stringify(good));
  assert.deepEqual(memoryAt(home).recall()?.map((t) => t['name']), ['a'], 'the control case is recalled');
  const bad: unknown[] = [
    'not json',
    { ...good, socket: '/another/agent.sock' },
    { ...good, v: 2 },
    { ...good, tools: [] },
    { ...good, tools: [tool('a'), tool('a')] },
    { ...good, tools: [tool('a'), { ...tool('b'), name: 'has space' }] },
    { ...good, tools: [{ ...tool('a'), inputSchema: 'object' }] },
    { ...good, tools: [tool('postern_status')] },
    { ...good, tools: Array.from({ length: 513 }, (_, i) => tool(`t${i}`)) },
    { ...good, tools: [{ ...tool('a'), description: 'x'.repeat(1024 * 1024) }] },
  ];
  for (const v of bad) {
    writeFileSync(path, typeof v === 'string' ? v : JSON.stringify(v));
    assert.equal(memoryAt(home).recall(), null, JSON.stringify(v).slice(0, 120));
  }
});

it('a memory that cannot be written is as if absent, and never throws', { skip: process.getuid?.() === 0 ? 'root writes anywhere' : false }, () => {
  const home = join(dir, 'readonly');
  mkdirSync(home);
  chmodSync(home, 0o500);
  const m = memoryAt(home);
  m.remember({ tools: [tool('a')] });
  assert.equal(m.recall(), null);
  chmodSync(home, 0o700);
});

it('a home path that is a file is as if absent, and never throws (also as root)', () => {
  const home = join(dir, 'a-file');
  writeFileSync(home, 'not a directory');
  const m = memoryAt(home);
  m.remember({ tools: [tool('a')] });
  assert.equal(m.recall(), null);
  assert.equal(readFileSync(home, 'utf8'), 'not a directory');
});

it('a FIFO, a symlink or a directory put at the memory path is as if absent, and never stalls the shim', () => {
  const home = join(dir, 'odd');
  const good = memoryAt(home);
  good.remember({ tools: [tool('create_issue')] });
  const path = listingMemoryPath(SOCKET, { HOME: home })!;
  const kept = join(dir, 'kept-listing.json');
  renameSync(path, kept);
  // The control case: the same bytes as a regular file are recalled.
  copyFileSync(kept, path);
  assert.deepEqual(memoryAt(home).recall()?.map((t) => t['name']), ['create_issue']);
  rmSync(path);
  const made = spawnSync('mkfifo', [path]);
  assert.equal(made.status, 0, String(made.stderr));
  assert.equal(memoryAt(home).recall(), null, 'a FIFO: no read blocks');
  rmSync(path);
  symlinkSync(kept, path);
  assert.equal(memoryAt(home).recall(), null, 'a symlink');
  rmSync(path);
  mkdirSync(path);
  assert.equal(memoryAt(home).recall(), null, 'a directory');
});
