/**
 * An outcome the journal refused because another process held its lock
 * (src/daemon/pipeline/pending-outcomes.ts), end to end with a real daemon
 * and kill -9: the daemon keeps it in a file before the agent is answered, so
 * a restart right after the lock is released — whether or not the background
 * retry got there first — shows the call's real outcome, not
 * `outcome_unknown`, and a retry with the key replays it without a second
 * request.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { Client } from '@modelcontextprotocol/client';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture, writeTool } from '../helpers/fixture.js';

const TOKEN = canary('pending');
const LOCKER = resolve(import.meta.dirname, 'fixtures/journal-locker.ts');
type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };

describe('daemon: an outcome the journal refused survives a restart', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let answer: (() => void) | undefined;
  let arrived: (() => void) | undefined;

  before(async () => {
    ({ http, inst } = await httpFixture({
      token: TOKEN,
      routes: {
        '/locked': (_req, res) => {
          answer = () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"done":"yes"}');
          arrived?.();
        },
      },
      target: { idempotency_header: true },
      tools: { locked_write: writeTool('/locked', 'A write.') },
      start: false,
    }));
  });

  after(async () => {
    inst.sb.assertNeverPrinted(TOKEN, 'the token');
    await inst.cleanup();
    await http.close();
  });

  it('kill -9 right after the lock is released → the next start journals the real outcome; the key replays', async () => {
    await inst.startDaemon();
    const agent: Client = await inst.client();
    const call = async (name: string, args: Record<string, unknown>): Promise<Result> => (await agent.callTool({ name, arguments: args })) as Result;
    const journalDir = join(inst.sb.home, 'journal');
    const locker = spawn(process.execPath, ['--import', 'tsx', LOCKER, join(journalDir, 'activity.db')], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = createInterface({ input: locker.stdout })[Symbol.asyncIterator]();
    const next = async (): Promise<string> => String((await lines.next()).value);
    const k = `key-${randomBytes(8).toString('hex')}`;
    try {
      assert.equal(await next(), 'ready');
      const at = new Promise<void>((r) => (arrived = r));
      const running = call('locked_write', { title: 'x', idempotency_key: k });
      await at; // the intent is journaled and anchored; the request is at the target
      locker.stdin.write('lock\n');
      assert.equal(await next(), 'locked');
      answer?.();
      const first = await running;
      assert.equal(first.isError, undefined, JSON.stringify(first));
      assert.equal(first.structuredContent?.['outcome_durable'], false);
      assert.ok(existsSync(join(journalDir, 'outcomes.pending.jsonl')), 'kept in a file before the agent was answered');
      locker.stdin.write('release\n');
      assert.equal(await next(), 'released');
    } finally {
      locker.stdin.end();
      await new Promise((r) => locker.once('exit', r));
    }
    await inst.stopDaemon('SIGKILL');
    await agent.close().catch(() => undefined);
    await inst.startDaemon();
    const again = await inst.client();
    const status = (await again.callTool({ name: 'postern_call_status', arguments: { idempotency_key: k } })) as Result;
    assert.equal(status.structuredContent?.['status'], 'success', JSON.stringify(status));
    const retry = (await again.callTool({ name: 'locked_write', arguments: { title: 'x', idempotency_key: k } })) as Result;
    assert.equal(retry.structuredContent?.['replayed'], true, JSON.stringify(retry));
    assert.equal(http.requests.length, 1, 'one request in all');
    assert.ok(!existsSync(join(journalDir, 'outcomes.pending.jsonl')), 'the file is gone once journaled');
    assert.equal(await inst.stopDaemon(), 0);
  });
});
