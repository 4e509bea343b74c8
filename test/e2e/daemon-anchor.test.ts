// @subject time: the anchor and its checkpoints over time (run again a year ahead by .ci/run)
/**
 * The journal anchor end to end (THREATS 8–10, 15; DESIGN §12): the built CLI,
 * the real daemon, the official MCP client through `postern mcp`, and a
 * loopback HTTP service whose request log shows whether a completed key ever
 * reached it again. Each attack on the journal or the vault — at rest and
 * while the daemon runs — ends with a clear refusal and no second request.
 * Also: an outcome that cannot be journaled (another process holds the lock)
 * and an agent that goes away after the target answered. One installation for
 * the file (every vault KDF costs seconds); good state is restored from copies
 * taken at rest between the cases.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, linkSync, readFileSync, renameSync, rmSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import Database from 'better-sqlite3';
import type { Client } from '@modelcontextprotocol/client';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { waitFor } from '../helpers/wait.js';
import { entryHash, GENESIS_HASH } from '../../src/journal/chain.js';
import { CONTENT_COLUMNS } from '../../src/journal/activity-schema.js';
import { openJournals } from '../../src/journal/index.js';

const TOKEN = canary('anchor');
const LOCKER = resolve(import.meta.dirname, 'fixtures/journal-locker.ts');
type Result = { isError?: boolean; structuredContent?: Record<string, unknown>; content?: { type: string; text?: string }[] };
const newKey = (): string => `key-${randomBytes(8).toString('hex')}`;

const note = { type: 'object', properties: { title: { type: 'string', maxLength: 100 } }, required: ['title'] };
const write = (path: string) => ({ description: `A write to ${path}.`, effect: 'write', approval: 'none', revisions: [{ revision: 1, input: note, http: { target: 'local', method: 'POST', path, body: { title: '{title}' } } }] });

/** Rewrites entries with `mutate`, then re-chains every entry from `fromSeq` on, as an attacker with file access would. */
function rewriteAndRechain(dbPath: string, fromSeq: number, mutate: (db: Database.Database) => void): void {
  const db = new Database(dbPath);
  try {
    db.exec('DROP TRIGGER entries_no_update; DROP TRIGGER entries_no_delete;');
    mutate(db);
    const rows = db.prepare('SELECT * FROM entries WHERE seq >= ? ORDER BY seq').all(fromSeq) as Record<string, string | number | null>[];
    let prev = fromSeq === 1 ? GENESIS_HASH : String(db.prepare('SELECT hash FROM entries WHERE seq = ?').pluck().get(fromSeq - 1));
    const update = db.prepare('UPDATE entries SET prev_hash = ?, hash = ? WHERE seq = ?');
    for (const row of rows) {
      const content: Record<string, string | number | null> = {};
      for (const c of CONTENT_COLUMNS) content[c] = row[c] ?? null;
      const hash = entryHash(prev, content);
      update.run(prev, hash, row['seq']);
      prev = hash;
    }
  } finally {
    db.close();
  }
}

