/**
 * The idempotency claims edited as a same-user agent would (THREATS 9, 15):
 * plain SQLite on `journal/activity.db`, no passphrase. The built CLI, the
 * real daemon, the official MCP client through `postern mcp`, and a loopback
 * HTTP service whose request log shows whether a completed key ever reached
 * it again. Every edit the daemon cannot prove harmless refuses the start
 * (JOURNAL_TAMPERED, with the way back); the completed key reaches the
 * target exactly once, whatever was edited; an honest journal starts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { cpSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Client } from '@modelcontextprotocol/client';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture, writeTool } from '../helpers/fixture.js';

const TOKEN = canary('claims');
type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };
const newKey = (): string => `key-${randomBytes(8).toString('hex')}`;

/** An edit of activity.db with plain SQLite, as the agent would make it. */
function edit(dbPath: string, sql: string, ...params: string[]): number {
  const db = new Database(dbPath);
  try {
    return db.prepare(sql).run(...params).changes;
  } finally {
    db.close();
  }
}

describe('daemon: the idempotency claims edited with plain SQLite', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agent: Client;
  let home: string;
  let journalDir: string;
  let activityDb: string;
  const done = newKey(); // completed before every edit
  const hits = (k: string): number => http.requests.filter((r) => r.headers.some(([n, v]) => n.toLowerCase() === 'idempotency-key' && v === k)).length;
  const call = async (args: Record<string, unknown>): Promise<Result> => (await agent.callTool({ name: 'quick_write', arguments: args })) as Result;
  const FILES = ['journal', 'journal.anchor', 'journal.checkpoints.jsonl', 'vault.pvlt'] as const;
  const snap = (): void => {
    const to = join(inst.sb.dir, 'snap-good');
    rmSync(to, { recursive: true, force: true });
    for (const f of FILES) cpSync(join(home, f), join(to, f), { recursive: true });
  };
  const restoreGood = (): void => {
    rmSync(journalDir, { recursive: true, force: true });
    for (const f of FILES) cpSync(join(inst.sb.dir, 'snap-good', f), join(home, f), { recursive: true });
  };
  /** The start is refused with JOURNAL_TAMPERED, a message and the way back; the completed keys reach nothing. */
  const refusedStart = async (message: RegExp, keys: readonly string[] = [done]): Promise<void> => {
    const before = http.requests.length;
    let error: Error | undefined;
    await inst.startDaemon().catch((e: Error) => (error = e));
    if (error === undefined) {
      // A daemon that starts on the edited journal: the completed keys run a second time.
      for (const k of keys) await call({ title: 'done', idempotency_key: k });
      await inst.stopDaemon();
      assert.fail(`the daemon started on the edited journal; the completed keys reached the target ${keys.map(hits).join(', ')} times`);
    }
    inst.daemon = null;
    assert.match(error.message, /daemon exited 1: [^]*postern: JOURNAL_TAMPERED: the activity journal was edited outside Postern/);
    assert.match(error.message, message);
    assert.match(error.message, /postern audit verify --unlock[^]*postern anchor restore-journal BACKUP[^]*postern anchor new-journal/);
    assert.doesNotMatch(error.message, /\n\s+at /, 'no stack trace');
    for (const k of keys) {
      const r = await call({ title: 'done', idempotency_key: k });
      assert.equal(r.structuredContent?.['error_code'], 'DAEMON_UNAVAILABLE');
      assert.equal(hits(k), 1, `the completed key ${k} ran once, ever`);
    }
    assert.equal(http.requests.length, before, 'nothing reached the target');
  };
  /** With the good journal back, the completed key is a replay. */
  const replayed = async (k = done, title = 'done'): Promise<void> => {
    await inst.startDaemon();
    const r = await call({ title, idempotency_key: k });
    assert.equal(r.structuredContent?.['replayed'], true, JSON.stringify(r));
    assert.equal(hits(k), 1);
    assert.equal(await inst.stopDaemon(), 0);
  };

  before(async () => {
    ({ http, inst } = await httpFixture({ token: TOKEN, target: { idempotency_header: true }, tools: { quick_write: writeTool('/echo') } }));
    home = inst.sb.home;
    journalDir = join(home, 'journal');
    activityDb = join(journalDir, 'activity.db');
    agent = await inst.client();
    const r = await call({ title: 'done', idempotency_key: done });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(hits(done), 1);
    assert.equal(await inst.stopDaemon(), 0);
    snap();
  });

  after(async () => {
    inst.sb.assertNeverPrinted(TOKEN, 'the token');
    await inst.cleanup();
    await http.close();
  });

  it('at rest: one claim row deleted → refused; the good journal back → the key replays', async () => {
    assert.equal(edit(activityDb, 'DELETE FROM idempotency WHERE key = ?', done), 1);
    await refusedStart(/1 claim row\(s\) removed/);
    restoreGood();
    await replayed();
  });

  it("at rest: the claim's args digest, or its state, updated → refused", async () => {
    for (const sql of [`UPDATE idempotency SET args_digest = '${'0'.repeat(64)}' WHERE key = ?`, `UPDATE idempotency SET state = 'in_progress', outcome_seq = NULL WHERE key = ?`]) {
      assert.equal(edit(activityDb, sql, done), 1);
      await refusedStart(/claim rows changed/);
      restoreGood();
    }
  });

  it('at rest: every claim row deleted, or the table dropped and made again empty → refused', async () => {
    assert.ok(edit(activityDb, 'DELETE FROM idempotency') >= 1);
    await refusedStart(/claim row\(s\) removed/);
    restoreGood();
    const db = new Database(activityDb);
    try {
      const ddl = String(db.prepare(`SELECT sql FROM sqlite_master WHERE name = 'idempotency'`).pluck().get());
      db.exec(`DROP TABLE idempotency; ${ddl};`);
    } finally {
      db.close();
    }
    await refusedStart(/claim row\(s\) removed/);
    restoreGood();
  });

  it('at rest: the claim row deleted, the intent entry made claimless and the verified point deleted → refused (the chain is walked whole)', async () => {
    const db = new Database(activityDb);
    try {
      db.exec('DROP TRIGGER entries_no_update;');
      db.prepare('DELETE FROM idempotency WHERE key = ?').run(done);
      assert.equal(db.prepare(`UPDATE entries SET claim = NULL WHERE idempotency_key = ? AND kind = 'intent'`).run(done).changes, 1);
    } finally {
      db.close();
    }
    unlinkSync(join(journalDir, 'claims.verified'));
    await refusedStart(/entry \d+ was changed/);
    restoreGood();
    // A forged verified point counts as none: the same edit is found by the whole walk.
    edit(activityDb, 'DELETE FROM idempotency WHERE key = ?', done);
    const forged = join(journalDir, 'claims.verified');
    writeFileSync(forged, readFileSync(forged, 'utf8').replace(/"rows":\d+/, '"rows":0'));
    await refusedStart(/does not match the chained entries/);
    restoreGood();
  });

  it('while running: a claim row deleted under the daemon → the key is refused, and after a restart too', async () => {
    await inst.startDaemon();
    const live = newKey();
    assert.equal((await call({ title: 'live', idempotency_key: live })).isError, undefined);
    assert.equal(edit(activityDb, 'DELETE FROM idempotency WHERE key = ?', live), 1);
    const again = await call({ title: 'live', idempotency_key: live });
    assert.equal(again.structuredContent?.['error_code'], 'JOURNAL_UNAVAILABLE', JSON.stringify(again));
    assert.equal(hits(live), 1);
    assert.equal(await inst.stopDaemon(), 0);
    assert.match(inst.sb.transcript.join(''), /the idempotency claims were not sealed at close/);
    await refusedStart(/does not match the chained entries/, [done, live]);
    restoreGood();
  });

  it('a key completed after a clean restart, its row deleted at rest → refused (proved from the verified point)', async () => {
    await inst.startDaemon();
    const later = newKey();
    assert.equal((await call({ title: 'later', idempotency_key: later })).isError, undefined);
    assert.equal(await inst.stopDaemon(), 0);
    // A kill leaves the verified point of the last start: the entries since are walked and cross-checked.
    await inst.startDaemon();
    const killed = newKey();
    assert.equal((await call({ title: 'killed', idempotency_key: killed })).isError, undefined);
    assert.equal(await inst.stopDaemon('SIGKILL'), null);
    edit(activityDb, 'DELETE FROM idempotency WHERE key = ?', killed);
    await refusedStart(/does not match the chained entries/, [done, later, killed]);
    restoreGood();
  });

  it('an honest journal of many calls, stopped cleanly or killed, starts and replays', async () => {
    await inst.startDaemon();
    const keys = Array.from({ length: 60 }, newKey);
    for (const k of keys) assert.equal((await call({ title: 'many', idempotency_key: k })).isError, undefined);
    assert.equal(await inst.stopDaemon('SIGKILL'), null);
    await inst.startDaemon();
    for (const k of keys.slice(0, 5)) assert.equal((await call({ title: 'many', idempotency_key: k })).structuredContent?.['replayed'], true);
    assert.equal(await inst.stopDaemon(), 0);
    await replayed(keys[59], 'many');
    for (const k of keys) assert.equal(hits(k), 1);
    snap();
  });
});
