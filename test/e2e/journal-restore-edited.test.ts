/**
 * A restore never trusts what it cannot prove, and never forgets what an
 * earlier restore decided — the attacks as they were found, through the built
 * CLI and a real daemon, with agents over stdio and over the HTTP listener,
 * against a loopback HTTP target that logs every request with its
 * Idempotency-Key:
 *
 * 1. The agent (no passphrase, plain SQLite) edits the entries after a
 *    backup's head in the current journal and re-chains them — keys renamed,
 *    rows removed and the journal padded back to its length, the arguments
 *    and the claim changed — or deletes, truncates or damages the file. The
 *    daemon refuses to start and says to restore; the operator restores as
 *    told. The edited rows never reach the anchored head's hash, so the gap
 *    is unread: the real keys are refused OUTCOME_UNKNOWN (no second request
 *    at the target, over either transport), every other unknown key too, and
 *    the operator is told so and how to release a key.
 * 2. What a restore decided outlives the journal it lived in: restore →
 *    restore, restore → release a key → restore (that key stays released, the
 *    others held), restore → new journal → restore.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { cpSync, readFileSync, rmSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startFakeHttp, type FakeHttpServer } from '../helpers/fake-http.js';
import { install, type Installation } from '../helpers/daemon.js';
import { catalogFor } from '../helpers/crash-harness.js';
import { damagePage } from '../helpers/journal-damage.js';
import { activityHead, rechainActivity, type Row } from '../helpers/journal-tamper.js';

const TOKEN = `CANARY-restore-edit-${randomBytes(12).toString('hex')}`;
type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };
const k = (name: string): string => `${name}-${randomBytes(6).toString('hex')}`;

/** One installation with a fake target, the HTTP listener authorized, and the calls the tests make. */
class Home {
  inst!: Installation;
  http!: FakeHttpServer;
  backups = 0;