describe('daemon: the journal anchor', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agent: Client;
  let home: string;
  let journalDir: string;
  const done = newKey(); // completed before every attack
  const hits = (k: string): number => http.requests.filter((r) => r.headers.some(([n, v]) => n.toLowerCase() === 'idempotency-key' && v === k)).length;
  const call = async (name: string, args: Record<string, unknown>, c: Client = agent): Promise<Result> => (await c.callTool({ name, arguments: args })) as Result;
  const pass = (): string[] => ['--passphrase-file', inst.passFile];
  let answerLocked: (() => void) | undefined;
  let lockedArrived: (() => void) | undefined;
  let finishBody: (() => void) | undefined;

  const snap = (name: string): void => {
    const to = join(inst.sb.dir, `snap-${name}`);
    rmSync(to, { recursive: true, force: true });
    cpSync(journalDir, join(to, 'journal'), { recursive: true });
    cpSync(join(home, 'journal.anchor'), join(to, 'journal.anchor'));
    cpSync(join(home, 'journal.checkpoints.jsonl'), join(to, 'journal.checkpoints.jsonl'));
    cpSync(join(home, 'vault.pvlt'), join(to, 'vault.pvlt'));
  };
  // An older journal put back with its anchor is refused by the signed checkpoints: good state includes them.
  const restore = (name: string, what: ('journal' | 'journal.anchor' | 'journal.checkpoints.jsonl' | 'vault.pvlt' | 'activity.db' | 'sessions.db')[]): void => {
    const from = join(inst.sb.dir, `snap-${name}`);
    for (const w of what) {
      if (w === 'activity.db' || w === 'sessions.db') {
        for (const suffix of ['-wal', '-shm']) rmSync(join(journalDir, w + suffix), { force: true });
        cpSync(join(from, 'journal', w), join(journalDir, w));
      } else if (w === 'journal') {
        rmSync(journalDir, { recursive: true, force: true });
        cpSync(join(from, 'journal'), journalDir, { recursive: true });
      } else cpSync(join(from, w), join(home, w));
    }
  };
  /** Starts the daemon, expecting it to refuse with `code`; the completed key then reaches nothing. */
  const refusedStart = async (code: string, message: RegExp): Promise<void> => {
    const before = http.requests.length;
    await assert.rejects(inst.startDaemon(), (e: Error) => {
      assert.match(e.message, new RegExp(`daemon exited 1: [^]*postern: ${code}: `));
      assert.match(e.message, message);
      return true;
    });
    inst.daemon = null;
    const r = await call('quick_write', { title: 'done', idempotency_key: done });
    assert.equal(r.structuredContent?.['error_code'], 'DAEMON_UNAVAILABLE');
    assert.equal(http.requests.length, before, 'nothing reached the target');
    assert.equal(hits(done), 1, 'the completed key ran once, ever');
  };
  /** With the good state back, the completed key is a replay. */
  const replayed = async (): Promise<void> => {
    const r = await call('quick_write', { title: 'done', idempotency_key: done });
    assert.equal(r.structuredContent?.['replayed'], true, JSON.stringify(r));
    assert.equal(hits(done), 1);
  };

  before(async () => {
    ({ http, inst } = await httpFixture({
      token: TOKEN,
      routes: {
        '/locked': (_req, res) => {
          answerLocked = () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"locked":"answered"}');
          lockedArrived?.();
        },
        '/slow-body': (_req, res) => {
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.write('first part;');
          finishBody = () => res.end('second part');
        },
      },
      target: { idempotency_header: true },
      tools: { quick_write: write('/echo'), locked_write: write('/locked'), slow_write: write('/slow-body') },
    }));
    home = inst.sb.home;
    journalDir = join(home, 'journal');
    assert.match(inst.daemonLog, /new journal [0-9a-f-]+ anchored/);
    agent = await inst.client();
    const r = await call('quick_write', { title: 'done', idempotency_key: done });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(await inst.stopDaemon(), 0);
    snap('good');
  });

  after(async () => {
    inst.sb.assertNeverPrinted(TOKEN, 'the token');
    await inst.cleanup();
    await http.close();
  });

  it('at rest: activity.db deleted → refused (missing); put back → the key replays', async () => {
    unlinkSync(join(journalDir, 'activity.db'));
    await refusedStart('JOURNAL_ANCHOR_MISMATCH', /activity journal file is missing .*postern anchor new-journal/);
    assert.ok(!existsSync(join(journalDir, 'activity.db')), 'the refused start created no new journal file');
    restore('good', ['activity.db']);
    await inst.startDaemon();
    await replayed();
    assert.equal(await inst.stopDaemon(), 0);
    snap('good');
  });

  it('at rest: truncated to 0 bytes (activity, then sessions) → refused (empty)', async () => {
    for (const f of ['activity', 'sessions'] as const) {
      truncateSync(join(journalDir, `${f}.db`), 0);
      await refusedStart('JOURNAL_ANCHOR_MISMATCH', new RegExp(`${f} journal file is empty`));
      restore('good', [`${f}.db`]);
    }
  });

  it('at rest: the whole journal directory deleted → refused, not a silent new journal', async () => {
    rmSync(journalDir, { recursive: true });
    await refusedStart('JOURNAL_ANCHOR_MISMATCH', /journal file is missing/);
    restore('good', ['journal']);
  });

  it('at rest: an older copy of one journal, and of both → refused (rolled back)', async () => {
    // `done` is in the snapshot; a second key completes after it.
    await inst.startDaemon();
    const later = newKey();
    assert.equal((await call('quick_write', { title: 'later', idempotency_key: later })).isError, undefined);
    assert.equal(await inst.stopDaemon(), 0);
    snap('later');
    for (const what of [['activity.db'], ['sessions.db'], ['activity.db', 'sessions.db']] as const) {
      restore('good', [...what]);
      await refusedStart('JOURNAL_ANCHOR_MISMATCH', /ends at seq \d+ but the anchor records seq \d+: an older copy was put back/);
      restore('later', ['journal']);
    }
    // The older journal with the older anchor beside it, but the vault has moved on since: see the vault case.
    await inst.startDaemon();
    const r = await call('quick_write', { title: 'later', idempotency_key: later });
    assert.equal(r.structuredContent?.['replayed'], true);
    assert.equal(hits(later), 1, 'the later key ran once');
    assert.equal(await inst.stopDaemon(), 0);
    snap('good');
  });

  it('at rest: a journal from another home (same shape, other id) → refused (replaced)', async () => {
    const other = join(inst.sb.dir, 'other-journal');
    openJournals(other).close();
    for (const f of ['activity.db', 'sessions.db']) cpSync(join(other, f), join(journalDir, f));
    await refusedStart('JOURNAL_ANCHOR_MISMATCH', /is not the anchored one \(journal id .*it was replaced/);
    restore('good', ['journal']);
  });

  it("at rest: the key's entries rewritten and every later hash re-chained → refused (rewritten); audit verify finds it", async () => {
    const dbPath = join(journalDir, 'activity.db');
    const probe = new Database(dbPath, { readonly: true });
    const intentSeq = probe.prepare(`SELECT seq FROM entries WHERE kind = 'intent' AND idempotency_key = ?`).pluck().get(done) as number;
    probe.close();
    // Erase the key from history: another key on its entries, its claim gone — the chain and the claims still "verify".
    rewriteAndRechain(dbPath, intentSeq, (db) => {
      const other = newKey();
      db.prepare(`UPDATE entries SET idempotency_key = ?, claim = NULL, body = replace(body, ?, ?) WHERE idempotency_key = ? AND kind = 'intent'`).run(other, done, other, done);
      db.prepare(`UPDATE entries SET idempotency_key = ?, claim = NULL, body = replace(body, '"claim":"completed"', '"claim":null') WHERE idempotency_key = ? AND kind = 'outcome'`).run(other, done);
      db.prepare('DELETE FROM idempotency WHERE key = ?').run(done);
    });
    const v = await inst.sb.run(['audit', 'verify']);
    assert.equal(v.code, 1, v.stdout + v.stderr);
    assert.match(v.stdout, /sessions journal: ok/);
    assert.match(v.stdout, /activity journal: ok/, 'the keyless chain alone cannot see it');
    assert.match(v.stdout, /anchor: MISMATCH: the activity journal's entry \d+ is not the anchored one: entries were rewritten/);
    await refusedStart('JOURNAL_ANCHOR_MISMATCH', /entries were rewritten/);

    // The attacker also edits the anchor's heads to match: without the key its MAC no longer verifies.
    const anchorPath = join(home, 'journal.anchor');
    // (Two slots, one a line: the attacker takes the newest and writes it back alone, edited.)
    type Slot = { record: { counter: number; activity: { seq: number; hash: string } } };
    const slots = readFileSync(anchorPath, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Slot);
    const stored = slots.sort((a, b) => b.record.counter - a.record.counter)[0]!;
    const j = openJournals(journalDir, { readonly: true });
    stored.record.activity = j.facts().activity.head;
    j.close();
    writeFileSync(anchorPath, JSON.stringify(stored));
    const unkeyed = await inst.sb.run(['audit', 'verify']);
    assert.match(unkeyed.stdout, /anchor: ok: .*MAC not checked/, 'without the passphrase the anchor can only be compared by its heads');
    // ... but the signed checkpoint, which needs no passphrase to check, still holds the old head.
    assert.equal(unkeyed.code, 1, unkeyed.stdout);
    assert.match(unkeyed.stdout, /checkpoint: MISMATCH: the activity journal's entry \d+ is not the anchored one: entries were rewritten; against checkpoint #/);
    const keyed = await inst.sb.run(['audit', 'verify', '--unlock', ...pass()]);
    assert.equal(keyed.code, 1, keyed.stdout + keyed.stderr);
    assert.match(keyed.stdout, /anchor: MISMATCH: the anchor does not verify with this vault/);
    await refusedStart('JOURNAL_ANCHOR_MISMATCH', /anchor does not verify with this vault/);
    restore('good', ['journal', 'journal.anchor', 'journal.checkpoints.jsonl']);
  });

  it('at rest: the anchor deleted, or garbled → refused', async () => {
    const anchorPath = join(home, 'journal.anchor');
    unlinkSync(anchorPath);
    await refusedStart('JOURNAL_ANCHOR_MISMATCH', /journal exists but its anchor file is missing/);
    writeFileSync(anchorPath, '{"record":');
    await refusedStart('JOURNAL_ANCHOR_MISMATCH', /anchor file is malformed/);
    restore('good', ['journal.anchor']);
    await inst.startDaemon();
    await replayed();
  });

  it('while running: activity.db removed, replaced by an older copy, or emptied → every call fails closed, nothing is sent', async () => {
    // The daemon is running (previous case).
    const dbPath = join(journalDir, 'activity.db');
    const variants: { name: string; attack: () => void; undo: () => void; message: RegExp }[] = [
      { name: 'removed', attack: () => renameSync(dbPath, `${dbPath}.away`), undo: () => renameSync(`${dbPath}.away`, dbPath), message: /was removed while the daemon was running/ },
      {
        name: 'replaced',
        attack: () => {
          linkSync(dbPath, `${dbPath}.kept`);
          unlinkSync(dbPath);
          cpSync(join(inst.sb.dir, 'snap-good', 'journal', 'activity.db'), dbPath);
        },
        undo: () => renameSync(`${dbPath}.kept`, dbPath),
        message: /was replaced by another file/,
      },
    ];
    for (const v of variants) {
      v.attack();
      const before = http.requests.length;
      const fresh = await call('quick_write', { title: v.name, idempotency_key: newKey() });
      assert.equal(fresh.structuredContent?.['error_code'], 'JOURNAL_UNAVAILABLE', JSON.stringify(fresh));
      assert.match(String(fresh.structuredContent?.['message']), v.message);
      assert.equal(fresh.structuredContent?.['side_effect_started'], false);
      const again = await call('quick_write', { title: 'done', idempotency_key: done });
      assert.equal(again.structuredContent?.['error_code'], 'JOURNAL_UNAVAILABLE', 'the completed key is not looked up in a journal that is not the anchored one');
      assert.equal(http.requests.length, before, 'nothing sent');
      // Poisoned until restart: putting the file back does not make the daemon trust it again.
      v.undo();
      const still = await call('quick_write', { title: v.name, idempotency_key: newKey() });
      assert.equal(still.structuredContent?.['error_code'], 'JOURNAL_UNAVAILABLE');
      assert.equal(await inst.stopDaemon(), 0);
      await inst.startDaemon();
      await replayed();
    }
    // Emptied (truncated in place) while running.
    truncateSync(dbPath, 0);
    const before = http.requests.length;
    const r = await call('quick_write', { title: 'emptied', idempotency_key: newKey() });
    assert.equal(r.structuredContent?.['error_code'], 'JOURNAL_UNAVAILABLE', JSON.stringify(r));
    assert.equal((await call('quick_write', { title: 'done', idempotency_key: done })).structuredContent?.['error_code'], 'JOURNAL_UNAVAILABLE');
    assert.equal(http.requests.length, before);
    await inst.stopDaemon('SIGKILL');
    await refusedStart('JOURNAL_ANCHOR_MISMATCH', /journal/);
    restore('good', ['journal', 'journal.anchor', 'journal.checkpoints.jsonl']);
    await inst.startDaemon();
    await replayed();
  });

  it('an outcome blocked by another process holding the journal lock: retried; a same-key retry gets the result; told not durable', async () => {
    const locker = spawn(process.execPath, ['--import', 'tsx', LOCKER, join(journalDir, 'activity.db')], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = createInterface({ input: locker.stdout })[Symbol.asyncIterator]();
    const next = async (): Promise<string> => String((await lines.next()).value);
    try {
      assert.equal(await next(), 'ready');
      const k = newKey();
      const before = http.requests.length;
      const arrived = new Promise<void>((r) => (lockedArrived = r));
      const running = call('locked_write', { title: 'blocked outcome', idempotency_key: k });
      await arrived; // the intent is journaled and the request is at the target
      locker.stdin.write('lock\n');
      assert.equal(await next(), 'locked');
      answerLocked?.();
      const first = await running;
      assert.equal(first.isError, undefined, JSON.stringify(first));
      assert.equal(first.structuredContent?.['outcome_durable'], false, 'the agent is told');
      assert.match(first.content?.map((c) => c.text ?? '').join('\n') ?? '', /could not be journaled yet/);
      const retry = await call('locked_write', { title: 'blocked outcome', idempotency_key: k });
      assert.equal(retry.structuredContent?.['replayed'], true, `a replay, not CALL_IN_PROGRESS: ${JSON.stringify(retry)}`);
      assert.deepEqual(retry.structuredContent?.['body'], first.structuredContent?.['body']);
      const journaled = inst.daemonLog.length;
      locker.stdin.write('release\n');
      assert.equal(await next(), 'released');
      await waitFor(() => /journaled on retry/.test(inst.daemonLog.slice(journaled)), 'the outcome to be journaled');
      const status = await call('postern_call_status', { idempotency_key: k });
      assert.equal(status.structuredContent?.['status'], 'success');
      assert.equal(status.structuredContent?.['outcome_durable'], undefined);
      const later = await call('locked_write', { title: 'blocked outcome', idempotency_key: k });
      assert.equal(later.structuredContent?.['replayed'], true);
      assert.equal(later.structuredContent?.['outcome_durable'], undefined, 'durable now');
      assert.equal(http.requests.length, before + 1, 'one request in all');
    } finally {
      locker.stdin.end();
      await new Promise((r) => locker.once('exit', r));
    }
  });

  it('an agent that goes away after the target answered: the real outcome is journaled, not outcome_unknown', async () => {
    const leaving = await inst.client({ name: 'leaving-agent' });
    const k = newKey();
    const before = http.requests.length;
    const pending = call('slow_write', { title: 'bye', idempotency_key: k }, leaving).catch(() => undefined);
    await waitFor(() => http.requests.length === before + 1 && finishBody !== undefined, 'the request to arrive');
    await leaving.close();
    const view = () => {
      const j = openJournals(journalDir, { readonly: true });
      try {
        return j.activity.listCalls({ idempotency_key: k, limit: 5 });
      } finally {
        j.close();
      }
    };
    const sessionClosed = () => {
      const j = openJournals(journalDir, { readonly: true });
      try {
        return j.sessions.listSessions({ limit: 5 }).some((s) => s.client_name === 'leaving-agent' && s.ended_at !== null);
      } finally {
        j.close();
      }
    };
    await waitFor(sessionClosed, 'the daemon to see the agent go');
    finishBody?.();
    await pending;
    await waitFor(() => view().some((c) => c.outcome !== null), 'the outcome');
    const c = view().find((x) => x.outcome !== null)!;
    assert.equal(c.status, 'success', JSON.stringify(c.outcome));
    assert.equal(c.outcome?.response_status, 200);
    const r = await call('slow_write', { title: 'bye', idempotency_key: k });
    assert.equal(r.structuredContent?.['replayed'], true, JSON.stringify(r));
    assert.equal(http.requests.length, before + 1);
    assert.equal(await inst.stopDaemon(), 0);
    snap('good');
  });

  it('an older vault copy put back → refused (VAULT_ROLLED_BACK); doctor reports it; accept-vault lets it start, journaled', async () => {
    const older = join(inst.sb.dir, 'vault.older');
    cpSync(join(home, 'vault.pvlt'), older);
    const rotated = await inst.sb.run(['secret', 'rotate', 'api-token', '--stdin', ...pass()], { input: TOKEN });
    assert.equal(rotated.code, 0, rotated.stderr);
    await inst.startDaemon(); // the anchor now records the newer generation
    assert.equal(await inst.stopDaemon(), 0);
    cpSync(older, join(home, 'vault.pvlt'));
    await refusedStart('VAULT_ROLLED_BACK', /the vault is generation \d+, older than generation \d+ recorded in the journal anchor.*postern anchor accept-vault/);
    const doctor = await inst.sb.run(['doctor', '--unlock', '--json', ...pass()]);
    const findings = JSON.parse(doctor.stdout) as { status: string; check: string; detail: string }[];
    const f = findings.find((x) => x.check === 'journal anchor');
    assert.equal(f?.status, 'warning', doctor.stdout);
    assert.match(f?.detail ?? '', /older than generation \d+ in the anchor/);
    const status = await inst.sb.run(['anchor', 'status', ...pass()]);
    assert.equal(status.code, 1);
    const accepted = await inst.sb.run(['anchor', 'accept-vault', '--yes', ...pass()]);
    assert.equal(accepted.code, 0, accepted.stdout + accepted.stderr);
    assert.match(accepted.stdout, /accepted vault generation \d+/);
    await inst.startDaemon();
    await replayed();
    assert.equal(await inst.stopDaemon(), 0);
    const events = await inst.sb.run(['audit', 'session', '--daemon', '--json']);
    assert.ok((JSON.parse(events.stdout) as { type: string }[]).some((e) => e.type === 'vault_generation_accepted'), events.stdout);
  });

  it('anchor new-journal: the old journal is kept aside, the replacement is journaled, and the daemon starts', async () => {
    unlinkSync(join(journalDir, 'activity.db'));
    await refusedStart('JOURNAL_ANCHOR_MISMATCH', /missing/);
    const r = await inst.sb.run(['anchor', 'new-journal', '--yes', '--reason', 'activity.db lost', ...pass()]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /started journal [0-9a-f-]+; the old journal was moved to .*journal\.replaced-/);
    const status = await inst.sb.run(['anchor', 'status', ...pass()]);
    assert.equal(status.code, 0, status.stdout + status.stderr);
    await inst.startDaemon();
    const events = await inst.sb.run(['audit', 'session', '--daemon', '--json']);
    const started = (JSON.parse(events.stdout) as { type: string; data: Record<string, unknown> }[]).find((e) => e.type === 'journal_started');
    assert.equal(started?.data['reason'], 'activity.db lost');
    assert.equal(started?.data['previous_anchor'], 'authentic');
  });
});
