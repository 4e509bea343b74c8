/**
 * A home for the restore tests (test/e2e/journal-restore-*.test.ts): an
 * installation with a loopback HTTP target that logs every request with its
 * Idempotency-Key, the HTTP listener authorized, and the operator's and the
 * agents' steps — calls over stdio and over the HTTP listener, a backup of
 * the journal directory, `anchor restore-journal`, `release-key`,
 * `close-gap`. The token is a canary: it never appears in any output.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { cpSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { FakeHttpServer } from './fake-http.js';
import type { Installation } from './daemon.js';
import { crashTools } from './crash-harness.js';
import { canary, httpFixture } from './fixture.js';

const TOKEN = canary('restore-edit');
type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };
const k = (name: string): string => `${name}-${randomBytes(6).toString('hex')}`;

/** One installation with a fake target, the HTTP listener authorized, and the calls the tests make. */
export class Home {
  inst!: Installation;
  http!: FakeHttpServer;
  backups = 0;

  async setUp(): Promise<void> {
    ({ http: this.http, inst: this.inst } = await httpFixture({ token: TOKEN, tools: crashTools(false), target: { idempotency_header: true }, start: false }));
    const r = await this.inst.sb.run(['http', 'enable', '--port', '0', ...this.pass()]);
    assert.equal(r.code, 0, r.stderr);
    await this.runKeys([k('before')]);
  }

  async tearDown(): Promise<void> {
    this.inst.sb.assertNeverPrinted(TOKEN, 'the token');
    await this.inst.cleanup();
    await this.http.close();
  }

  pass(): string[] {
    return ['--passphrase-file', this.inst.passFile];
  }

  get journal(): string {
    return join(this.inst.sb.home, 'journal');
  }

  hits(key: string): number {
    return this.http.requests.filter((r) => r.headers.some(([n, v]) => n.toLowerCase() === 'idempotency-key' && v === key)).length;
  }

  /** A copy of the journal directory as it is now (daemon stopped). */
  backup(): string {
    const dir = join(this.inst.sb.dir, `journal-backup-${++this.backups}`);
    cpSync(this.journal, dir, { recursive: true });
    return dir;
  }

  /** A daemon started for `fn`, with an agent over stdio and one over the HTTP listener; stopped after. */
  async withDaemon<T>(fn: (stdio: Client, http: Client) => Promise<T>): Promise<T> {
    await this.inst.startDaemon();
    const stdio = await this.inst.client();
    const status = JSON.parse((await this.inst.sb.run(['http', 'status', '--json'])).stdout) as { running: { url: string; token_file: string } };
    const token = readFileSync(status.running.token_file, 'utf8').trim();
    const http = new Client({ name: 'agent-over-http', version: '1.0.0' });
    await http.connect(new StreamableHTTPClientTransport(new URL(status.running.url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    try {
      return await fn(stdio, http);
    } finally {
      await stdio.close();
      await http.close();
      assert.equal(await this.inst.stopDaemon(), 0);
    }
  }

  async call(agent: Client, key: string, title = `t ${key}`): Promise<Result> {
    return (await agent.callTool({ name: 'quick_write', arguments: { title, idempotency_key: key } })) as Result;
  }

  /** Runs each key once (it reaches the target once). */
  async runKeys(keys: readonly string[]): Promise<void> {
    await this.withDaemon(async (stdio, http) => {
      for (const [i, key] of keys.entries()) assert.equal((await this.call(i % 2 === 0 ? stdio : http, key)).isError, undefined);
    });
    for (const key of keys) assert.equal(this.hits(key), 1);
  }

  /** The daemon refuses to start, naming the journal and the way back. */
  async refusesToStart(code = 'JOURNAL_ANCHOR_MISMATCH', wayBack = /restore the journal/): Promise<void> {
    await assert.rejects(this.inst.startDaemon(), (e: Error) => {
      assert.match(e.message, new RegExp(code));
      assert.match(e.message, wayBack);
      return true;
    });
    this.inst.daemon = null;
  }

  async restore(dir: string): Promise<string> {
    const r = await this.inst.sb.run(['anchor', 'restore-journal', dir, '--yes', ...this.pass()]);
    assert.equal(r.code, 0, r.stderr);
    return r.stdout;
  }

  /** Each key is refused OUTCOME_UNKNOWN over both transports, and nothing more reaches the target. */
  async refused(keys: readonly string[]): Promise<void> {
    const before = this.http.requests.length;
    await this.withDaemon(async (stdio, http) => {
      for (const key of keys) {
        for (const agent of [stdio, http]) {
          const r = await this.call(agent, key);
          assert.equal(r.structuredContent?.['error_code'], 'OUTCOME_UNKNOWN', `${key}: ${JSON.stringify(r)}`);
          assert.equal(r.structuredContent?.['side_effect_started'], null);
          assert.match(String(r.structuredContent?.['message']), /postern anchor release-key/);
        }
      }
    });
    assert.equal(this.http.requests.length, before, 'nothing reached the target');
  }

  async closeGap(): Promise<void> {
    const r = await this.inst.sb.run(['anchor', 'close-gap', '--yes', '--reason', 'checked the targets', ...this.pass()]);
    assert.equal(r.code, 0, r.stderr);
  }

  async release(key: string): Promise<void> {
    const r = await this.inst.sb.run(['anchor', 'release-key', 'quick_write', key, '--reason', 'checked: not there', ...this.pass()]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /released key/);
  }
}