  async setUp(): Promise<void> {
    this.http = await startFakeHttp();
    this.inst = await install({ secrets: [{ name: 'api-token', kind: 'http_bearer', value: TOKEN }] });
    await this.inst.acceptCatalog(catalogFor(this.http.origin, false, true));
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

/** What each edit of the journal after the backup's head does to its rows. */
const EDITS: Record<string, (rows: Row[]) => Row[]> = {
  'keys renamed and re-chained': (rows) => rows.map((r) => (r['idempotency_key'] === null ? r : { ...r, idempotency_key: `renamed-${String(r['idempotency_key'])}` })),
  'rows removed, the journal padded back to its length, re-chained': (rows) => {
    const kept = rows.filter((r) => r['idempotency_key'] === null);
    const filler = rows.filter((r) => r['idempotency_key'] !== null).map((r) => ({ ...r, call_id: randomUUID(), kind: 'rejected', idempotency_key: null, claim: null, error_code: 'INPUT_INVALID' }));
    return [...kept, ...filler];
  },
  'arguments and claim changed and re-chained': (rows) =>
    rows.map((r) => {
      if (r['kind'] !== 'intent') return r;
      const body = JSON.parse(String(r['body'])) as Record<string, unknown>;
      return { ...r, claim: null, body: JSON.stringify({ ...body, args: { title: 'something else' } }) };
    }),
};

describe('a restore proves what it reads of the journal it replaces: edited rows are never believed', () => {
  const home = new Home();
  before(() => home.setUp());
  after(() => home.tearDown());

  for (const [name, edit] of Object.entries(EDITS)) {
    it(`${name}: the daemon refuses, the restore reads the gap as unread, the real keys never run again`, async () => {
      const dir = home.backup();
      const from = activityHead(join(dir, 'activity.db'));
      const gap = [k('gap-a'), k('gap-b')];
      await home.runKeys(gap);
      rechainActivity(join(home.journal, 'activity.db'), from, edit);
      await home.refusesToStart();
      const out = await home.restore(dir);
      await home.refused([...gap, `renamed-${gap[0]!}`, k('unknown')]);
      for (const key of gap) assert.equal(home.hits(key), 1, `${key} ran once`);
      assert.match(out, /not all of the gap could be read and proved/);
      assert.match(out, /postern anchor release-key TOOL KEY/);
      await home.closeGap();
    });
  }

  const lost: Record<string, { spoil: (journal: string) => void; refusal: [string, RegExp] }> = {
    deleted: { spoil: (j) => rmSync(join(j, 'activity.db')), refusal: ['JOURNAL_ANCHOR_MISMATCH', /restore the journal/] },
    truncated: { spoil: (j) => truncateSync(join(j, 'activity.db'), 0), refusal: ['JOURNAL_ANCHOR_MISMATCH', /restore the journal/] },
    damaged: { spoil: (j) => void damagePage(join(j, 'activity.db'), 'entries-root'), refusal: ['JOURNAL_DAMAGED', /A damaged journal/] },
  };
  for (const [name, { spoil, refusal }] of Object.entries(lost)) {
    it(`the replaced journal ${name}: the gap is unread and its keys never run again`, async () => {
      const dir = home.backup();
      const gap = [k('gap-a'), k('gap-b')];
      await home.runKeys(gap);
      spoil(home.journal);
      await home.refusesToStart(...refusal);
      const out = await home.restore(dir);
      await home.refused([...gap, k('unknown')]);
      assert.match(out, /not all of the gap could be read/);
      await home.closeGap();
    });
  }

  it('an honest journal is still read whole: only the gap\'s own keys are refused, listed with the way to release them', async () => {
    const dir = home.backup();
    const gap = [k('gap-a'), k('gap-b')];
    await home.runKeys(gap);
    const out = await home.restore(dir);
    await home.refused(gap);
    assert.doesNotMatch(out, /not all of the gap could be read/);
    for (const key of gap) assert.match(out, new RegExp(`quick_write ${key}`));
    assert.match(out, /postern anchor release-key TOOL KEY/);
    const fresh = k('fresh');
    await home.runKeys([fresh]);
    await home.closeGap();
  });
});

describe('a gap outlives the journal it was journaled in', () => {
  const home = new Home();
  let backup = '';
  const gap = [k('gap-a'), k('gap-b'), k('gap-c')];
  before(async () => {
    await home.setUp();
    backup = home.backup();
    await home.runKeys(gap);
  });
  after(() => home.tearDown());

  it('restore → restore: the first gap\'s keys stay refused', async () => {
    await home.restore(backup);
    await home.refused(gap);
    const out = await home.restore(backup);
    await home.refused(gap);
    for (const key of gap) assert.equal(home.hits(key), 1);
    for (const key of gap) assert.match(out, new RegExp(`quick_write ${key}`), 'the second restore names the keys it still holds');
  });

  it('restore → release a key → restore: the released key stays released, the others refused', async () => {
    await home.release(gap[0]!);
    await home.restore(backup);
    await home.refused(gap.slice(1));
    await home.withDaemon(async (stdio) => assert.equal((await home.call(stdio, gap[0]!)).isError, undefined));
    assert.equal(home.hits(gap[0]!), 2, 'the operator released it, so it runs');
  });

  it('restore → new journal → restore: the held keys stay refused in the new journal and after its own restore', async () => {
    const r = await home.inst.sb.run(['anchor', 'new-journal', '--yes', ...home.pass()]);
    assert.equal(r.code, 0, r.stderr);
    await home.refused(gap.slice(1));
    const n1 = k('new-1');
    await home.runKeys([n1]);
    const second = home.backup();
    const n2 = k('new-2');
    await home.runKeys([n2]);
    await home.restore(second);
    await home.refused([...gap.slice(1), n2]);
    for (const key of [...gap.slice(1), n2]) assert.equal(home.hits(key), 1);
    await home.withDaemon(async (stdio) => assert.equal((await home.call(stdio, n1)).structuredContent?.['replayed'], true));
  });
});
