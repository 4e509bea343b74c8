/**
 * The journal anchor follows every vault save (THREATS 9, issue "integrity of
 * the operator's state"): a save by the CLI while no daemon runs is anchored
 * by the CLI at once, a save while the daemon runs is anchored when the
 * daemon adopts it. Either way, the copy of the vault from before the save,
 * put back, is refused at the next start (VAULT_ROLLED_BACK) and the
 * completed idempotency key reaches nothing. Built CLI, real daemon, the
 * official MCP client through `postern mcp`, a loopback HTTP service.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture, writeTool } from '../helpers/fixture.js';

const TOKEN = canary('anchor-vault');
type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };

describe('daemon: the journal anchor follows vault saves', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agent: Client;
  let home: string;
  const done = `key-${randomBytes(8).toString('hex')}`;
  const hits = (k: string): number => http.requests.filter((r) => r.headers.some(([n, v]) => n.toLowerCase() === 'idempotency-key' && v === k)).length;
  const call = async (args: Record<string, unknown>): Promise<Result> => (await agent.callTool({ name: 'quick_write', arguments: args })) as Result;
  const pass = (): string[] => ['--passphrase-file', inst.passFile];
  const refusedStart = async (code: string, message: RegExp): Promise<void> => {
    const before = http.requests.length;
    await assert.rejects(inst.startDaemon(), (e: Error) => {
      assert.match(e.message, new RegExp(`daemon exited 1: [^]*postern: ${code}: `));
      assert.match(e.message, message);
      return true;
    });
    inst.daemon = null;
    const r = await call({ title: 'done', idempotency_key: done });
    assert.equal(r.structuredContent?.['error_code'], 'DAEMON_UNAVAILABLE');
    assert.equal(http.requests.length, before, 'nothing reached the target');
  };
  const replayed = async (): Promise<void> => {
    const r = await call({ title: 'done', idempotency_key: done });
    assert.equal(r.structuredContent?.['replayed'], true, JSON.stringify(r));
    assert.equal(hits(done), 1);
  };

  before(async () => {
    ({ http, inst } = await httpFixture({ token: TOKEN, target: { idempotency_header: true }, tools: { quick_write: writeTool('/echo', 'A write.') } }));
    home = inst.sb.home;
    agent = await inst.client();
    const r = await call({ title: 'done', idempotency_key: done });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(await inst.stopDaemon(), 0);
  });

  after(async () => {
    inst.sb.assertNeverPrinted(TOKEN, 'the token');
    await inst.cleanup();
    await http.close();
  });

  it('a vault the CLI saves while no daemon runs is anchored at once: the copy from before that save is refused', async () => {
    const vault = join(home, 'vault.pvlt');
    const beforeSave = join(inst.sb.dir, 'vault.before-cli-save');
    cpSync(vault, beforeSave);
    const rotated = await inst.sb.run(['secret', 'rotate', 'api-token', '--stdin', ...pass()], { input: TOKEN });
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.doesNotMatch(rotated.stdout, /journal anchor did not record/);
    const afterSave = join(inst.sb.dir, 'vault.after-cli-save');
    cpSync(vault, afterSave);
    cpSync(beforeSave, vault); // no daemon ran since the save
    await refusedStart('VAULT_ROLLED_BACK', /the vault is generation \d+, older than generation \d+ recorded in the journal anchor/);
    cpSync(afterSave, vault);
    await inst.startDaemon();
    await replayed();
    assert.equal(await inst.stopDaemon(), 0);
  });

  it('a vault saved while the daemon runs is anchored when the daemon adopts it: the copy from before is refused', async () => {
    const vault = join(home, 'vault.pvlt');
    const beforeSave = join(inst.sb.dir, 'vault.before-live-save');
    cpSync(vault, beforeSave);
    await inst.startDaemon();
    const rotated = await inst.sb.run(['secret', 'rotate', 'api-token', '--stdin', ...pass()], { input: TOKEN });
    assert.equal(rotated.code, 0, rotated.stderr);
    await replayed(); // the daemon adopts the new generation before it serves a call
    assert.match(inst.daemonLog, /vault generation \d+ (adopted|in use)/); // the same token again: in use, no credential changed
    assert.equal(await inst.stopDaemon(), 0);
    const afterSave = join(inst.sb.dir, 'vault.after-live-save');
    cpSync(vault, afterSave);
    cpSync(beforeSave, vault);
    await refusedStart('VAULT_ROLLED_BACK', /older than generation \d+ recorded in the journal anchor/);
    cpSync(afterSave, vault);
    await inst.startDaemon();
    await replayed();
    assert.equal(await inst.stopDaemon(), 0);
  });
});
