/**
 * A host that lists its tools once per session (Codex) and started while the
 * daemon is down still gets the real tools: `postern mcp` remembers the
 * daemon's last listing (src/mcp/remembered-listing.ts) and its stand-in lists
 * it beside `postern_status`. A call of a remembered tool while the daemon is
 * down never runs; the same call once it runs goes through the daemon, decided
 * by the revisions the client planned against. Official SDK 2.x and 1.x
 * clients over stdio against the built CLI, a real daemon, a fake target with
 * its request log.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { childEnv, CLI } from '../helpers/cli.js';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { homePaths } from '../../src/home/paths.js';
import { listingMemoryPath } from '../../src/mcp/remembered-listing.js';
import { openJournals } from '../../src/journal/index.js';

type Result = { isError?: boolean; structuredContent?: Record<string, unknown>; content?: { text?: string }[] };
const TOKEN = canary('remembered');
const key = (): string => `key-${randomBytes(8).toString('hex')}`;
const title = { type: 'string', maxLength: 100 };
const r1 = { revision: 1, input: { type: 'object', properties: { title }, required: ['title'] }, http: { target: 'local', method: 'POST', path: '/echo', body: { title: '{title}' } } };
const r2 = { ...r1, revision: 2, previous: { policy: 'adapt' } };
const r3 = { ...r1, revision: 3, http: { ...r1.http, path: '/json' }, previous: { policy: 'reject' } };

describe('postern mcp lists the remembered tools while the daemon is down', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let targets: Record<string, unknown>;
  const catalog = (revisions: unknown[]) => ({ targets, tools: { create_issue: { description: 'Create an issue.', effect: 'write', approval: 'none', revisions } } });
  /** Each test's own user home, so each starts with its own memory. */
  let n = 0;
  const userHome = async (): Promise<string> => {
    const h = join(inst.sb.dir, `user-${++n}`);
    await mkdir(h);
    return h;
  };
  const env = (home: string, extra: Record<string, string> = {}) => childEnv(inst.sb.home, { extra: { HOME: home, POSTERN_LISTING_MEMORY: 'on', ...extra } });
  const memoryFile = (home: string): string => listingMemoryPath(homePaths(inst.sb.home).agentSocket, { HOME: home })!;
  const v2 = async (home: string, o: ConstructorParameters<typeof Client>[1] = {}): Promise<Client> => {
    const c = new Client({ name: 'remembering-agent', version: '1.0.0' }, o);
    await c.connect(new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], env: env(home), stderr: 'pipe' }));
    return c;
  };
  const names = async (c: Client): Promise<string[]> => (await c.listTools()).tools.map((t) => t.name);
  const call = async (c: Client, args: Record<string, unknown>): Promise<Result> => (await c.callTool({ name: 'create_issue', arguments: args })) as Result;
  /** What the daemon last listed (the catalog's tools and its own), as a session with it running saw it. */
  let listed: string[] = [];
  /** The stand-in's listing while the daemon is down: postern_status, then the remembered tools. */
  const standIn = (): string[] => ['postern_status', ...listed.filter((t) => t !== 'postern_status')];
  /** One session with the daemon running lists the tools (and the shim remembers them). */
  const listOnce = async (home: string): Promise<void> => {
    const c = await v2(home);
    try {
      listed = await names(c);
      assert.ok(listed.includes('create_issue'));
    } finally {
      await c.close();
    }
  };
  const assertNotRun = (r: Result, before: number): void => {
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.equal(r.structuredContent?.['error_code'], 'DAEMON_UNAVAILABLE');
    assert.equal(r.structuredContent?.['side_effect_started'], false);
    assert.match(r.content?.[0]?.text ?? '', /create_issue did not run, and the same call can be made once the daemon runs/);
    assert.equal(http.requests.length, before, 'nothing reached the target');
  };

  before(async () => {
    ({ http, inst } = await httpFixture({ token: TOKEN, catalog: (t) => ((targets = t), catalog([r1, r2])) }));
  });
  after(async () => {
    await inst.cleanup();
    await http.close();
  });

  /** A session of each official client over stdio: what the tests below do with it. */
  interface Session {
    names(): Promise<string[]>;
    call(args: Record<string, unknown>): Promise<Result>;
    close(): Promise<void>;
  }
  const sdks: { readonly title: string; readonly label: string; open(home: string): Promise<Session> }[] = [
    {
      title: 'SDK 2.x: listed once while the daemon ran; a session started while it is down lists the tools, a call waits for the daemon, the same call then runs',
      label: 'while down',
      open: async (home) => {
        const c = await v2(home);
        return { names: () => names(c), call: (args) => call(c, args), close: () => c.close() };
      },
    },
    {
      title: 'SDK 1.x: the same, through the client most hosts run',
      label: 'v1 while down',
      open: async (home) => {
        const c = new ClientV1({ name: 'remembering-v1', version: '1.0.0' });
        await c.connect(new StdioV1({ command: process.execPath, args: [CLI, 'mcp'], env: env(home), stderr: 'pipe' }));
        return {
          names: async () => (await c.listTools()).tools.map((t) => t.name),
          call: async (args) => (await c.callTool({ name: 'create_issue', arguments: args })) as Result,
          close: () => c.close(),
        };
      },
    },
  ];
  for (const sdk of sdks) {
    it(sdk.title, { timeout: 120_000 }, async () => {
      const home = await userHome();
      await listOnce(home);
      assert.ok(existsSync(memoryFile(home)));
      await inst.stopDaemon();
      const c = await sdk.open(home);
      try {
        assert.deepEqual(await c.names(), standIn());
        const before = http.requests.length;
        const args = { title: sdk.label, idempotency_key: key() };
        assertNotRun(await c.call(args), before);
        await inst.startDaemon();
        // The client does not list again (a host that lists once per session): the same call goes through.
        const r = await c.call(args);
        assert.equal(r.isError, undefined, JSON.stringify(r));
        assert.equal(http.requests.length, before + 1);
      } finally {
        await c.close();
      }
    });
  }

  it('2026-07-28: the stand-in listing holds the remembered tools and is not cacheable', { timeout: 120_000 }, async () => {
    const home = await userHome();
    await listOnce(home);
    await inst.stopDaemon();
    const c = await v2(home, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    try {
      const got = await c.listTools(undefined, { cacheMode: 'bypass' });
      assert.deepEqual(got.tools.map((t) => t.name), standIn());
      const before = http.requests.length;
      assertNotRun(await call(c, { title: 'modern while down', idempotency_key: key() }), before);
    } finally {
      await c.close();
      await inst.startDaemon();
    }
  });

  it('the catalog changed while the daemon was down: a call planned on the remembered revision is decided by its policy (reject → CONTRACT_STALE), nothing sent', { timeout: 120_000 }, async () => {
    const home = await userHome();
    await listOnce(home);
    await inst.stopDaemon();
    await inst.acceptCatalog(catalog([r1, r2, r3]));
    const c = await v2(home);
    try {
      assert.deepEqual(await names(c), standIn());
      await inst.startDaemon();
      const before = http.requests.length;
      const k = key();
      const r = await call(c, { title: 'planned on r2', idempotency_key: k });
      assert.equal(r.structuredContent?.['error_code'], 'CONTRACT_STALE', JSON.stringify(r));
      assert.equal(r.structuredContent?.['side_effect_started'], false);
      assert.equal(http.requests.length, before, 'nothing reached the target');
      const j = openJournals(join(inst.sb.home, 'journal'), { readonly: true });
      try {
        const [row] = j.activity.listCalls({ idempotency_key: k, limit: 10 });
        assert.equal(row?.call.revision_seen, 2, 'journaled as planned against the remembered r2');
      } finally {
        j.close();
      }
    } finally {
      await c.close();
    }
  });

  it('a damaged memory, or one listed from another socket, is not used: the stand-in alone', { timeout: 120_000 }, async () => {
    const home = await userHome();
    await listOnce(home);
    const file = memoryFile(home);
    const good = readFileSync(file, 'utf8');
    await inst.stopDaemon();
    try {
      for (const text of [good.slice(0, 40), good.replace(`"socket":${JSON.stringify(homePaths(inst.sb.home).agentSocket)}`, '"socket":"/elsewhere/agent.sock"')]) {
        assert.notEqual(text, good);
        await writeFile(file, text);
        const c = await v2(home);
        try {
          assert.deepEqual(await names(c), ['postern_status']);
        } finally {
          await c.close();
        }
      }
      // The control case: the intact memory is listed.
      await writeFile(file, good);
      const c = await v2(home);
      try {
        assert.deepEqual(await names(c), standIn());
      } finally {
        await c.close();
      }
    } finally {
      await inst.startDaemon();
    }
  });

  it('setup --write with the daemon running lists the tools once, so even the first session started while it is down has them', { timeout: 120_000 }, async () => {
    const down = await userHome();
    await inst.stopDaemon();
    const d = await inst.sb.run(['setup', 'codex', '--write'], { env: { HOME: down, POSTERN_LISTING_MEMORY: 'on' } });
    assert.equal(d.code, 0, d.stderr);
    assert.match(d.stdout, /the daemon is not running: a host started before any session has listed the tools sees only postern_status/);
    assert.ok(!existsSync(memoryFile(down)));
    await inst.startDaemon();
    const home = await userHome();
    const w = await inst.sb.run(['setup', 'codex', '--write'], { env: { HOME: home, POSTERN_LISTING_MEMORY: 'on' } });
    assert.equal(w.code, 0, w.stderr);
    assert.match(w.stdout, /remembered the \d+ tools the daemon lists/);
    const off = await inst.sb.run(['setup', 'codex', '--write', '--force'], { env: { HOME: await userHome() } });
    assert.match(off.stdout, /POSTERN_LISTING_MEMORY=off: the tools are not remembered/);
    await inst.stopDaemon();
    const c = await v2(home);
    try {
      assert.deepEqual(await names(c), standIn());
    } finally {
      await c.close();
      await inst.startDaemon();
    }
  });

  it('the canary token is in no remembered listing and in nothing printed', () => {
    const dirs = Array.from({ length: n }, (_, i) => join(inst.sb.dir, `user-${i + 1}`));
    const memories = dirs.map((h) => memoryFile(h)).filter((f) => existsSync(f));
    assert.ok(memories.length >= 4, String(memories.length));
    for (const f of memories) assert.ok(!readFileSync(f, 'utf8').includes(TOKEN), f);
    inst.sb.assertNeverPrinted(TOKEN, 'the bearer token');
  });
});
